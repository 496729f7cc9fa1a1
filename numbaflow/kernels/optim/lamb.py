"""The lamb optimizer op (Paddle 2.x's update rule). Not elementwise: the step of every
element is scaled by the layer-wise trust ratio ||param|| / ||r||, two norms over the
whole parameter.

    m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
    r = (m / (1 - Beta1Pow)) / (sqrt(v / (1 - Beta2Pow)) + epsilon) + weight_decay * param
    param -= lr * (||param|| / ||r|| if both norms > 0 else 1) * r

Beta1Pow / Beta2Pow are advanced by separate scale ops after the update (as for adam).
The CPU kernel is one njit pass for the moments, r and both norms (float64 sums) and one
for the parameter; the GPU runs the same as three launches: moments and r (grid-stride),
the two norms (one block, shared-memory tree of a compile-time size), the update.
"""
import functools
import math

import numpy as np
from numba import float64, njit

from ..gpu import gpu_util
from ..registry import NO_GRAD, OPTIMIZER, OpDef, Slot, register_op, sequence

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)
NORM_THREADS = gpu_util.RED_THREADS


@njit(nogil=True, cache=True)
def lamb_kernel(p, g, lr, m1, m2, b1p, b2p, r, b1, b2, eps, wd):
    c1, c2 = 1.0 - b1p[0], 1.0 - b2p[0]
    pn = 0.0
    rn = 0.0
    for i in range(p.size):
        m = b1 * m1[i] + (1.0 - b1) * g[i]
        v = b2 * m2[i] + (1.0 - b2) * g[i] * g[i]
        m1[i] = m
        m2[i] = v
        ri = (m / c1) / (math.sqrt(v / c2) + eps) + wd * p[i]
        r[i] = ri
        pn += float(p[i]) * float(p[i])
        rn += ri * ri
    ratio = math.sqrt(pn) / math.sqrt(rn) if pn > 0.0 and rn > 0.0 else 1.0
    step = lr[0] * ratio
    for i in range(p.size):
        p[i] = p[i] - step * r[i]


def _infer(ctx):
    p = ctx.input("Param")
    for slot in ("Grad", "Moment1", "Moment2"):
        other = ctx.input(slot)
        if tuple(other.shape) != tuple(p.shape):
            raise ctx.error(f"{slot} {ctx.name(slot)} has shape {tuple(other.shape)} but Param "
                            f"{ctx.name('Param')} has {tuple(p.shape)}")
    return {"ParamOut": p, "Moment1Out": p, "Moment2Out": p}


def _attrs(cop):
    a = cop.attrs
    return float(a["beta1"]), float(a["beta2"]), float(a["epsilon"]), float(a["weight_decay"])


def _arrays(ins, outs):
    """Flat views (p, m1, m2 are the outputs, written in place), grad, lr, beta pows, and
    the (output, input) pairs that are separate buffers (copied in first)."""
    def flat(a):
        return a.reshape(a.size)
    pairs = [(outs[o][0], ins[i][0]) for o, i in (("ParamOut", "Param"),
                                                  ("Moment1Out", "Moment1"),
                                                  ("Moment2Out", "Moment2"))]
    copies = [(flat(o), flat(i)) for o, i in pairs if o is not i]
    p, m1, m2 = (flat(o) for o, _ in pairs)
    return (p, m1, m2, flat(ins["Grad"][0]), flat(ins["LearningRate"][0]),
            flat(ins["Beta1Pow"][0]), flat(ins["Beta2Pow"][0]), copies)


def _cpu(cop):
    b1, b2, eps, wd = _attrs(cop)

    def bind(ins, outs):
        p, m1, m2, g, lr, b1p, b2p, copies = _arrays(ins, outs)
        r = np.empty(p.shape, p.dtype)
        calls = [functools.partial(np.copyto, dst, src) for dst, src in copies]
        calls.append(functools.partial(lamb_kernel, p, g, lr, m1, m2, b1p, b2p, r, b1, b2,
                                       eps, wd))
        return sequence(calls)
    return bind


@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda
    T = NORM_THREADS

    @cuda.jit(cache=True)
    def moments(p, g, m1, m2, b1p, b2p, r, b1, b2, eps, wd):
        c1, c2 = 1.0 - b1p[0], 1.0 - b2p[0]
        for i in range(cuda.grid(1), p.size, cuda.gridsize(1)):
            m = b1 * m1[i] + (1.0 - b1) * g[i]
            v = b2 * m2[i] + (1.0 - b2) * g[i] * g[i]
            m1[i] = m
            m2[i] = v
            r[i] = (m / c1) / (math.sqrt(v / c2) + eps) + wd * p[i]

    @cuda.jit(cache=True)
    def norms(p, r, out):
        # one block: per-thread partial sums, then a shared-memory tree (blockDim.x == T)
        sp = cuda.shared.array(T, float64)
        sr = cuda.shared.array(T, float64)
        tid = cuda.threadIdx.x
        a = 0.0
        b = 0.0
        for i in range(tid, p.size, T):
            a += float(p[i]) * float(p[i])
            b += float(r[i]) * float(r[i])
        sp[tid] = a
        sr[tid] = b
        cuda.syncthreads()
        s = T // 2
        while s > 0:
            if tid < s:
                sp[tid] += sp[tid + s]
                sr[tid] += sr[tid + s]
            cuda.syncthreads()
            s //= 2
        if tid == 0:
            out[0] = sp[0]
            out[1] = sr[0]

    @cuda.jit(cache=True)
    def update(p, r, lr, sums):
        ratio = 1.0
        if sums[0] > 0.0 and sums[1] > 0.0:
            ratio = math.sqrt(sums[0]) / math.sqrt(sums[1])
        step = lr[0] * ratio
        for i in range(cuda.grid(1), p.size, cuda.gridsize(1)):
            p[i] = p[i] - step * r[i]

    return gpu_util.Kernels(moments=moments, norms=norms, update=update)


def _gpu(cop):
    b1, b2, eps, wd = _attrs(cop)

    def bind(ins, outs):
        p, m1, m2, g, lr, b1p, b2p, copies = _arrays(ins, outs)
        from numba import cuda as _cuda
        r = _cuda.device_array(p.shape, p.dtype)
        sums = _cuda.device_array(2, np.float64)
        k = _gpu_kernels()
        calls = [gpu_util.copy_thunk(src, dst) for dst, src in copies]
        calls += [gpu_util.launch_flat(k.moments, p.size, p, g, m1, m2, b1p, b2p, r, b1, b2,
                                       eps, wd),
                  functools.partial(gpu_util.configured(k.norms, 1, NORM_THREADS), p, r, sums),
                  gpu_util.launch_flat(k.update, p.size, p, r, lr, sums)]
        return gpu_util.sequence(calls)
    return bind


register_op(OpDef(
    "lamb", (Slot("Param"), Slot("Grad"), Slot("LearningRate"), Slot("Moment1"),
             Slot("Moment2"), Slot("Beta1Pow"), Slot("Beta2Pow")),
    (Slot("ParamOut"), Slot("Moment1Out"), Slot("Moment2Out")), _infer, _cpu, gpu=_gpu,
    attrs={"weight_decay": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6},
    inplace={"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2"},
    traits=frozenset((OPTIMIZER, NO_GRAD)),
    doc="LAMB: Adam's bias-corrected direction plus weight_decay * Param, scaled by the "
        "trust ratio ||Param|| / ||direction||"))
