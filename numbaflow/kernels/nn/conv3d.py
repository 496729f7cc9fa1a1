"""3-D convolution: `conv3d` and `conv3d_grad`, Paddle's op contract (Input, Filter ->
Output; attrs strides, paddings, padding_algorithm, dilations, groups, data_format
NCDHW / NDHWC; no bias, which layers add with elementwise_add as for conv2d).

`paddings` is [p] , [pd, ph, pw] or [front, back, top, bottom, left, right];
`padding_algorithm` 'SAME' (out = ceil(in / s), the total padding split with the smaller
half first, dilations 1) or 'VALID' (no padding) overrides it, as in Paddle.

CPU: vol2col + GEMM, per (sample, group): the receptive fields of a sample's group are
unrolled into a (Cg * kd * kh * kw, OD * OH * OW) columns buffer (out-of-input cells 0)
and multiplied by the group's filters with gemm_cpu.gemm (numpy's CBLAS, as every other
CPU product); the gradient multiplies Output@GRAD
by the columns (dFilter) and by the filters, folding the columns back (col2vol, dInput).
NDHWC buffers are run through NCDHW copies. The CUDA kernels are conv2d's (conv_gpu.py,
rank-generic).
"""
import numpy as np
from numba import njit

from . import conv_gpu
from ..math.gemm_cpu import blas_scalars, gemm
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op

FORMATS = ("NCDHW", "NDHWC")


# ---------------------------------------------------------------- attributes and shapes
def _triple(v, what, err):
    v = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    v = v * 3 if len(v) == 1 else v
    if len(v) != 3 or min(v) < 1:
        raise err(f"{what} must be 1 or 3 positive ints [d, h, w], got {v}")
    return v


