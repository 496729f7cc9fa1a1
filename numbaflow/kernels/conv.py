"""2-D convolution (NCHW): `conv2d` with its gradient, and what `depthwise_conv2d`
(depthwise.py) shares with it: attributes, shape inference, geometry, GPU kernels.

conv2d runs im2col + BLAS: per (sample, group) the receptive fields are unrolled into a
columns buffer (allocated once at bind time) and multiplied by the group's filters with
`np.dot`. Measured side by side on the 2-core machine (loaded, load average 4.5),
(16,32,28,28) * (64,32,3,3) padding 1, f32, forward: im2col + BLAS 7.4 ms, a direct
numba loop (prange over samples, vectorised over output columns of a zero-padded
input) 39.8 ms; so there is no direct path. 1x1 convolutions with stride 1 and no
padding multiply the input planes directly (they already are the columns).

`fuse_relu_before_depthwise_conv` (set by a fusion pass, as Paddle's GPU pass does)
applies relu to Input inside the kernel; the grad then masks Input@GRAD by Input > 0.

Bias is not part of these ops: layers add it with `elementwise_add(axis=1)`, as Paddle;
fused_conv2d (conv_fused.py) runs these kernels with an epilogue (conv_epilogue.py) that
adds it (and a relu, a folded batch_norm) as each output block is written.

The CUDA kernels (direct: thread per output / dInput / dFilter element) are in conv_gpu.py.
"""
import functools

import numpy as np
from numba import njit

from . import conv_gpu
from .conv_epilogue import dout_epilogue, epilogue
from .registry import NO_GRAD, OpDef, Slot, VarInfo, register_op

# reassoc lets LLVM vectorise the dFilter dot products; contract allows FMAs.
_FM = {"reassoc", "contract"}
JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath=_FM)


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


def conv_infer(ctx):
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


def conv_grad_infer(ctx):
    # the forward's checks, and Output@GRAD must have the forward's Output shape: the
    # kernels index by these shapes (a mismatch would read and write out of bounds)
    out = conv_infer(ctx)["Output"].shape
    d = ctx.input("Output@GRAD")
    if len(d.shape) != 4 or any(a != b and -1 not in (a, b) for a, b in zip(d.shape, out)):
        raise ctx.error(f"Output@GRAD {ctx.name('Output@GRAD')} has shape {tuple(d.shape)}, "
                        f"but the convolution's Output has shape {out}")
    return {"Input@GRAD": ctx.input("Input"), "Filter@GRAD": ctx.input("Filter")}


def conv_grad_rule(g):
    g.append(g.op.type + "_grad",
             {"Input": g.fwd("Input"), "Filter": g.fwd("Filter"), "Output@GRAD": g.dout("Output")},
             {"Input@GRAD": g.dx("Input"), "Filter@GRAD": g.dx("Filter")}, dict(g.attrs))


def geometry(cop):
    """Everything a kernel specialises on, from the concrete shapes."""
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = conv_params(cop.attrs, cop.type)
    n, c, h, wd = cop.input("Input").shape
    m, cg, kh, kw = cop.input("Filter").shape
    oh, ow = _out_dim(h, kh, sh, pt, pb, dh), _out_dim(wd, kw, sw, pl, pr, dw)
    return dict(n=n, c=c, h=h, w=wd, m=m, cg=cg, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw,
                pt=pt, pb=pb, pl=pl, pr=pr, dh=dh, dw=dw, groups=int(cop.attrs["groups"]))




def zero(a):
    a[...] = 0


# ================================================================ conv2d: im2col + BLAS
@njit(**JIT)
def _span(j, W, OW, s, p, d):
    """The output columns [lo, hi) whose input column ow*s - p + j*d lies in [0, W)."""
    off = p - j * d
    lo = 0 if off <= 0 else (off + s - 1) // s
    hi = (W + off + s - 1) // s if W + off > 0 else 0
    return min(lo, OW), max(min(hi, OW), min(lo, OW))


@njit(**JIT)
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


@njit(**JIT)
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


# Stride 1, dilation 1 (most convolutions): the input plane is first copied into a
# zero-bordered plane `xp` (allocated once, border never written), so every columns row
# is a branch-free copy of contiguous runs; col2im accumulates into such a plane `gp` and
# copies its interior out. On the LeNet's convolutions: im2col 1.26 -> 0.20 / 0.25 ms,
# col2im 1.03 -> 0.24 / 1.30 -> 0.28 ms (64 samples, 1 thread), where the GEMMs take
# 0.15-0.67 ms: the unrolling, not BLAS, was most of the time.
@njit(**JIT)
def im2col_unit(x, xp, cols, kh, kw, pt, pl, OH, OW):
    C, H, W = x.shape
    for c in range(C):
        for h in range(H):
            for w in range(W):
                xp[c, h + pt, w + pl] = x[c, h, w]
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                row = cols[(c * kh + i) * kw + j]
                for oh in range(OH):
                    src = xp[c, oh + i]
                    for ow in range(OW):
                        row[oh * OW + ow] = src[ow + j]


