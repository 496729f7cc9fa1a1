"""2-D convolution (NCHW): `conv2d` and `depthwise_conv2d`, with their gradients.

conv2d runs im2col + BLAS: per (sample, group) the receptive fields are unrolled into a
columns buffer (allocated once at bind time) and multiplied by the group's filters with
`np.dot`. Measured side by side on the 2-core machine (loaded, load average 4.5),
(16,32,28,28) * (64,32,3,3) padding 1, f32, forward: im2col + BLAS 7.4 ms, a direct
numba loop (prange over samples, vectorised over output columns of a zero-padded
input) 39.8 ms; so there is no direct path. 1x1 convolutions with stride 1 and no
padding multiply the input planes directly (they already are the columns).

depthwise_conv2d (each input channel convolved with its own `multiplier` filters) is
memory-bound, so it avoids im2col: each input plane is copied once into a zero-padded
per-thread buffer (borders stay zero: only the interior is ever written), and the
output rows are computed from shifted rows of that buffer, which vectorise without
bounds checks. 3x3 / stride 1 / dilation 1 has an unrolled path. The backward pass
handles one input plane per step and computes dInput (a gather over a zero-padded dOut
plane for stride 1, a scatter otherwise) and dFilter (per-thread partial sums, added
at the end, so no two threads write the same element).

`fuse_relu_before_depthwise_conv` (set by a fusion pass, as Paddle's GPU pass does)
applies relu to Input inside the kernel; the grad then masks Input@GRAD by Input > 0.

Bias is not part of these ops: layers add it with `elementwise_add(axis=1)`, as Paddle.

The CUDA kernels (direct: thread per output / dInput / dFilter element) are in conv_gpu.py.
"""
import functools

import numba
import numpy as np
from numba import njit, prange

from . import conv_gpu
from .registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

# reassoc lets LLVM vectorise the dFilter dot products; contract allows FMAs.
_FM = {"reassoc", "contract"}
_JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath=_FM)
# Multiply-adds below which a kernel runs serially (waking the OpenMP pool costs ~30 us).
PARALLEL_MIN_WORK = 1 << 17


# ---------------------------------------------------------------- attributes and shapes
def _pair(v, what, op):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if len(v) == 1:
        v = v * 2
    if len(v) != 2:
        raise ValueError(f"{op}: {what} must have 1 or 2 elements, got {v}")
    return int(v[0]), int(v[1])


def conv_params(attrs, op="conv2d"):
    """(sh, sw), (pt, pb, pl, pr), (dh, dw) from the op's attrs, validated."""
    sh, sw = _pair(attrs["strides"], "strides", op)
    dh, dw = _pair(attrs["dilations"], "dilations", op)
    p = [int(x) for x in (attrs["paddings"] if isinstance(attrs["paddings"], (list, tuple))
                          else [attrs["paddings"]])]
    if len(p) == 1:
        p = p * 4
    elif len(p) == 2:
        p = [p[0], p[0], p[1], p[1]]
    elif len(p) != 4:
        raise ValueError(f"{op}: paddings must be [p], [pad_h, pad_w] or [top, bottom, left, "
                         f"right], got {attrs['paddings']}")
    if min(sh, sw) < 1 or min(dh, dw) < 1:
        raise ValueError(f"{op}: strides {[sh, sw]} and dilations {[dh, dw]} must be >= 1")
    if min(p) < 0:
        raise ValueError(f"{op}: paddings {p} must be >= 0")
    if attrs.get("data_format", "NCHW") not in ("NCHW", "AnyLayout"):
        raise ValueError(f"{op}: data_format {attrs['data_format']!r} is not supported; only "
                         f"'NCHW' is (transpose NHWC input with paddle.transpose first)")
    return (sh, sw), tuple(p), (dh, dw)


def _out_dim(n, k, s, p0, p1, d):
    return -1 if n < 0 else (n + p0 + p1 - (d * (k - 1) + 1)) // s + 1


