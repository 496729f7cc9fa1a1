"""squared_l2_norm: the sum of squares of every element of every input, in one op.

Paddle's op of this name takes one X; here X is duplicable, so ClipGradByGlobalNorm
reads all the gradients in one pass (one op instead of a square and a reduce_sum per
gradient). The sum is accumulated in float64 and stored in X's dtype. Used by gradient
clipping only, so it has no gradient.
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)


@njit(nogil=True, cache=True)
def sq_sum_kernel(x, acc):
    s = 0.0
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        s += v * v
    acc[0] += s


@njit(nogil=True, cache=True)
def zero_kernel(acc):
    acc[0] = 0.0


@njit(nogil=True, cache=True)
def store_kernel(acc, out):
    out[0] = acc[0]


def _infer(ctx):
    xs = ctx.inputs("X")
    if not xs:
        raise ctx.error("X needs at least one input")
    dts = {x.dtype for x in xs}
    if len(dts) != 1 or next(iter(dts)).kind != "f":
        raise ctx.error(f"X must be float tensors of one dtype, got {sorted(map(str, dts))}")
    return {"Out": VarInfo((), xs[0].dtype)}


def _cpu(cop):
    def bind(ins, outs):
        acc = np.zeros(1, np.float64)
        calls = [functools.partial(zero_kernel, acc)]
        calls += [functools.partial(sq_sum_kernel, x.reshape(-1), acc) for x in ins["X"]]
        calls.append(functools.partial(store_kernel, acc, outs["Out"][0].reshape(1)))
        return functools.partial(run_calls, tuple(calls))
    return bind


def _gpu(cop):
    def bind(ins, outs):
        k = _gpu_kernels()
        acc = gpu_util.to_device(np.zeros(1, np.float64))
        calls = [gpu_util.fill_thunk(acc, 0.0)]
        for x in ins["X"]:
            flat = gpu_util.flat(x)
            calls.append(gpu_util.launch_flat(k.sq_sum, flat.size, flat, acc))
        calls.append(gpu_util.launch_flat(k.store, 1, acc, gpu_util.flat(outs["Out"][0])))
        return gpu_util.sequence(calls)
    return bind


@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def sq_sum(x, acc):
        # each thread sums its grid-stride share, then one atomic add per thread
        s = 0.0
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            v = np.float64(x[i])
            s += v * v
        cuda.atomic.add(acc, 0, s)

    @cuda.jit(cache=True)
    def store(acc, out):
        if cuda.grid(1) == 0:
            out[0] = acc[0]

    return gpu_util.Kernels(sq_sum=sq_sum, store=store)


register_op(OpDef("squared_l2_norm", (Slot("X", duplicable=True),), (Slot("Out"),), _infer,
                  _cpu, gpu=_gpu, traits=frozenset((NO_GRAD,)),
                  doc="Out = sum over every X[i] of sum(X[i] ** 2) (0-D, X's dtype)"))