@njit(**JIT)
def col2im_unit(cols, gp, dx, kh, kw, pt, pl, OH, OW):
    """dx = the adjoint of im2col_unit applied to cols (dx is overwritten)."""
    C, H, W = dx.shape
    gp[:] = 0
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                row = cols[(c * kh + i) * kw + j]
                for oh in range(OH):
                    dst = gp[c, oh + i]
                    for ow in range(OW):
                        dst[ow + j] += row[oh * OW + ow]
    for c in range(C):
        for h in range(H):
            for w in range(W):
                dx[c, h, w] = gp[c, h + pt, w + pl]


# Each kernel below is one path (strided / unit-stride, forward / backward), picked in
# Python at bind time, so that a cold cache compiles only the path a program runs: with
# both paths in one kernel behind a runtime test, the LeNet's conv backward took 2.3 s
# of CPU to compile, 1.3 s without the strided path.
@njit(**JIT)
def conv_fwd(x5, w3, out4, cols, mul2, add2, epi, act, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW):
    """x5 (N, G, Cg, H, W), w3 (G, Mg, K), out4 (N, G, Mg, OH*OW), cols (K, OH*OW);
    mul2, add2 (G, Mg): the epilogue's."""
    for n in range(x5.shape[0]):
        for g in range(x5.shape[1]):
            im2col(x5[n, g], cols, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW)
            np.dot(w3[g], cols, out4[n, g])
            epilogue(out4[n, g], mul2[g], add2[g], epi, act)


@njit(**JIT)
def conv_fwd_unit(x5, w3, out4, cols, xp, mul2, add2, epi, act, kh, kw, pt, pl, OH, OW):
    """conv_fwd for stride 1 / dilation 1; xp: the zero-bordered plane of im2col_unit."""
    for n in range(x5.shape[0]):
        for g in range(x5.shape[1]):
            im2col_unit(x5[n, g], xp, cols, kh, kw, pt, pl, OH, OW)
            np.dot(w3[g], cols, out4[n, g])
            epilogue(out4[n, g], mul2[g], add2[g], epi, act)


@njit(**JIT)
def conv1x1_fwd(x4, w3, out4, mul2, add2, epi, act):
    """1x1, stride 1, no padding: x4 (N, G, Cg, H*W) already is the columns."""
    for n in range(x4.shape[0]):
        for g in range(x4.shape[1]):
            np.dot(w3[g], x4[n, g], out4[n, g])
            epilogue(out4[n, g], mul2[g], add2[g], epi, act)


@njit(**JIT)
def _add_dfilter(d, cols, tmpw, dwg):
    """dwg += d @ cols.T (tmpw: scratch). A loop, not `dwg += tmpw`: numba compiles that
    array expression for ~3 s of CPU on a cold cache, the rest of conv_bwd in ~1.3 s."""
    np.dot(d, cols.T, tmpw)
    for i in range(tmpw.shape[0]):
        for j in range(tmpw.shape[1]):
            dwg[i, j] += tmpw[i, j]


# The backward kernels take the epilogue's gradient too (fused_conv2d_grad): o4 (the
# Output, read when act), dm (Mg, OH*OW scratch) and db2 (G, Mg, the bias gradient);
# plain conv2d_grad passes need_db = act = False and empty arrays.
@njit(**JIT)
def conv_bwd(x5, w3, d4, dx5, dw3, cols, dcols, tmpw, need_dx, need_dw,
             o4, dm, db2, need_db, act, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW):
    """dFilter_g = sum_n dOut[n, g] @ cols(x[n, g])^T; dInput[n, g] = col2im(W_g^T @ dOut[n, g])."""
    if need_dw:
        dw3[:] = 0
    if need_dx:
        dx5[:] = 0
    if need_db:
        db2[:] = 0
    for n in range(d4.shape[0]):
        for g in range(d4.shape[1]):
            d = dout_epilogue(d4[n, g], o4[n, g], dm, db2[g], need_db, act)
            if need_dw:
                im2col(x5[n, g], cols, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW)
                _add_dfilter(d, cols, tmpw, dw3[g])
            if need_dx:
                np.dot(w3[g].T, d, dcols)
                col2im(dcols, dx5[n, g], kh, kw, sh, sw, pt, pl, dh, dw, OH, OW)