def _conv_infer(ctx):
    x, w = ctx.input("Input"), ctx.input("Filter")
    xn, wn = ctx.name("Input"), ctx.name("Filter")
    op = ctx.op_type
    try:
        (sh, sw), (pt, pb, pl, pr), (dh, dw) = conv_params(ctx.attrs, op)
    except ValueError as e:
        raise ValueError(f"{e} (Input {xn}, Filter {wn})") from None
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ctx.error(f"Input {xn} {tuple(x.shape)} and Filter {wn} {tuple(w.shape)} must "
                        f"both be 4-D: NCHW and [out_channels, in_channels/groups, kh, kw]")
    if x.dtype != w.dtype or x.dtype.kind != "f":
        raise ctx.error(f"Input {xn} ({x.dtype}) and Filter {wn} ({w.dtype}) must have the "
                        f"same float dtype")
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    groups = int(ctx.attr("groups"))
    if groups < 1:
        raise ctx.error(f"groups must be >= 1, got {groups}")
    if op.startswith("depthwise") and (cg != 1 or (c != -1 and groups != c)):
        raise ctx.error(f"a depthwise conv needs groups == in_channels and Filter {wn} of shape "
                        f"[channels * multiplier, 1, kh, kw]; got groups={groups}, Input {xn} "
                        f"{tuple(x.shape)}, Filter {tuple(w.shape)}")
    if c != -1:
        if c % groups:
            raise ctx.error(f"groups={groups} does not divide the {c} channels of Input {xn}")
        if cg * groups != c:
            raise ctx.error(f"channel mismatch: Input {xn} has {c} channels, but Filter {wn} "
                            f"{tuple(w.shape)} expects {cg} per group x groups={groups} = "
                            f"{cg * groups}")
    if m % groups:
        raise ctx.error(f"groups={groups} does not divide the {m} output channels (filters) of "
                        f"Filter {wn}")
    for size, k, d, p0, p1, what in ((h, kh, dh, pt, pb, "height"), (wd, kw, dw, pl, pr, "width")):
        if size != -1 and d * (k - 1) + 1 > size + p0 + p1:
            raise ctx.error(f"the (dilated) kernel {what} {d * (k - 1) + 1} is larger than the "
                            f"padded input {what} {size} + {p0 + p1} of Input {xn}; use a "
                            f"smaller kernel or more padding")
    oh, ow = _out_dim(h, kh, sh, pt, pb, dh), _out_dim(wd, kw, sw, pl, pr, dw)
    return {"Output": VarInfo((n, m, oh, ow), x.dtype)}


def _conv_grad_infer(ctx):
    # the forward's checks, and Output@GRAD must have the forward's Output shape: the
    # kernels index by these shapes (a mismatch would read and write out of bounds)
    out = _conv_infer(ctx)["Output"].shape
    d = ctx.input("Output@GRAD")
    if len(d.shape) != 4 or any(a != b and -1 not in (a, b) for a, b in zip(d.shape, out)):
        raise ctx.error(f"Output@GRAD {ctx.name('Output@GRAD')} has shape {tuple(d.shape)}, "
                        f"but the convolution's Output has shape {out}")
    return {"Input@GRAD": ctx.input("Input"), "Filter@GRAD": ctx.input("Filter")}


def _conv_grad_rule(g):
    g.append(g.op.type + "_grad",
             {"Input": g.fwd("Input"), "Filter": g.fwd("Filter"), "Output@GRAD": g.dout("Output")},
             {"Input@GRAD": g.dx("Input"), "Filter@GRAD": g.dx("Filter")}, dict(g.attrs))


def _geometry(cop):
    """Everything a kernel specialises on, from the concrete shapes."""
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = conv_params(cop.attrs, cop.type)
    n, c, h, wd = cop.input("Input").shape
    m, cg, kh, kw = cop.input("Filter").shape
    oh, ow = _out_dim(h, kh, sh, pt, pb, dh), _out_dim(wd, kw, sw, pl, pr, dw)
    return dict(n=n, c=c, h=h, w=wd, m=m, cg=cg, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw,
                pt=pt, pb=pb, pl=pl, pr=pr, dh=dh, dw=dw, groups=int(cop.attrs["groups"]))




def _zero(a):
    a[...] = 0


# ================================================================ conv2d: im2col + BLAS
@njit(**_JIT)
def _span(j, W, OW, s, p, d):
    """The output columns [lo, hi) whose input column ow*s - p + j*d lies in [0, W)."""
    off = p - j * d
    lo = 0 if off <= 0 else (off + s - 1) // s
    hi = (W + off + s - 1) // s if W + off > 0 else 0
    return min(lo, OW), max(min(hi, OW), min(lo, OW))


