"""Collective ops: how the replicas of a data-parallel program exchange gradients.

They are inserted by the `multi_devices` pass (distributed/rewrite.py), never by
layers. Their kernels are host-side work — they wait for the other devices — so a
compiled segment is cut at each of them. The executor gives each device's kernels its
communicator endpoint as `cop.comm` (distributed/collective_group.py); without one (a
single-device run) they do nothing.
"""
import functools

import numpy as np

from ..gpu.host_staged import host_staged
from ..registry import COLLECTIVE, FLAT_INPUTS, NO_GRAD, OpDef, Slot, VarInfo, register_op, sequence


def _same_as_x(ctx):
    return {"Out": ctx.inputs("X")}


def _copies(ins, outs):
    """Steps copying X[k] into Out[k] where they are different arrays (the pass makes
    Out the same variable as X, so normally there are none)."""
    return [functools.partial(np.copyto, o, x) for x, o in zip(ins["X"], outs["Out"])
            if not np.shares_memory(x, o)]


def flat_view(arrays):
    """One 1-D array over `arrays` when the executor laid them out back to back in one
    buffer (a coalesced gradient bucket), else None."""
    if len(arrays) < 2 or len({a.dtype for a in arrays}) != 1:
        return None
    root = arrays[0]
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.ndim != 1 or not root.flags.c_contiguous:
        return None
    start = arrays[0].ctypes.data - root.ctypes.data
    end = start
    for a in arrays:
        if not a.flags.c_contiguous or a.ctypes.data - root.ctypes.data != end:
            return None
        end += a.nbytes
    if root.dtype != np.uint8 or end > root.nbytes:
        return None
    return root[start:end].view(arrays[0].dtype)


def _allreduce_cpu(cop):
    def bind(ins, outs):
        steps = _copies(ins, outs)
        if cop.comm is not None:       # one device alone: the sum is X itself
            steps.append(functools.partial(cop.comm.allreduce_, tuple(outs["Out"]),
                                           cop.attrs["bucket"], flat_view(outs["Out"])))
        return sequence(steps) if steps else _noop
    return bind


def _start_infer(ctx):
    return {"Token": VarInfo((), np.dtype(np.int64))}


def _wait_infer(ctx):
    return {"Out": ctx.inputs("X")}


def _start_cpu(cop):
    def bind(ins, outs):
        # the token only orders the wait after the start; its value is always 0
        steps = [functools.partial(np.copyto, outs["Token"][0], 0)]
        if cop.comm is not None:
            steps.append(functools.partial(cop.comm.allreduce_start_, tuple(ins["X"]),
                                           cop.attrs["bucket"], flat_view(ins["X"]),
                                           cop.attrs["overlap"]))
        return sequence(steps)
    return bind


def _wait_cpu(cop):
    def bind(ins, outs):
        steps = []
        if cop.comm is not None:       # the sum lands in device 0's X, then in every Out
            steps.append(functools.partial(cop.comm.allreduce_wait_, tuple(ins["X"]),
                                           tuple(outs["Out"]), cop.attrs["bucket"]))
        else:
            steps = _copies(ins, outs)
        return sequence(steps) if steps else _noop
    return bind


def _start_gpu(cop):
    # on a GPU the bucket is summed synchronously by the wait (through host copies)
    def bind(ins, outs):
        # a copy, not a kernel: collectives run outside the device lock
        zero = np.zeros((), np.int64)
        return functools.partial(outs["Token"][0].copy_to_device, zero)
    return bind


def _wait_gpu(cop):
    return _via_host(_allreduce_cpu)(cop)


def _broadcast_cpu(cop):
    def bind(ins, outs):
        steps = _copies(ins, outs)
        if cop.comm is not None:
            steps.append(functools.partial(cop.comm.broadcast_, tuple(outs["Out"]),
                                           cop.attrs["root"], cop.attrs["bucket"]))
        return sequence(steps) if steps else _noop
    return bind


def _noop():
    pass


def _via_host(cpu_factory):
    """GPU kernel factory: the CPU kernel on host copies of the device arrays (the
    communicator works on host memory)."""
    return lambda cop: lambda ins, outs: host_staged(cpu_factory(cop), ins, outs)


register_op(OpDef(
    "c_allreduce_sum", (Slot("X", duplicable=True),), (Slot("Out", duplicable=True),),
    _same_as_x, _allreduce_cpu, gpu=_via_host(_allreduce_cpu), attrs={"bucket": 0},
    inplace={"Out": "X"}, traits=frozenset({COLLECTIVE, NO_GRAD, FLAT_INPUTS}),
    doc="Out[k] = the sum of X[k] over every device and rank, in place (Out is X). All "
        "tensors of one op move as one bucket (one MPI call); `bucket` numbers it."))

register_op(OpDef(
    "c_allreduce_start", (Slot("X", duplicable=True),), (Slot("Token"),),
    _start_infer, _start_cpu, gpu=_start_gpu, attrs={"bucket": 0, "overlap": True},
    traits=frozenset({COLLECTIVE, NO_GRAD, FLAT_INPUTS}),
    doc="Starts summing the bucket X over every device and rank and returns at once (the "
        "MPI call runs on the group's communication thread); `c_allreduce_wait` with the "
        "same bucket, later in the program, finishes it. X must not change in between. "
        "`overlap=False` (no op runs before the wait) makes the MPI call at once instead."))

register_op(OpDef(
    "c_allreduce_wait", (Slot("X", duplicable=True), Slot("Token")),
    (Slot("Out", duplicable=True),), _wait_infer, _wait_cpu, gpu=_wait_gpu,
    attrs={"bucket": 0}, inplace={"Out": "X"}, traits=frozenset({COLLECTIVE, NO_GRAD}),
    doc="Out[k] = the sum of X[k] over every device and rank, once the bucket's "
        "c_allreduce_start (Token) has completed."))

register_op(OpDef(
    "c_broadcast", (Slot("X", duplicable=True),), (Slot("Out", duplicable=True),),
    _same_as_x, _broadcast_cpu, gpu=_via_host(_broadcast_cpu),
    attrs={"root": 0, "bucket": 0},
    inplace={"Out": "X"}, traits=frozenset({COLLECTIVE, NO_GRAD}),
    doc="Out[k] = X[k] of device `root` (global device index), in place, on every device."))
