"""Where a Plan's buffers live and how its kernels are bound: host memory (CPU kernels)
or CUDA device memory (GPU kernels). The Plan itself is the same for both.
"""
import contextlib
import logging

import numpy as np

from ..kernels.gpu.host_staged import host_staged
from ..kernels.registry import may_fail

log = logging.getLogger("numbaflow")


_NO_CONTEXT = contextlib.nullcontext()     # reusable: the host has no device to make current


class HostBackend:
    name = "cpu"
    defers_errors = False    # kernels raise where they fail

    def activate(self):
        return _NO_CONTEXT

    def check_errors(self, ops):
        pass

    def empty(self, shape, dtype):
        return np.empty(shape, dtype)

    def view(self, buf, shape, dtype, offset=0):
        """`buf` (a pooled uint8 buffer) from byte `offset` on, seen as a C-contiguous
        array of shape/dtype."""
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return buf[offset:offset + n].view(dtype).reshape(shape)

    def scope_array(self, scope, name):
        return scope.array(name)

    def ensure(self, scope, name, shape, dtype):
        return scope.ensure(name, shape, dtype)

    def binder(self, opdef, cop):
        """The op's kernel specialised to `cop`: binder(ins, outs) -> thunk."""
        return opdef.cpu(cop)

    def copy_in(self, dst, host):
        np.copyto(dst, host)

    def copy(self, dst, src):
        np.copyto(dst, src)

    def to_host(self, buf):
        return buf.copy()

    def before_run(self, scope, names):
        scope.sync_to_host(names)

    def after_run(self, scope, written):
        scope.wrote_on_host(written)


class CudaBackend:
    """Device-resident execution on GPU `device_id`: feeds are copied in and fetches out
    once per run; persistables stay on the device between runs (the Scope keeps the
    device copies). Kernels cannot raise: those meeting bad data record it on the device
    and `check_errors` raises it once per run, before the run's results are kept."""
    name = "gpu"
    defers_errors = True

    def __init__(self, device_id=0):
        from numba import cuda
        self.cuda = cuda
        self.device_id = device_id
        self._may_fail = {}     # id(ops) -> whether any op of that list can fail

    def activate(self):
        """Context manager: this place's device is current in the calling thread (its
        buffers are allocated and its kernels launched there)."""
        return self.cuda.gpus[self.device_id]

    def check_errors(self, ops):
        """Raise the first bad-data failure a kernel recorded on this device during the
        run (ValueError with the CPU kernel's message; `failed_op` is the op), reading
        the record only when an op of `ops` can fail: one 32-byte copy per run."""
        key = id(ops)
        if key not in self._may_fail:
            self._may_fail[key] = any(may_fail(op) for op in ops)
        if not self._may_fail[key]:
            return
        from ..kernels.gpu.gpu_errors import DeviceError, raise_device_error
        try:
            raise_device_error()
        except DeviceError as e:
            err = (ZeroDivisionError if isinstance(e, ZeroDivisionError) else ValueError)(str(e))
            err.failed_op = next((op for op in ops if op.type == e.op_type), None)
            raise err from None

    def empty(self, shape, dtype):
        return self.cuda.device_array(shape, dtype)

    def view(self, buf, shape, dtype, offset=0):
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return buf[offset:offset + n].view(dtype).reshape(shape)

    def scope_array(self, scope, name):
        return scope.device_array(name, self.device_id)

    def ensure(self, scope, name, shape, dtype):
        return scope.ensure_device(name, shape, dtype, self.device_id)

    def binder(self, opdef, cop):
        if opdef.gpu is not None:
            return opdef.gpu(cop)
        log.debug("op %s has no GPU kernel yet: running its CPU kernel with copies", cop.type)
        return lambda ins, outs: _host_fallback(opdef, cop, ins, outs)

    def copy_in(self, dst, host):
        dst.copy_to_device(host)

    def copy(self, dst, src):
        dst.copy_to_device(src)

    def to_host(self, buf):
        return buf.copy_to_host()

    def before_run(self, scope, names):
        pass            # device copies are never older than the host's (Scope.set uploads)

    def after_run(self, scope, written):
        scope.wrote_on_device(written)


def _host_fallback(opdef, cop, ins, outs):
    """An op without a GPU kernel: its CPU kernel on host copies of its arrays (correct,
    slow; the GPU op list says which ops still do this)."""
    return host_staged(opdef.cpu(cop), ins, outs)


def backend_for(place):
    from .place import CUDAPlace
    if isinstance(place, CUDAPlace):
        return CudaBackend(place.device_id)
    return HostBackend()