def _same_pads(size, k, s):
    total = max(((size + s - 1) // s - 1) * s + k - size, 0)
    return [total // 2, total - total // 2]


def conv3d_params(attrs, spatial, ksize, err=ValueError):
    """(strides, pads [front, back, top, bottom, left, right], dilations) from the attrs;
    `spatial` (D, H, W) and `ksize` (kd, kh, kw) resolve 'SAME'."""
    if attrs.get("data_format", "NCDHW") not in FORMATS + ("AnyLayout",):
        raise err(f"data_format must be 'NCDHW' or 'NDHWC', got {attrs['data_format']!r}")
    s = _triple(attrs["strides"], "strides", err)
    d = _triple(attrs["dilations"], "dilations", err)
    algo = attrs.get("padding_algorithm", "EXPLICIT")
    if algo == "VALID":
        return s, [0] * 6, d
    if algo == "SAME":
        if min(spatial) < 0:
            raise err(f"padding_algorithm 'SAME' needs known spatial dims, got {spatial}")
        return s, sum((_same_pads(n, k, st) for n, k, st in zip(spatial, ksize, s)), []), \
            [1, 1, 1]
    if algo != "EXPLICIT":
        raise err(f"padding_algorithm must be 'EXPLICIT', 'SAME' or 'VALID', got {algo!r}")
    p = [int(x) for x in (attrs["paddings"] if isinstance(attrs["paddings"], (list, tuple))
                          else [attrs["paddings"]])]
    p = p * 6 if len(p) == 1 else [p[0], p[0], p[1], p[1], p[2], p[2]] if len(p) == 3 else p
    if len(p) != 6 or min(p) < 0:
        raise err(f"paddings must be [p], [pd, ph, pw] or [front, back, top, bottom, left, "
                  f"right] of ints >= 0, got {attrs['paddings']}")
    return s, p, d


def _out_dim(n, k, s, p0, p1, d):
    return -1 if n < 0 else (n + p0 + p1 - (d * (k - 1) + 1)) // s + 1


def _spatial(shape, fmt):
    return list(shape[1:4]) if fmt == "NDHWC" else list(shape[2:5])


def _infer(ctx):
    x, w = ctx.input("Input"), ctx.input("Filter")
    xn, wn = ctx.name("Input"), ctx.name("Filter")
    if len(x.shape) != 5 or len(w.shape) != 5:
        raise ctx.error(f"Input {xn} {tuple(x.shape)} and Filter {wn} {tuple(w.shape)} must "
                        f"both be 5-D: NCDHW (or NDHWC) and [out_channels, in_channels/groups, "
                        f"kd, kh, kw]")
    if x.dtype != w.dtype or x.dtype.kind != "f":
        raise ctx.error(f"Input {xn} ({x.dtype}) and Filter {wn} ({w.dtype}) must have the "
                        f"same float dtype")
    fmt = ctx.attr("data_format")
    if fmt == "AnyLayout":
        fmt = "NCDHW"
    spatial = _spatial(x.shape, fmt)
    s, p, d = conv3d_params(ctx.attrs, spatial, w.shape[2:], ctx.error)
    c = x.shape[4] if fmt == "NDHWC" else x.shape[1]
    m, cg = w.shape[0], w.shape[1]
    groups = int(ctx.attr("groups"))
    if groups < 1 or m % groups:
        raise ctx.error(f"groups={groups} must be >= 1 and divide the {m} filters of {wn}")
    if c != -1 and cg * groups != c:
        raise ctx.error(f"channel mismatch: Input {xn} has {c} channels, but Filter {wn} "
                        f"{tuple(w.shape)} expects {cg} per group x groups={groups}")
    out = []
    for i, (n, k) in enumerate(zip(spatial, w.shape[2:])):
        o = _out_dim(n, k, s[i], p[2 * i], p[2 * i + 1], d[i])
        if n != -1 and o < 1:
            raise ctx.error(f"the (dilated) kernel {d[i] * (k - 1) + 1} is larger than the "
                            f"padded input dim {n} + {p[2 * i] + p[2 * i + 1]} of Input {xn} "
                            f"{tuple(x.shape)}; use a smaller kernel or more padding")
        out.append(o)
    shape = (x.shape[0], *out, m) if fmt == "NDHWC" else (x.shape[0], m, *out)
    return {"Output": VarInfo(shape, x.dtype)}


def _grad_infer(ctx):
    out = _infer(ctx)["Output"].shape
    d = ctx.input("Output@GRAD")
    if len(d.shape) != 5 or any(a != b and -1 not in (a, b) for a, b in zip(d.shape, out)):
        raise ctx.error(f"Output@GRAD {ctx.name('Output@GRAD')} has shape {tuple(d.shape)}, "
                        f"but the convolution's Output has shape {out}")
    return {"Input@GRAD": ctx.input("Input"), "Filter@GRAD": ctx.input("Filter")}


def _grad_rule(g):
    g.append("conv3d_grad",
             {"Input": g.fwd("Input"), "Filter": g.fwd("Filter"), "Output@GRAD": g.dout("Output")},
             {"Input@GRAD": g.dx("Input"), "Filter@GRAD": g.dx("Filter")}, dict(g.attrs))


def geometry(cop):
    """What the kernels specialise on: channels_last, groups and the 12 window ints
    (kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw: the paddings before each dim)."""
    fmt = cop.attrs["data_format"]
    w = cop.input("Filter").shape
    s, p, d = conv3d_params(cop.attrs, _spatial(cop.input("Input").shape, fmt), w[2:])
    return fmt == "NDHWC", int(cop.attrs["groups"]), (*w[2:], *s, p[0], p[2], p[4], *d)


# ---------------------------------------------------------------- CPU kernels
@njit(nogil=True, cache=True)
def vol2col(x, cols, fold, od, oh, ow, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw):
    """cols[(c, i, j, l), (a, b, e)] = x[c, a*sd - pd + i*dd, ...] (0 outside x); with
    `fold` the adjoint, col2vol: x[c, z, y, u] += every cols entry that reads it."""
    C, D, H, W = x.shape
    for c in range(C):
        for i in range(kd):
            for j in range(kh):
                for l in range(kw):
                    r = ((c * kd + i) * kh + j) * kw + l
                    for a in range(od):
                        z = a * sd - pd + i * dd
                        for b in range(oh):
                            y = b * sh - ph + j * dh
                            base = (a * oh + b) * ow
                            inside = z >= 0 and z < D and y >= 0 and y < H
                            for e in range(ow):
                                u = e * sw - pw + l * dw
                                ok = inside and u >= 0 and u < W
                                if fold:
                                    if ok:
                                        x[c, z, y, u] += cols[r, base + e]
                                else:
                                    cols[r, base + e] = x[c, z, y, u] if ok else 0.0


def _ncdhw(a, last):
    return a.transpose(0, 4, 1, 2, 3) if last else a


def _layout(x, w, d, last, groups):
    """NCDHW C-contiguous x, the (G, Mg, K) filters and (G, Mg, P) / spatial output dims."""
    x = np.ascontiguousarray(_ncdhw(x, last))
    G = groups
    w3 = w.reshape(G, w.shape[0] // G, -1)
    return x, w3, tuple(_ncdhw(d, last).shape[2:])


def conv3d_forward(x, w, out, last, groups, geo):
    x, w3, osp = _layout(x, w, out, last, groups)
    o = _ncdhw(out, last)
    oc = o if o.flags.c_contiguous else np.empty(o.shape, o.dtype)   # NDHWC: a copy back
    cg, mg = x.shape[1] // groups, w3.shape[1]
    cols = np.empty((w3.shape[2], int(np.prod(osp))), x.dtype)
    o4, ab = oc.reshape(oc.shape[0], groups, mg, cols.shape[1]), blas_scalars(x.dtype)
    for n in range(x.shape[0]):
        for g in range(groups):
            vol2col(x[n, g * cg:(g + 1) * cg], cols, False, *osp, *geo)
            gemm(w3[g], cols, o4[n, g], False, False, ab)
    if oc is not o:
        o[...] = oc


def conv3d_backward(x, w, d, dx, dw, last, groups, geo):
    x, w3, osp = _layout(x, w, d, last, groups)
    d = np.ascontiguousarray(_ncdhw(d, last))
    cg, mg = x.shape[1] // groups, w3.shape[1]
    d4, ab = d.reshape(d.shape[0], groups, mg, -1), blas_scalars(x.dtype)
    cols = np.empty((w3.shape[2], d4.shape[3]), x.dtype)
    dxc = np.zeros(x.shape, x.dtype) if dx is not None else None
    dw3 = np.zeros(w3.shape, x.dtype) if dw is not None else None
    dwg = np.empty(w3.shape[1:], x.dtype)       # one (sample, group)'s dFilter
    for n in range(x.shape[0]):
        for g in range(groups):
            if dw3 is not None:
                vol2col(x[n, g * cg:(g + 1) * cg], cols, False, *osp, *geo)
                gemm(d4[n, g], cols, dwg, False, True, ab)
                dw3[g] += dwg
            if dxc is not None:
                gemm(w3[g], d4[n, g], cols, True, False, ab)
                vol2col(dxc[n, g * cg:(g + 1) * cg], cols, True, *osp, *geo)
    if dxc is not None:
        _ncdhw(dx, last)[...] = dxc
    if dw3 is not None:
        dw[...] = dw3.reshape(dw.shape)


def _opt(outs, slot):
    return outs[slot][0] if outs.get(slot) and outs[slot][0].size > 0 else None


def _cpu(cop):
    last, groups, geo = geometry(cop)

    def bind(ins, outs):
        x, w, out = ins["Input"][0], ins["Filter"][0], outs["Output"][0]
        return lambda: conv3d_forward(x, w, out, last, groups, geo)
    return bind


def _grad_cpu(cop):
    last, groups, geo = geometry(cop)

    def bind(ins, outs):
        x, w, d = ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0]
        dx, dw = _opt(outs, "Input@GRAD"), _opt(outs, "Filter@GRAD")
        return lambda: conv3d_backward(x, w, d, dx, dw, last, groups, geo)
    return bind


def _gpu(cop):
    last, _, geo = geometry(cop)
    return conv_gpu.conv_forward(geo, False, last=last)


def _grad_gpu(cop):
    last, _, geo = geometry(cop)
    return conv_gpu.conv_backward(geo, False, last=last)


# ---------------------------------------------------------------- registration
ATTRS = {"strides": [1, 1, 1], "paddings": [0, 0, 0], "padding_algorithm": "EXPLICIT",
         "dilations": [1, 1, 1], "groups": 1, "data_format": "NCDHW"}
register_op(OpDef("conv3d", (Slot("Input"), Slot("Filter")), (Slot("Output"),), _infer, _cpu,
                  gpu=_gpu, attrs=ATTRS, grad=_grad_rule,
                  doc="3-D convolution, NCDHW / NDHWC, Filter [M, C/groups, kd, kh, kw]; no bias"))
register_op(OpDef("conv3d_grad", (Slot("Input"), Slot("Filter"), Slot("Output@GRAD")),
                  (Slot("Input@GRAD", optional=True), Slot("Filter@GRAD", optional=True)),
                  _grad_infer, _grad_cpu, gpu=_grad_gpu, attrs=ATTRS,
                  traits=frozenset({NO_GRAD})))