@njit(**JIT)
def conv_bwd_unit(x5, w3, d4, dx5, dw3, cols, dcols, tmpw, xp, gp, need_dx, need_dw,
                  o4, dm, db2, need_db, act, kh, kw, pt, pl, OH, OW):
    """conv_bwd for stride 1 / dilation 1; xp, gp: the zero-bordered planes of
    im2col_unit / col2im_unit (col2im_unit overwrites dInput: no zeroing pass)."""
    if need_dw:
        dw3[:] = 0
    if need_db:
        db2[:] = 0
    for n in range(d4.shape[0]):
        for g in range(d4.shape[1]):
            d = dout_epilogue(d4[n, g], o4[n, g], dm, db2[g], need_db, act)
            if need_dw:
                im2col_unit(x5[n, g], xp, cols, kh, kw, pt, pl, OH, OW)
                _add_dfilter(d, cols, tmpw, dw3[g])
            if need_dx:
                np.dot(w3[g].T, d, dcols)
                col2im_unit(dcols, gp, dx5[n, g], kh, kw, pt, pl, OH, OW)


@njit(**JIT)
def conv1x1_bwd(x4, w3, d4, dx4, dw3, tmpw, need_dx, need_dw, o4, dm, db2, need_db, act):
    if need_dw:
        dw3[:] = 0
    if need_db:
        db2[:] = 0
    for n in range(d4.shape[0]):
        for g in range(d4.shape[1]):
            d = dout_epilogue(d4[n, g], o4[n, g], dm, db2[g], need_db, act)
            if need_dw:
                _add_dfilter(d, x4[n, g], tmpw, dw3[g])
            if need_dx:
                np.dot(w3[g].T, d, dx4[n, g])


def _is_1x1(k):
    return (k["kh"] == k["kw"] == 1 and k["sh"] == k["sw"] == 1
            and k["pt"] == k["pb"] == k["pl"] == k["pr"] == 0)


def _is_unit(k):
    """Stride 1 and dilation 1: the im2col_unit / col2im_unit paths."""
    return k["sh"] == k["sw"] == k["dh"] == k["dw"] == 1


