"""A stand-in for numba-cuda's device layer, for compiling and inspecting GPU kernels on a
machine without a GPU (numbaflow.gpu_check and its tests).

`traced_device` replaces device arrays by host arrays (`TracedArray`) and records every
kernel launch (dispatcher, argument types, block size, current device) instead of running
it, so kernel factories, plans and whole programs on CUDAPlace(i) can be driven at real
sizes for free. `compute_capability` answers numba-cuda's question about the current
device when it compiles a kernel that calls device functions.
"""
import contextlib
import sys
import threading
import types as _pytypes

import numpy as np


_state = None      # the active trace's TraceState (set by traced_device)


def _check_device(arr, what):
    """Note an access to `arr` while another (fake) GPU than the one holding it is current."""
    if _state is not None and arr.device is not None and arr.device != _state.current():
        _state.misplaced.append(f"{what} of an array on GPU {arr.device} while GPU "
                                f"{_state.current()} is current")


class TracedArray(np.ndarray):
    """A host array standing in for a device array while tracing; `device` is the fake
    GPU that was current when it was allocated (views inherit it)."""
    device = None

    def __array_finalize__(self, obj):
        self.device = getattr(obj, "device", None)

    def copy_to_device(self, src, stream=0):
        _check_device(self, "copy_to_device")
        if isinstance(src, TracedArray):
            _check_device(src, "device-to-device copy")
        np.copyto(self, np.asarray(src).reshape(self.shape))

    def copy_to_host(self, ary=None, stream=0):
        _check_device(self, "copy_to_host")
        if ary is None:
            return np.array(self).view(np.ndarray)
        np.copyto(ary, self)
        return ary


class _Recorder:
    def __init__(self, state, kernel, blockdim):
        self.state, self.kernel = state, kernel
        dims = blockdim if isinstance(blockdim, tuple) else (blockdim,)
        threads = int(np.prod(dims))
        # the largest block it is launched with: --ptxas checks its registers fit
        kernel.nf_block_threads = max(getattr(kernel, "nf_block_threads", 0), threads)

    def __call__(self, *args):
        from numba import typeof
        from numba.core.typing.typeof import Purpose
        for a in args:
            for x in (a if isinstance(a, tuple) else (a,)):
                if isinstance(x, TracedArray):
                    _check_device(x, f"launch of {self.kernel.py_func.__name__}")
        self.state.launches.append((self.kernel, tuple(typeof(a, Purpose.argument)
                                                       for a in args)))
        self.state.launch_devices.append(self.state.current())


class _FakeDevice:
    """cuda.gpus[i]: entering makes device i current (a stack, like CUDA contexts)."""

    def __init__(self, state, i):
        self.state, self.id = state, i

    def __enter__(self):
        self.state.stack.append(self.id)
        return self

    def __exit__(self, *exc):
        self.state.stack.pop()
        return False


class TraceState:
    """What a trace saw: `launches` [(dispatcher, argtypes)], per launch the device that
    was current (`launch_devices`), and `misplaced`: accesses (launches, copies) to an
    array while a GPU other than its own was current."""

    def __init__(self, launches):
        self.launches, self.launch_devices, self.misplaced = launches, [], []
        self._local = threading.local()     # like CUDA contexts: current per thread

    @property
    def stack(self):
        """This thread's stack of entered devices (`cuda.gpus[i]` blocks)."""
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def current(self):
        stack = self.stack
        return stack[-1] if stack else 0


@contextlib.contextmanager
def traced_device(launches, n_gpus=1):
    """Inside: numba.cuda allocates host `TracedArray`s, `n_gpus` fake GPUs are visible
    and kernel launches append (dispatcher, argument types) to `launches` instead of
    running. Yields the TraceState."""
    from numba import config, cuda
    from numba.cuda.dispatcher import CUDADispatcher
    if config.ENABLE_CUDASIM:
        raise RuntimeError("gpu_check compiles for a real GPU: unset NUMBA_ENABLE_CUDASIM")
    from .executor import place
    from .kernels.gpu import gpu_errors
    state = TraceState(launches)

    def to_device(a, stream=0, copy=True, to=None):
        a = np.ascontiguousarray(a)
        if to is not None:
            to.copy_to_device(a)
            return to
        out = np.array(a).view(TracedArray)
        out.device = state.current()
        return out

    def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
        out = np.zeros(shape, dtype).view(TracedArray)
        out.device = state.current()
        return out

    def device_problem(i):
        return None if i < n_gpus else f"device index {i} is out of range: {n_gpus} GPU(s)"

    patches = [(cuda, "to_device", to_device), (cuda, "device_array", device_array),
               (cuda, "is_available", lambda: True),
               (cuda, "gpus", [_FakeDevice(state, i) for i in range(n_gpus)]),
               (CUDADispatcher, "configure",
                lambda self, griddim, blockdim, stream=0, sharedmem=0:
                _Recorder(state, self, blockdim)),
               (place, "_device_problem", device_problem),
               (gpu_errors, "_device_key", state.current),
               (gpu_errors, "_error_records", {}),
               (sys.modules[__name__], "_state", state)]
    saved = [(obj, name, obj.__dict__.get(name, getattr(obj, name))) for obj, name, _ in patches]
    try:
        for obj, name, value in patches:
            setattr(obj, name, value)
        yield state
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)


@contextlib.contextmanager
def compute_capability(cc):
    """numba-cuda asks the current device for its compute capability when a kernel calls
    a device function: answer `cc` (there is no device)."""
    import numba.cuda.compiler as compiler
    import numba.cuda.dispatcher as dispatcher
    dev = _pytypes.SimpleNamespace(compute_capability=tuple(cc), id=0)
    saved = [(m, m.get_current_device) for m in (compiler, dispatcher)]
    try:
        for m, _ in saved:
            m.get_current_device = lambda: dev
        yield
    finally:
        for m, f in saved:
            m.get_current_device = f