@njit(**_JIT)
def im2col(x, cols, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW):
    """cols[(c*kh + i)*kw + j, oh*OW + ow] = x[c, oh*sh - pt + i*dh, ow*sw - pl + j*dw],
    0 where that falls in the padding."""
    C, H, W = x.shape
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                r = (c * kh + i) * kw + j
                lo, hi = _span(j, W, OW, sw, pl, dw)
                col = j * dw - pl
                for oh in range(OH):
                    ih = oh * sh - pt + i * dh
                    base = oh * OW
                    if ih < 0 or ih >= H:
                        for ow in range(OW):
                            cols[r, base + ow] = 0
                        continue
                    for ow in range(lo):
                        cols[r, base + ow] = 0
                    if sw == 1:
                        for ow in range(lo, hi):
                            cols[r, base + ow] = x[c, ih, ow + col]
                    else:
                        for ow in range(lo, hi):
                            cols[r, base + ow] = x[c, ih, ow * sw + col]
                    for ow in range(hi, OW):
                        cols[r, base + ow] = 0


@njit(**_JIT)
def col2im(cols, x, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW):
    """The adjoint of im2col: x[c, ih, iw] += cols[...] (x must be zeroed first)."""
    C, H, W = x.shape
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                r = (c * kh + i) * kw + j
                lo, hi = _span(j, W, OW, sw, pl, dw)
                col = j * dw - pl
                for oh in range(OH):
                    ih = oh * sh - pt + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    base = oh * OW
                    for ow in range(lo, hi):
                        x[c, ih, ow * sw + col] += cols[r, base + ow]


@njit(**_JIT)
def conv_fwd(x5, w3, out4, cols, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW):
    """x5 (N, G, Cg, H, W), w3 (G, Mg, K), out4 (N, G, Mg, OH*OW), cols (K, OH*OW)."""
    for n in range(x5.shape[0]):
        for g in range(x5.shape[1]):
            im2col(x5[n, g], cols, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW)
            np.dot(w3[g], cols, out4[n, g])


@njit(**_JIT)
def conv1x1_fwd(x4, w3, out4):
    """1x1, stride 1, no padding: x4 (N, G, Cg, H*W) already is the columns."""
    for n in range(x4.shape[0]):
        for g in range(x4.shape[1]):
            np.dot(w3[g], x4[n, g], out4[n, g])


@njit(**_JIT)
def conv_bwd(x5, w3, d4, dx5, dw3, cols, dcols, tmpw, need_dx, need_dw,
             kh, kw, sh, sw, pt, pl, dh, dw, OH, OW):
    """dFilter_g = sum_n dOut[n, g] @ cols(x[n, g])^T; dInput[n, g] = col2im(W_g^T @ dOut[n, g])."""
    if need_dw:
        dw3[:] = 0
    if need_dx:
        dx5[:] = 0
    for n in range(d4.shape[0]):
        for g in range(d4.shape[1]):
            if need_dw:
                im2col(x5[n, g], cols, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW)
                np.dot(d4[n, g], cols.T, tmpw)
                dw3[g] += tmpw
            if need_dx:
                np.dot(w3[g].T, d4[n, g], dcols)
                col2im(dcols, dx5[n, g], kh, kw, sh, sw, pt, pl, dh, dw, OH, OW)


@njit(**_JIT)
def conv1x1_bwd(x4, w3, d4, dx4, dw3, tmpw, need_dx, need_dw):
    if need_dw:
        dw3[:] = 0
    for n in range(d4.shape[0]):
        for g in range(d4.shape[1]):
            if need_dw:
                np.dot(d4[n, g], x4[n, g].T, tmpw)
                dw3[g] += tmpw
            if need_dx:
                np.dot(w3[g].T, d4[n, g], dx4[n, g])


def _is_1x1(k):
    return (k["kh"] == k["kw"] == 1 and k["sh"] == k["sw"] == 1
            and k["pt"] == k["pb"] == k["pl"] == k["pr"] == 0)