def _views(k, x, w, d):
    """(x5, w3, out4) views of Input, Filter and Output (or its gradient)."""
    G = k["groups"]
    x5 = x.reshape(k["n"], G, k["c"] // G, k["h"], k["w"])
    w3 = w.reshape(G, k["m"] // G, k["cg"] * k["kh"] * k["kw"])
    d4 = d.reshape(k["n"], G, k["m"] // G, k["oh"] * k["ow"])
    return x5, w3, d4


def _padded_plane(k, dtype):
    """The zero-bordered (Cg, H + pt + pb, W + pl + pr) plane of im2col_unit / col2im_unit."""
    return np.zeros((k["cg"], k["h"] + k["pt"] + k["pb"], k["w"] + k["pl"] + k["pr"]), dtype)


def _geo_args(k):
    """The trailing geometry arguments of the strided kernels."""
    return (k["kh"], k["kw"], k["sh"], k["sw"], k["pt"], k["pl"], k["dh"], k["dw"],
            k["oh"], k["ow"])


def _unit_args(k):
    """The trailing geometry arguments of the unit-stride kernels."""
    return k["kh"], k["kw"], k["pt"], k["pl"], k["oh"], k["ow"]


def no_epilogue(k, dtype):
    """The empty (G, 0) per-channel array of a kernel argument the epilogue does not use."""
    return np.zeros((k["groups"], 0), dtype)


def forward_thunk(cop, x, w, out, mul=None, add=None, act=False):
    """The forward kernel of `cop`'s path (1x1 / unit stride / strided) bound to Input `x`,
    Filter `w` and Output `out`, with the epilogue `out = act(out * mul + add)` (mul, add:
    per output channel, (M,) arrays or None)."""
    k = geometry(cop)
    x5, w3, out4 = _views(k, x, w, out)
    none = no_epilogue(k, x.dtype)
    epi = 0 if add is None else 1 if mul is None else 2
    mul2 = none if mul is None else mul.reshape(w3.shape[:2])
    add2 = none if add is None else add.reshape(w3.shape[:2])
    epi_args = (mul2, add2, epi, int(act))
    if _is_1x1(k):
        return functools.partial(conv1x1_fwd, x5.reshape(x5.shape[:3] + (-1,)), w3, out4,
                                 *epi_args)
    cols = np.empty((w3.shape[2], k["oh"] * k["ow"]), x.dtype)
    if _is_unit(k):
        return functools.partial(conv_fwd_unit, x5, w3, out4, cols, _padded_plane(k, x.dtype),
                                 *epi_args, *_unit_args(k))
    return functools.partial(conv_fwd, x5, w3, out4, cols, *epi_args, *_geo_args(k))


def backward_thunk(cop, x, w, d, dx=None, dw=None, out=None, db=None, act=False):
    """The backward kernel of `cop`'s path bound to Input `x`, Filter `w`, Output@GRAD `d`
    and the gradients wanted (dx, dw, the bias gradient db: None when not); with `act`
    (relu) d is first masked by Output `out` > 0."""
    k = geometry(cop)
    x5, w3, d4 = _views(k, x, w, d)
    need_dx, need_dw, need_db = dx is not None, dw is not None, db is not None
    dx5 = dx.reshape(x5.shape) if need_dx else np.empty((0,) * 5, x.dtype)
    dw3 = dw.reshape(w3.shape) if need_dw else np.empty((0,) * 3, x.dtype)
    tmpw = np.empty(w3.shape[1:], x.dtype)
    epi_args = (out.reshape(d4.shape) if act else d4,
                np.empty(d4.shape[2:] if act else (0, 0), x.dtype),
                db.reshape(w3.shape[:2]) if need_db else no_epilogue(k, x.dtype),
                need_db, bool(act))
    if _is_1x1(k):
        flat = x5.shape[:3] + (-1,)
        dx4 = dx5.reshape(flat) if need_dx else np.empty((0,) * 4, x.dtype)
        return functools.partial(conv1x1_bwd, x5.reshape(flat), w3, d4, dx4, dw3, tmpw,
                                 need_dx, need_dw, *epi_args)
    cols = np.empty((w3.shape[2], k["oh"] * k["ow"]), x.dtype)
    dcols = np.empty_like(cols) if need_dx else cols
    if _is_unit(k):
        return functools.partial(conv_bwd_unit, x5, w3, d4, dx5, dw3, cols, dcols, tmpw,
                                 _padded_plane(k, x.dtype), _padded_plane(k, x.dtype),
                                 need_dx, need_dw, *epi_args, *_unit_args(k))
    return functools.partial(conv_bwd, x5, w3, d4, dx5, dw3, cols, dcols, tmpw,
                             need_dx, need_dw, *epi_args, *_geo_args(k))


def grad_out(outs, slot):
    """The array of optional output `slot`, or None when the op does not compute it."""
    return outs[slot][0] if outs.get(slot) and outs[slot][0].size > 0 else None


def _conv_cpu(cop):
    def bind(ins, outs):
        return forward_thunk(cop, ins["Input"][0], ins["Filter"][0], outs["Output"][0])
    return bind


def _conv_grad_cpu(cop):
    def bind(ins, outs):
        return backward_thunk(cop, ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0],
                              grad_out(outs, "Input@GRAD"), grad_out(outs, "Filter@GRAD"))
    return bind


# ---------------------------------------------------------------- GPU (conv_gpu.py)
def _relu_in(cop):
    return bool(cop.attrs.get("fuse_relu_before_depthwise_conv", False))


def gpu_forward(cop, epilogue=None):
    """The GPU factory body of `cop`'s forward (conv_gpu.conv_forward's `epilogue`)."""
    return conv_gpu.conv_forward(geometry(cop), _relu_in(cop), epilogue)


def gpu_backward(cop, out=None, act=False):
    """The GPU factory body of `cop`'s gradient (conv_gpu.conv_backward's out / act)."""
    return conv_gpu.conv_backward(geometry(cop), _relu_in(cop), out, act)


def conv_gpu_forward(cop):
    return gpu_forward(cop)


def conv_gpu_backward(cop):
    return gpu_backward(cop)


# ---------------------------------------------------------------- registration
ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
          "data_format": "NCHW"}
IN_SLOTS = (Slot("Input"), Slot("Filter"))
GRAD_IN_SLOTS = (Slot("Input"), Slot("Filter"), Slot("Output@GRAD"))
GRAD_OUT_SLOTS = (Slot("Input@GRAD", optional=True), Slot("Filter@GRAD", optional=True))

register_op(OpDef("conv2d", IN_SLOTS, (Slot("Output"),), conv_infer, _conv_cpu, gpu=conv_gpu_forward,
                  attrs=ATTRS,
                  grad=conv_grad_rule,
                  doc="2-D convolution, NCHW, Filter [M, C/groups, kh, kw]; no bias"))
register_op(OpDef("conv2d_grad", GRAD_IN_SLOTS, GRAD_OUT_SLOTS, conv_grad_infer, _conv_grad_cpu,
                  gpu=conv_gpu_backward, attrs=ATTRS, traits=frozenset({NO_GRAD})))
