"""`group_norm` and `instance_norm` (Paddle's ops) and their gradients: one family, since
instance norm is group norm with one channel per group.

X (N, C, *spatial) (group_norm also NHWC: channels last) is viewed as (N, G, C/G, S); each
(n, g) block is normalised by its own mean and biased variance, then channel c is scaled
by Scale[c] and shifted by Bias[c] (both optional: 1 and 0). Outputs besides Y, as Paddle:
group_norm Mean / Variance (N, G) (the variance), instance_norm SavedMean /
SavedVariance (N * C,) (SavedVariance is 1 / sqrt(var + epsilon)).

The gradient ops read X, Scale and Y@GRAD and recompute the block statistics (cheaper
than reading them back in the layouts above). With x^ = (x - mean) * r, r = 1/sqrt(var +
eps), M the block size and g = dY * Scale:
  dX = r * (g - mean_block(g) - x^ * mean_block(g * x^)),
  dScale[c] = sum over n, s of dY * x^,  dBias[c] = sum dY.
CUDA: a thread per (n, g) block for the statistics and dX, a thread per element for Y,
a thread per channel for dScale / dBias.
"""
import functools
import math

import numpy as np
from numba import float64, njit

from ..gpu import gpu_util
from .conv_gpu import launch
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op

cuda = None   # numba.cuda, bound by `kernels()` on first use


# ---------------------------------------------------------------- geometry
def _dims(op_type, attrs, shape, err=ValueError):
    """(N, G, C, S, nhwc): batch, groups, channels, spatial size, channels-last."""
    if op_type == "group_norm":
        nhwc = attrs["data_layout"] == "NHWC"
        if attrs["data_layout"] not in ("NCHW", "NHWC", "AnyLayout"):
            raise err(f"data_layout must be 'NCHW' or 'NHWC', got {attrs['data_layout']!r}")
    else:
        nhwc = False
    if len(shape) < 2:
        raise err(f"X must have a batch and a channel dim, got shape {tuple(shape)}")
    C = shape[-1] if nhwc else shape[1]
    spatial = shape[1:-1] if nhwc else shape[2:]
    S = -1 if any(d < 0 for d in spatial) else int(np.prod(spatial, dtype=np.int64))
    G = int(attrs["groups"]) if op_type == "group_norm" else C
    if op_type == "group_norm" and (G < 1 or (C > 0 and C % G)):
        raise err(f"groups={G} must be >= 1 and divide the {C} channels of X")
    return shape[0], G, C, S, nhwc