def _views(k, x, w, d):
    """(x5, w3, out4) views of Input, Filter and Output (or its gradient)."""
    G = k["groups"]
    x5 = x.reshape(k["n"], G, k["c"] // G, k["h"], k["w"])
    w3 = w.reshape(G, k["m"] // G, k["cg"] * k["kh"] * k["kw"])
    d4 = d.reshape(k["n"], G, k["m"] // G, k["oh"] * k["ow"])
    return x5, w3, d4


def _geo_args(k):
    return (k["kh"], k["kw"], k["sh"], k["sw"], k["pt"], k["pl"], k["dh"], k["dw"],
            k["oh"], k["ow"])


def _conv_cpu(cop):
    k = _geometry(cop)

    def bind(ins, outs):
        x, w, out = ins["Input"][0], ins["Filter"][0], outs["Output"][0]
        x5, w3, out4 = _views(k, x, w, out)
        if _is_1x1(k):
            return functools.partial(conv1x1_fwd, x5.reshape(x5.shape[:3] + (-1,)), w3, out4)
        cols = np.empty((w3.shape[2], k["oh"] * k["ow"]), x.dtype)
        return functools.partial(conv_fwd, x5, w3, out4, cols, *_geo_args(k))
    return bind


def _conv_grad_cpu(cop):
    k = _geometry(cop)

    def bind(ins, outs):
        x, w, d = ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0]
        dx = outs["Input@GRAD"][0] if outs.get("Input@GRAD") else np.empty((0,) * 4, x.dtype)
        dw = outs["Filter@GRAD"][0] if outs.get("Filter@GRAD") else np.empty((0,) * 4, x.dtype)
        need_dx, need_dw = dx.size > 0, dw.size > 0
        x5, w3, d4 = _views(k, x, w, d)
        dx5 = dx.reshape(x5.shape) if need_dx else np.empty((0,) * 5, x.dtype)
        dw3 = dw.reshape(w3.shape) if need_dw else np.empty((0,) * 3, x.dtype)
        tmpw = np.empty(w3.shape[1:], x.dtype)
        if _is_1x1(k):
            flat = x5.shape[:3] + (-1,)
            dx4 = dx5.reshape(flat) if need_dx else np.empty((0,) * 4, x.dtype)
            return functools.partial(conv1x1_bwd, x5.reshape(flat), w3, d4, dx4, dw3, tmpw,
                                     need_dx, need_dw)
        cols = np.empty((w3.shape[2], k["oh"] * k["ow"]), x.dtype)
        dcols = np.empty_like(cols) if need_dx else cols
        return functools.partial(conv_bwd, x5, w3, d4, dx5, dw3, cols, dcols, tmpw,
                                 need_dx, need_dw, *_geo_args(k))
    return bind


# ================================================================ depthwise_conv2d
@njit(**_JIT)
def _fill_interior(src, pad, top, left, relu_in):
    """pad[top:top+H, left:left+W] = src (relu'd if relu_in); the border is never written."""
    H, W = src.shape
    for h in range(H):
        s = src[h]
        d = pad[top + h, left:left + W]    # a shifted slice: bare indices vectorise
        if relu_in:
            for w in range(W):
                v = s[w]
                d[w] = v if v > 0 else 0
        else:
            for w in range(W):
                d[w] = s[w]


# The 3x3 / stride 1 / dilation 1 kernels run over whole planes as one flat loop: with
# q = row * S + col on buffers of row stride S, the tap (i, j) is the flat shift
# i * S + j. A per-row loop of ~56 elements would leave a scalar remainder of 8 behind
# 3 AVX-512 iterations, which measured 5x slower than this; the flat loop computes 2
# junk columns per row (read from zero borders) and copies rows out afterwards.
@njit(**_JIT)
def _flat_taps3(src, dst, n, S, base, sign, wk):
    """dst[q] = sum_ij wk[i, j] * src[base + q + sign * (i * S + j)] for q < n."""
    w00, w01, w02 = wk[0, 0], wk[0, 1], wk[0, 2]
    w10, w11, w12 = wk[1, 0], wk[1, 1], wk[1, 2]
    w20, w21, w22 = wk[2, 0], wk[2, 1], wk[2, 2]
    o0, o1, o2 = base, base + sign * S, base + 2 * sign * S
    a0, a1, a2 = src[o0:o0 + n], src[o0 + sign:o0 + sign + n], src[o0 + 2 * sign:o0 + 2 * sign + n]
    b0, b1, b2 = src[o1:o1 + n], src[o1 + sign:o1 + sign + n], src[o1 + 2 * sign:o1 + 2 * sign + n]
    c0, c1, c2 = src[o2:o2 + n], src[o2 + sign:o2 + sign + n], src[o2 + 2 * sign:o2 + 2 * sign + n]
    d = dst[:n]
    for q in range(n):
        d[q] = (w00 * a0[q] + w01 * a1[q] + w02 * a2[q] +
                w10 * b0[q] + w11 * b1[q] + w12 * b2[q] +
                w20 * c0[q] + w21 * c1[q] + w22 * c2[q])


@njit(**_JIT)
def _rows_out(tmp, S, out, accumulate, mask, xs):
    """out[r, :] (+)= tmp[r * S: r * S + W], zeroed where xs <= 0 when `mask`."""
    H, W = out.shape
    for r in range(H):
        t, o = tmp[r * S:r * S + W], out[r]
        if accumulate:
            for w in range(W):
                o[w] += t[w]
        else:
            for w in range(W):
                o[w] = t[w]
        if mask:
            xr = xs[r]
            for w in range(W):
                o[w] = o[w] if xr[w] > 0 else 0


@njit(**_JIT)
def _dfilter3_flat(xf, df, acc, n, S, dbase, z):
    """acc[i, j] += sum_q df[dbase + q] * xf[q + i * S + j] (junk columns of df are 0)."""
    g = df[dbase:dbase + n]
    a0, a1, a2 = xf[0:n], xf[1:1 + n], xf[2:2 + n]
    b0, b1, b2 = xf[S:S + n], xf[S + 1:S + 1 + n], xf[S + 2:S + 2 + n]
    c0, c1, c2 = xf[2 * S:2 * S + n], xf[2 * S + 1:2 * S + 1 + n], xf[2 * S + 2:2 * S + 2 + n]
    s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = z
    for q in range(n):
        v = g[q]
        s00 += v * a0[q]
        s01 += v * a1[q]
        s02 += v * a2[q]
        s10 += v * b0[q]
        s11 += v * b1[q]
        s12 += v * b2[q]
        s20 += v * c0[q]
        s21 += v * c1[q]
        s22 += v * c2[q]
    acc[0, 0] += s00
    acc[0, 1] += s01
    acc[0, 2] += s02
    acc[1, 0] += s10
    acc[1, 1] += s11
    acc[1, 2] += s12
    acc[2, 0] += s20
    acc[2, 1] += s21
    acc[2, 2] += s22


@njit(**_JIT)
def _dw_plane_fwd(pad, wk, out, sh, sw, dh, dw):
    """out[oh, ow] = sum_ij wk[i, j] * pad[oh*sh + i*dh, ow*sw + j*dw] (any kernel).

    Rows are read through shifted slices (pad[r, j:]) so the inner loops index with the
    bare loop variable: no wraparound checks, and LLVM vectorises them."""
    OH, OW = out.shape
    kh, kw = wk.shape
    for oh in range(OH):
        o = out[oh]
        o[:] = 0
        for i in range(kh):
            for j in range(kw):
                wij = wk[i, j]
                r = pad[oh * sh + i * dh, j * dw:]
                if sw == 1:
                    for ow in range(OW):
                        o[ow] += wij * r[ow]
                else:
                    for ow in range(OW):
                        o[ow] += wij * r[ow * sw]


@njit(**_JIT)
def dw_fwd_range(x3, w4, out4, pad, tmp, p0, p1, C, pt, pl, sh, sw, dh, dw, relu_in):
    """Planes p0..p1 of x3 (N*C, H, W): out4[p, k] = conv(x3[p], w4[p % C, k])."""
    OH, OW = out4.shape[2], out4.shape[3]
    fast = w4.shape[2] == 3 and w4.shape[3] == 3 and sh == 1 and sw == 1 and dh == 1 and dw == 1
    S = pad.shape[1]
    pf = pad.reshape(-1)
    for p in range(p0, p1):
        c = p % C
        _fill_interior(x3[p], pad, pt, pl, relu_in)
        for k in range(w4.shape[1]):
            if fast:
                _flat_taps3(pf, tmp, (OH - 1) * S + OW, S, 0, 1, w4[c, k])
                _rows_out(tmp, S, out4[p, k], False, False, x3[p])
            else:
                _dw_plane_fwd(pad, w4[c, k], out4[p, k], sh, sw, dh, dw)


@njit(parallel=True, **_JIT)
def dw_fwd_parallel(x3, w4, out4, pads, tmps, C, pt, pl, sh, sw, dh, dw, relu_in):
    T, P = pads.shape[0], x3.shape[0]
    for t in prange(T):
        dw_fwd_range(x3, w4, out4, pads[t], tmps[t], t * P // T, (t + 1) * P // T, C, pt, pl,
                     sh, sw, dh, dw, relu_in)


@njit(**_JIT)
def _dw_plane_dfilter(pad, d, acc, sh, sw, dh, dw, z):
    """acc[i, j] += sum_{oh, ow} d[oh, ow] * pad[oh*sh + i*dh, ow*sw + j*dw]."""
    OH, OW = d.shape
    kh, kw = acc.shape
    for i in range(kh):
        for j in range(kw):
            s = z
            for oh in range(OH):
                r, g = pad[oh * sh + i * dh, j * dw:], d[oh]
                if sw == 1:
                    for ow in range(OW):
                        s += g[ow] * r[ow]
                else:
                    for ow in range(OW):
                        s += g[ow] * r[ow * sw]
            acc[i, j] += s


@njit(**_JIT)
def _dw_plane_dinput_gather(dpad, wk, dx, accumulate, pt, pl, dh, dw):
    """Stride 1: dx[h, w] (+)= sum_ij wk[i, j] * dOut[h + pt - i*dh, w + pl - j*dw], read
    from dpad, which holds dOut at offset ((kh-1)*dh, (kw-1)*dw) inside zeros."""
    H, W = dx.shape
    kh, kw = wk.shape
    oy, ox = (kh - 1) * dh + pt, (kw - 1) * dw + pl
    for h in range(H):
        o = dx[h]
        if not accumulate:
            o[:] = 0
        for i in range(kh):
            for j in range(kw):
                wij = wk[i, j]
                c0 = ox - j * dw
                r = dpad[h + oy - i * dh, c0:c0 + W]
                for w in range(W):
                    o[w] += wij * r[w]


@njit(**_JIT)
def _dw_plane_dinput_scatter(d, wk, dxpad, sh, sw, dh, dw):
    """Any stride: dxpad[oh*sh + i*dh, ow*sw + j*dw] += wk[i, j] * d[oh, ow]."""
    OH, OW = d.shape
    kh, kw = wk.shape
    for oh in range(OH):
        g = d[oh]
        for i in range(kh):
            for j in range(kw):
                wij = wk[i, j]
                r = dxpad[oh * sh + i * dh, j * dw:]
                for ow in range(OW):
                    r[ow * sw] += wij * g[ow]


@njit(**_JIT)
def dw_bwd_range(x3, w4, d4, dx3, dwp, xpad, dpad, tmp, p0, p1, C, need_dx, need_dw, relu_in,
                 pt, pl, sh, sw, dh, dw, z):
    """Input planes p0..p1: dx3[p] = dInput, dwp[c, k] += dFilter partials.

    dpad is the zero-bordered dOut plane (stride 1) or the padded dInput accumulator
    (other strides). For the flat 3x3 path xpad and dpad share the row stride S."""
    H, W = x3.shape[1], x3.shape[2]
    OH, OW = d4.shape[2], d4.shape[3]
    kh, kw = w4.shape[2], w4.shape[3]
    mult = w4.shape[1]
    gather = sh == 1 and sw == 1
    fast = kh == 3 and kw == 3 and gather and dh == 1 and dw == 1
    S = dpad.shape[1]
    xf, df = xpad.reshape(-1), dpad.reshape(-1)
    for p in range(p0, p1):
        c = p % C
        if need_dw:
            _fill_interior(x3[p], xpad, pt, pl, relu_in)
        if need_dx and not gather:
            dpad[:] = 0
        for k in range(mult):
            if fast:
                _fill_interior(d4[p, k], dpad, 2, 2, False)
                if need_dw:
                    _dfilter3_flat(xf, df, dwp[c, k], (OH - 1) * S + OW, S, 2 * S + 2, z)
                if need_dx:
                    # dx[h, w] = sum_ij wk[i, j] * dpad[h + 2 + pt - i, w + 2 + pl - j]
                    _flat_taps3(df, tmp, (H - 1) * S + W, S, (2 + pt) * S + 2 + pl, -1,
                                w4[c, k])
                    _rows_out(tmp, S, dx3[p], k > 0, relu_in and k == mult - 1, x3[p])
                continue
            if need_dw:
                _dw_plane_dfilter(xpad, d4[p, k], dwp[c, k], sh, sw, dh, dw, z)
            if need_dx:
                if gather:
                    _fill_interior(d4[p, k], dpad, (kh - 1) * dh, (kw - 1) * dw, False)
                    _dw_plane_dinput_gather(dpad, w4[c, k], dx3[p], k > 0, pt, pl, dh, dw)
                else:
                    _dw_plane_dinput_scatter(d4[p, k], w4[c, k], dpad, sh, sw, dh, dw)
        if need_dx and not fast:
            o, xs = dx3[p], x3[p]
            for h in range(H):
                oh = o[h]
                if not gather:
                    src = dpad[h + pt, pl:pl + W]
                    for w in range(W):
                        oh[w] = src[w]
                if relu_in:
                    xr = xs[h]
                    for w in range(W):
                        oh[w] = oh[w] if xr[w] > 0 else 0


@njit(parallel=True, **_JIT)
def dw_bwd_parallel(x3, w4, d4, dx3, dwps, xpads, dpads, tmps, C, need_dx, need_dw, relu_in,
                    pt, pl, sh, sw, dh, dw, z):
    T, P = xpads.shape[0], x3.shape[0]
    for t in prange(T):
        dwps[t] = 0
        dw_bwd_range(x3, w4, d4, dx3, dwps[t], xpads[t], dpads[t], tmps[t], t * P // T,
                     (t + 1) * P // T, C, need_dx, need_dw, relu_in, pt, pl, sh, sw, dh, dw, z)


@njit(**_JIT)
def sum_partials(parts, out):
    """out = sum over the first axis of parts (per-thread dFilter partials)."""
    out[:] = parts[0]
    for t in range(1, parts.shape[0]):
        out += parts[t]


def _threads(k):
    work = k["n"] * k["m"] * k["oh"] * k["ow"] * k["kh"] * k["kw"]
    if work < PARALLEL_MIN_WORK:
        return 1
    return max(1, min(numba.get_num_threads(), k["n"] * k["c"]))


def _dw_views(k, x, w, d):
    C, mult = k["c"], k["m"] // k["c"]
    return (x.reshape(k["n"] * C, k["h"], k["w"]), w.reshape(C, mult, k["kh"], k["kw"]),
            d.reshape(k["n"] * C, mult, k["oh"], k["ow"]))


def _fast3(k):
    """The flat 3x3 / stride 1 / dilation 1 path applies."""
    return (k["kh"] == k["kw"] == 3 and k["sh"] == k["sw"] == 1 and k["dh"] == k["dw"] == 1)


def _depthwise_cpu(cop):
    k = _geometry(cop)
    relu_in = bool(cop.attrs["fuse_relu_before_depthwise_conv"])
    T = _threads(k)
    hp, wp = k["h"] + k["pt"] + k["pb"], k["w"] + k["pl"] + k["pr"]
    geo = (k["pt"], k["pl"], k["sh"], k["sw"], k["dh"], k["dw"], relu_in)

    def bind(ins, outs):
        x, w, out = ins["Input"][0], ins["Filter"][0], outs["Output"][0]
        x3, w4, out4 = _dw_views(k, x, w, out)
        pads = np.zeros((T, hp, wp), x.dtype)     # borders stay zero for good
        tmps = np.empty((T, k["oh"] * wp if _fast3(k) else 0), x.dtype)
        if T == 1:
            return functools.partial(dw_fwd_range, x3, w4, out4, pads[0], tmps[0], 0,
                                     x3.shape[0], k["c"], *geo)
        return functools.partial(dw_fwd_parallel, x3, w4, out4, pads, tmps, k["c"], *geo)
    return bind


def _depthwise_grad_cpu(cop):
    k = _geometry(cop)
    relu_in = bool(cop.attrs["fuse_relu_before_depthwise_conv"])
    T = _threads(k)
    fast = _fast3(k)
    hp, wp = k["h"] + k["pt"] + k["pb"], k["w"] + k["pl"] + k["pr"]
    gather = k["sh"] == 1 and k["sw"] == 1
    # stride 1: dOut inside a (kh-1)*dh, (kw-1)*dw zero border; else a padded dInput plane
    dshape = ((k["oh"] + 2 * (k["kh"] - 1) * k["dh"], k["ow"] + 2 * (k["kw"] - 1) * k["dw"])
              if gather else (hp, wp))
    # the flat 3x3 path reads x and dOut with one row stride (dshape[1] >= wp)
    xshape = (hp, dshape[1]) if fast else (hp, wp)

    def bind(ins, outs):
        x, w, d = ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0]
        dt = x.dtype
        need_dx, need_dw = bool(outs.get("Input@GRAD")), bool(outs.get("Filter@GRAD"))
        x3, w4, d4 = _dw_views(k, x, w, d)
        dx3 = outs["Input@GRAD"][0].reshape(x3.shape) if need_dx else np.empty((0, 0, 0), dt)
        dw4 = outs["Filter@GRAD"][0].reshape(w4.shape) if need_dw else None
        xpads = np.zeros((T,) + xshape if need_dw else (T, 0, 0), dt)
        dpads = np.zeros((T,) + dshape if need_dx or fast else (T, 0, 0), dt)
        tmps = np.empty((T, k["h"] * dshape[1] if fast and need_dx else 0), dt)
        parts = np.zeros((T,) + w4.shape, dt)
        z = dt.type(0)
        flags = (k["c"], need_dx, need_dw, relu_in, k["pt"], k["pl"], k["sh"], k["sw"],
                 k["dh"], k["dw"], z)
        if T == 1:
            part = dw4 if need_dw else parts[0]
            calls = [] if not need_dw else [functools.partial(_zero, part)]
            calls.append(functools.partial(dw_bwd_range, x3, w4, d4, dx3, part, xpads[0],
                                           dpads[0], tmps[0], 0, x3.shape[0], *flags))
            return functools.partial(run_calls, tuple(calls))
        calls = [functools.partial(dw_bwd_parallel, x3, w4, d4, dx3, parts, xpads, dpads,
                                   tmps, *flags)]
        if need_dw:
            calls.append(functools.partial(sum_partials, parts, dw4))
        return functools.partial(run_calls, tuple(calls))
    return bind


# ---------------------------------------------------------------- GPU (conv_gpu.py)
def _relu_in(cop):
    return bool(cop.attrs.get("fuse_relu_before_depthwise_conv", False))


def _conv_gpu(cop):
    return conv_gpu.conv_forward(_geometry(cop), _relu_in(cop))


def _conv_grad_gpu(cop):
    return conv_gpu.conv_backward(_geometry(cop), _relu_in(cop))


# ---------------------------------------------------------------- registration
_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
          "data_format": "NCHW"}
_DW_ATTRS = dict(_ATTRS, fuse_relu_before_depthwise_conv=False)
_IN = (Slot("Input"), Slot("Filter"))
_GRAD_IN = (Slot("Input"), Slot("Filter"), Slot("Output@GRAD"))
_GRAD_OUT = (Slot("Input@GRAD", optional=True), Slot("Filter@GRAD", optional=True))

register_op(OpDef("conv2d", _IN, (Slot("Output"),), _conv_infer, _conv_cpu, gpu=_conv_gpu,
                  attrs=_ATTRS,
                  grad=_conv_grad_rule,
                  doc="2-D convolution, NCHW, Filter [M, C/groups, kh, kw]; no bias"))
register_op(OpDef("conv2d_grad", _GRAD_IN, _GRAD_OUT, _conv_grad_infer, _conv_grad_cpu,
                  gpu=_conv_grad_gpu, attrs=_ATTRS, traits=frozenset({NO_GRAD})))
register_op(OpDef("depthwise_conv2d", _IN, (Slot("Output"),), _conv_infer, _depthwise_cpu,
                  gpu=_conv_gpu, attrs=_DW_ATTRS, grad=_conv_grad_rule,
                  doc="depthwise 2-D convolution (groups == channels), Filter [C*mult, 1, kh, "
                      "kw]; optionally relu on Input first (fuse_relu_before_depthwise_conv)"))
register_op(OpDef("depthwise_conv2d_grad", _GRAD_IN, _GRAD_OUT, _conv_grad_infer,
                  _depthwise_grad_cpu, gpu=_conv_grad_gpu, attrs=_DW_ATTRS,
                  traits=frozenset({NO_GRAD})))