def _block_view(a, N, G, C, S, nhwc):
    """a as (N, G, C/G, S) (a view: channels-last input gives a strided one)."""
    if nhwc:
        return a.reshape(N, S, G, C // G).transpose(0, 2, 3, 1)
    return a.reshape(N, G, C // G, S)


# ---------------------------------------------------------------- CPU kernels
@njit(nogil=True, cache=True, error_model="numpy")
def _stats(xb, eps):
    n, s = 0, 0.0
    for j in range(xb.shape[0]):
        for k in range(xb.shape[1]):
            s += xb[j, k]
            n += 1
    m = s / n
    v = 0.0
    for j in range(xb.shape[0]):
        for k in range(xb.shape[1]):
            d = xb[j, k] - m
            v += d * d
    v /= n
    return m, v, 1.0 / math.sqrt(v + eps)


@njit(nogil=True, cache=True, error_model="numpy")
def norm_fwd(x4, sc, bi, eps, y4, mean, second, inv):
    """second: the variance (group_norm) or 1 / std (instance_norm, inv)."""
    N, G, Cg, S = x4.shape
    for n in range(N):
        for g in range(G):
            m, v, r = _stats(x4[n, g], eps)
            mean[n, g] = m
            second[n, g] = r if inv else v
            for j in range(Cg):
                a, b = sc[g, j] * r, bi[g, j]
                for k in range(S):
                    y4[n, g, j, k] = (x4[n, g, j, k] - m) * a + b


@njit(nogil=True, cache=True, error_model="numpy")
def norm_bwd(x4, sc, d4, eps, dx4, dsc, dbi, need_dx, need_ds, need_db):
    N, G, Cg, S = x4.shape
    for g in range(G):
        for j in range(Cg):
            dsc[g, j] = 0.0
            dbi[g, j] = 0.0
    M = Cg * S
    for n in range(N):
        for g in range(G):
            m, v, r = _stats(x4[n, g], eps)
            s1, s2 = 0.0, 0.0
            for j in range(Cg):
                ds, db = 0.0, 0.0
                for k in range(S):
                    xh = (x4[n, g, j, k] - m) * r
                    d = d4[n, g, j, k]
                    ds += d * xh
                    db += d
                    s1 += d * sc[g, j]
                    s2 += d * sc[g, j] * xh
                dsc[g, j] += ds
                dbi[g, j] += db
            if need_dx:
                s1 /= M
                s2 /= M
                for j in range(Cg):
                    for k in range(S):
                        xh = (x4[n, g, j, k] - m) * r
                        dx4[n, g, j, k] = r * (d4[n, g, j, k] * sc[g, j] - s1 - xh * s2)


def _affine(ins, slot, G, C, dtype, fill):
    """Scale / Bias as (G, C/G); `fill` when the op has none."""
    v = ins.get(slot)
    return (v[0] if v else np.full(C, fill, dtype)).reshape(G, C // G)


def _cpu(cop):
    N, G, C, S, nhwc = _dims(cop.type, cop.attrs, cop.input("X").shape)
    eps, inv = float(cop.attrs["epsilon"]), cop.type == "instance_norm"
    mean_slot, second_slot = ("SavedMean", "SavedVariance") if inv else ("Mean", "Variance")

    def bind(ins, outs):
        x = ins["X"][0]
        sc, bi = _affine(ins, "Scale", G, C, x.dtype, 1.0), _affine(ins, "Bias", G, C, x.dtype, 0.0)
        m, s2 = (outs[k][0].reshape(N, G) if outs.get(k) else np.empty((N, G), x.dtype)
                 for k in (mean_slot, second_slot))
        return functools.partial(
            norm_fwd, _block_view(x, N, G, C, S, nhwc), sc, bi, eps,
            _block_view(outs["Y"][0], N, G, C, S, nhwc), m, s2, inv)
    return bind


def _grad_cpu(cop):
    N, G, C, S, nhwc = _dims(cop.type[:-5], cop.attrs, cop.input("X").shape)
    eps = float(cop.attrs["epsilon"])

    def bind(ins, outs):
        x = ins["X"][0]
        sc = _affine(ins, "Scale", G, C, x.dtype, 1.0)
        wanted = [bool(outs.get(s)) for s in ("X@GRAD", "Scale@GRAD", "Bias@GRAD")]
        dx = outs["X@GRAD"][0] if wanted[0] else np.empty_like(x)
        ds = outs["Scale@GRAD"][0].reshape(G, -1) if wanted[1] else np.empty((G, C // G), x.dtype)
        db = outs["Bias@GRAD"][0].reshape(G, -1) if wanted[2] else np.empty((G, C // G), x.dtype)
        return functools.partial(
            norm_bwd, _block_view(x, N, G, C, S, nhwc), sc,
            _block_view(ins["Y@GRAD"][0], N, G, C, S, nhwc), eps,
            _block_view(dx, N, G, C, S, nhwc), ds, db, *wanted)
    return bind


# ---------------------------------------------------------------- CUDA
@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(device=True)
    def at(n, c, s, st):
        return n * st[0] + c * st[1] + s * st[2]

    @cuda.jit(cache=True)
    def stats(x, mean, second, dims, st, eps, inv):
        N, G, Cg, S = dims
        for b in range(cuda.grid(1), N * G, cuda.gridsize(1)):
            n, g = b // G, b % G
            s = 0.0
            for j in range(Cg):
                for k in range(S):
                    s += float64(x[at(n, g * Cg + j, k, st)])
            m = s / (Cg * S)
            v = 0.0
            for j in range(Cg):
                for k in range(S):
                    d = float64(x[at(n, g * Cg + j, k, st)]) - m
                    v += d * d
            v /= Cg * S
            mean[b] = m
            second[b] = 1.0 / math.sqrt(v + eps) if inv else v

    @cuda.jit(cache=True)
    def apply(x, sc, bi, y, mean, second, dims, st, eps, inv):
        N, G, Cg, S = dims
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            k = i % S
            c = (i // S) % (G * Cg)
            n = i // (S * G * Cg)
            b = n * G + c // Cg
            r = second[b] if inv else 1.0 / math.sqrt(float64(second[b]) + eps)
            o = at(n, c, k, st)
            y[o] = (float64(x[o]) - mean[b]) * r * sc[c] + bi[c]

    @cuda.jit(cache=True)
    def dx_blocks(x, sc, d, dx, mean, rstd, dims, st):
        N, G, Cg, S = dims
        for b in range(cuda.grid(1), N * G, cuda.gridsize(1)):
            n, g = b // G, b % G
            m, r = mean[b], rstd[b]
            s1, s2 = 0.0, 0.0
            for j in range(Cg):
                c = g * Cg + j
                for k in range(S):
                    o = at(n, c, k, st)
                    gv = float64(d[o]) * sc[c]
                    s1 += gv
                    s2 += gv * (float64(x[o]) - m) * r
            s1 /= Cg * S
            s2 /= Cg * S
            for j in range(Cg):
                c = g * Cg + j
                for k in range(S):
                    o = at(n, c, k, st)
                    xh = (float64(x[o]) - m) * r
                    dx[o] = r * (float64(d[o]) * sc[c] - s1 - xh * s2)

    @cuda.jit(cache=True)
    def affine_grad(x, d, ds, db, mean, rstd, dims, st):
        N, G, Cg, S = dims
        for c in range(cuda.grid(1), G * Cg, cuda.gridsize(1)):
            a, b_ = 0.0, 0.0
            for n in range(N):
                blk = n * G + c // Cg
                for k in range(S):
                    o = at(n, c, k, st)
                    a += float64(d[o]) * (float64(x[o]) - mean[blk]) * rstd[blk]
                    b_ += float64(d[o])
            ds[c] = a
            db[c] = b_

    return gpu_util.Kernels(stats=stats, apply=apply, dx_blocks=dx_blocks,
                            affine_grad=affine_grad)


def _gpu_geo(op_type, cop):
    N, G, C, S, nhwc = _dims(op_type, cop.attrs, cop.input("X").shape)
    st = (S * C, 1, C) if nhwc else (C * S, S, 1)    # element strides of (n, c, s)
    return (N, G, C // G, S), st, C


def _gpu_affine(ins, slot, C, dtype, fill):
    v = ins.get(slot)
    return gpu_util.flat(v[0]) if v else gpu_util.to_device(np.full(C, fill, dtype))


def _gpu(cop):
    dims, st, C = _gpu_geo(cop.type, cop)
    eps, inv = float(cop.attrs["epsilon"]), cop.type == "instance_norm"
    mean_slot, second_slot = ("SavedMean", "SavedVariance") if inv else ("Mean", "Variance")
    k, f = kernels(), gpu_util.flat

    def bind(ins, outs):
        x, y = f(ins["X"][0]), f(outs["Y"][0])
        sc = _gpu_affine(ins, "Scale", C, x.dtype, 1.0)
        bi = _gpu_affine(ins, "Bias", C, x.dtype, 0.0)
        from numba import cuda as cu
        m, s2 = (f(outs[k][0]) if outs.get(k) else cu.device_array(dims[0] * dims[1], x.dtype)
                 for k in (mean_slot, second_slot))
        return gpu_util.sequence((
            launch(k.stats, dims[0] * dims[1], x, m, s2, dims, st, eps, inv),
            launch(k.apply, x.size, x, sc, bi, y, m, s2, dims, st, eps, inv)))
    return bind


def _grad_gpu(cop):
    dims, st, C = _gpu_geo(cop.type[:-5], cop)
    eps = float(cop.attrs["epsilon"])
    k, f = kernels(), gpu_util.flat

    def bind(ins, outs):
        from numba import cuda as cu
        x, d = f(ins["X"][0]), f(ins["Y@GRAD"][0])
        sc = _gpu_affine(ins, "Scale", C, x.dtype, 1.0)
        m, r = cu.device_array(dims[0] * dims[1]), cu.device_array(dims[0] * dims[1])
        calls = [launch(k.stats, dims[0] * dims[1], x, m, r, dims, st, eps, True)]
        if outs.get("X@GRAD"):
            calls.append(launch(k.dx_blocks, dims[0] * dims[1], x, sc, d, f(outs["X@GRAD"][0]),
                                m, r, dims, st))
        if outs.get("Scale@GRAD") or outs.get("Bias@GRAD"):
            ds = f(outs["Scale@GRAD"][0]) if outs.get("Scale@GRAD") else \
                cu.device_array(C, x.dtype)
            db = f(outs["Bias@GRAD"][0]) if outs.get("Bias@GRAD") else \
                cu.device_array(C, x.dtype)
            calls.append(launch(k.affine_grad, C, x, d, ds, db, m, r, dims, st))
        return gpu_util.sequence(calls)
    return bind


# ---------------------------------------------------------------- ops
def _infer(ctx):
    x = ctx.input("X")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    N, G, C, S, _ = _dims(ctx.op_type, ctx.attrs, tuple(x.shape), ctx.error)
    for slot in ("Scale", "Bias"):
        v = ctx.input(slot)
        if v is not None and (tuple(v.shape) != (C,) or v.dtype != x.dtype):
            raise ctx.error(f"{slot} {ctx.name(slot)} must be ({C},) {x.dtype} (one per channel "
                            f"of X), got {tuple(v.shape)} {v.dtype}")
    y = VarInfo(tuple(x.shape), x.dtype)
    if ctx.op_type == "instance_norm":
        nc = -1 if N < 0 or C < 0 else N * C
        return {"Y": y, "SavedMean": VarInfo((nc,), x.dtype),
                "SavedVariance": VarInfo((nc,), x.dtype)}
    return {"Y": y, "Mean": VarInfo((N, G), x.dtype), "Variance": VarInfo((N, G), x.dtype)}


def _grad_rule(g):
    ins = {"X": g.fwd("X"), "Y@GRAD": g.dout("Y")}
    outs = {"X@GRAD": g.dx("X")}
    for slot in ("Scale", "Bias"):
        if g.op.inputs.get(slot):
            ins[slot] = g.fwd(slot)
            outs[slot + "@GRAD"] = g.dx(slot)
    g.append(g.op.type + "_grad", ins, outs, dict(g.attrs))


def _grad_infer(ctx):
    out = {"X@GRAD": ctx.input("X")}
    for slot in ("Scale", "Bias"):
        if ctx.input(slot) is not None:
            out[slot + "@GRAD"] = ctx.input(slot)
    return out


_AFFINE = (Slot("Scale", optional=True), Slot("Bias", optional=True))
_SPECS = {
    "group_norm": ({"epsilon": 1e-5, "groups": 1, "data_layout": "NCHW"}, ("Mean", "Variance"),
                   "normalise each group of channels of each sample, then scale and shift"),
    "instance_norm": ({"epsilon": 1e-5}, ("SavedMean", "SavedVariance"),
                      "normalise each channel of each sample, then scale and shift"),
}
for _type, (_attrs, _stats_out, _doc) in _SPECS.items():
    register_op(OpDef(
        # the statistics are optional outputs: a pruned inference program drops them
        _type, (Slot("X"),) + _AFFINE,
        (Slot("Y"),) + tuple(Slot(s, optional=True) for s in _stats_out),
        _infer, _cpu, gpu=_gpu, attrs=_attrs, grad=_grad_rule, doc=_doc))
    register_op(OpDef(
        _type + "_grad", (Slot("X"), Slot("Scale", optional=True), Slot("Bias", optional=True),
                          Slot("Y@GRAD")),
        (Slot("X@GRAD", optional=True), Slot("Scale@GRAD", optional=True),
         Slot("Bias@GRAD", optional=True)),
        _grad_infer, _grad_cpu, gpu=_grad_gpu, attrs=dict(_attrs),
        traits=frozenset({NO_GRAD})))
