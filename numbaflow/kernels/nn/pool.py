"""pool2d (max / avg) and pool2d_grad, Paddle's op contract.

Geometry follows Paddle's CPU kernels (paddle/phi/kernels/funcs/pooling.cc,
PoolOutputSize in pooling.h):

* out = (H + pad_top + pad_bottom - k) // s + 1, or with `ceil_mode`
  (H + pad_top + pad_bottom - k + s - 1) // s + 1 (no extra "last window must start inside
  the input" rule: a window may lie entirely in the padding; it then outputs 0 and gets no
  gradient, where Paddle would emit -FLT_MAX / divide by zero).
* window rows [oh*s - pad_top, min(oh*s - pad_top + k, H + pad_bottom)); padded cells
  never enter a max. Avg divides by the window clipped to the input (`exclusive=True`)
  or by the window clipped to the padded input (`exclusive=False`, Paddle's pool_size).
  Paddle clips at H + pad_top even for 4-element paddings; we clip at H + pad_bottom
  (the same when padding is symmetric, the only case Paddle documents).
* max gradient goes to the *first* maximum of each window in row-major order
  (Paddle's MaxPool2dGradFunctor, `stop` after the first x == out).
* `global_pooling`: the kernel is the whole plane, paddings 0, output 1x1.
* `adaptive`: `ksize` is the output size, Paddle's bins (adaptive_pool.py's kernels).
* `padding_algorithm`: "EXPLICIT" (use `paddings`), "VALID" (0) or "SAME"
  (out = ceil(H / s), the total padding split with the smaller half first).

NHWC inputs run the same loops on a transposed (N, C, H, W) view of the buffers.
The CUDA kernels (same rules; a gather for the gradient) are in conv_gpu.py.
"""
import functools

from numba import njit

from . import adaptive_pool, conv_gpu
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op


# ---------------------------------------------------------------- kernels
@njit(nogil=True, cache=True, inline="always")
def _window(o, s, pad_before, k, size, pad_after):
    """Window o along one axis: (start, end) within the padded input, and (start, end)
    clipped to the real input (empty when the window lies entirely in the padding)."""
    a = o * s - pad_before
    b = min(a + k, size + pad_after)
    return a, b, max(a, 0), min(b, size)


# The special paths (2x2 max forward, tiled backward) are separate kernels picked in
# Python when the kernel is bound (`_pool_cpu`, `_pool_grad_cpu`), so that a cold cache
# compiles only the path a program runs: the LeNet's pool2d_grad compiled in 1.8 s of
# CPU with the general loop behind a runtime test, 0.6 s as the tiled kernel alone.
@njit(nogil=True, cache=True, error_model="numpy")
def max2x2_fwd(x, out):
    """2x2 / stride 2 max with every window inside the input, unrolled over two rows."""
    N, C = x.shape[0], x.shape[1]
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            xp, op = x[n, c], out[n, c]
            for oh in range(OH):
                r0, r1, o = xp[2 * oh], xp[2 * oh + 1], op[oh]
                for ow in range(OW):
                    # row-major order, as the general loop (NaNs compare the same)
                    o[ow] = max(max(max(r0[2 * ow], r0[2 * ow + 1]), r1[2 * ow]),
                                r1[2 * ow + 1])


@njit(nogil=True, cache=True, error_model="numpy")
def pool2d_fwd(x, out, kh, kw, sh, sw, pt, pb, pl, pr, is_max, exclusive):
    N, C, H, W = x.shape
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                h0, h1, hs, he = _window(oh, sh, pt, kh, H, pb)
                for ow in range(OW):
                    w0, w1, ws, we = _window(ow, sw, pl, kw, W, pr)
                    if he <= hs or we <= ws:        # window entirely in the padding
                        out[n, c, oh, ow] = 0.0
                        continue
                    if is_max:
                        m = x[n, c, hs, ws]
                        for h in range(hs, he):
                            for w in range(ws, we):
                                m = max(m, x[n, c, h, w])
                        out[n, c, oh, ow] = m
                    else:
                        s = 0.0
                        for h in range(hs, he):
                            for w in range(ws, we):
                                s += x[n, c, h, w]
                        size = (he - hs) * (we - ws) if exclusive else (h1 - h0) * (w1 - w0)
                        out[n, c, oh, ow] = s / size


@njit(nogil=True, cache=True, error_model="numpy")
def max2x2_bwd(x, out, dout, dx):
    """tiled_bwd for 2x2 max windows, unrolled, one pass writing every dx cell once.

    The first-maximum masks are combined with `&` / `|` (not `and` / `or`, whose short
    circuits are branches) so the loop has no branch and LLVM vectorizes it: the
    branchy version mispredicted on the ties and values of real activations and took
    0.66 ms on the LeNet's (64,6,28,28) gradient, this one 0.24 ms (1 thread)."""
    N, C = x.shape[0], x.shape[1]
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            xp, op, dp, gp = x[n, c], out[n, c], dout[n, c], dx[n, c]
            for oh in range(OH):
                r0, r1, g0, g1 = xp[2 * oh], xp[2 * oh + 1], gp[2 * oh], gp[2 * oh + 1]
                orow, drow = op[oh], dp[oh]
                for ow in range(OW):
                    m, d = orow[ow], drow[ow]
                    a = r0[2 * ow] == m                         # the first maximum,
                    b = (r0[2 * ow + 1] == m) & (not a)         # row-major
                    ab = a | b
                    e = (r1[2 * ow] == m) & (not ab)
                    f = (r1[2 * ow + 1] == m) & (not (ab | e))
                    g0[2 * ow] = d if a else 0.0
                    g0[2 * ow + 1] = d if b else 0.0
                    g1[2 * ow] = d if e else 0.0
                    g1[2 * ow + 1] = d if f else 0.0


@njit(nogil=True, cache=True, error_model="numpy")
def tiled_bwd(x, out, dout, dx, kh, kw, is_max):
    """pool2d_bwd when the windows tile the input exactly (stride == kernel, no padding,
    no remainder: the usual 2x2 / stride 2): every input cell lies in one window, so each
    dx cell is written once (no zeroing pass, no read-modify-write): 8.8x faster than
    the general loop on the LeNet's pools."""
    N, C = x.shape[0], x.shape[1]
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            xp, op, dp, gp = x[n, c], out[n, c], dout[n, c], dx[n, c]
            for oh in range(OH):
                for ow in range(OW):
                    d = dp[oh, ow]
                    if is_max:
                        m = op[oh, ow]
                        found = False   # the first maximum (row-major) takes the gradient
                        for i in range(kh):
                            for j in range(kw):
                                first = not found and xp[oh * kh + i, ow * kw + j] == m
                                gp[oh * kh + i, ow * kw + j] = d if first else 0.0
                                found = found or first
                    else:
                        g = d / (kh * kw)
                        for i in range(kh):
                            for j in range(kw):
                                gp[oh * kh + i, ow * kw + j] = g


@njit(nogil=True, cache=True, error_model="numpy")
def pool2d_bwd(x, out, dout, dx, kh, kw, sh, sw, pt, pb, pl, pr, is_max, exclusive):
    N, C, H, W = x.shape
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            for h in range(H):
                for w in range(W):
                    dx[n, c, h, w] = 0.0
            for oh in range(OH):
                h0, h1, hs, he = _window(oh, sh, pt, kh, H, pb)
                for ow in range(OW):
                    w0, w1, ws, we = _window(ow, sw, pl, kw, W, pr)
                    if he <= hs or we <= ws:
                        continue
                    d = dout[n, c, oh, ow]
                    if is_max:
                        # the first maximum in row-major order takes the whole gradient
                        m = out[n, c, oh, ow]
                        done = False
                        for h in range(hs, he):
                            for w in range(ws, we):
                                if x[n, c, h, w] == m:
                                    dx[n, c, h, w] += d
                                    done = True
                                    break
                            if done:
                                break
                    else:
                        size = (he - hs) * (we - ws) if exclusive else (h1 - h0) * (w1 - w0)
                        g = d / size
                        for h in range(hs, he):
                            for w in range(ws, we):
                                dx[n, c, h, w] += g


# ---------------------------------------------------------------- geometry
def _pair(v, what, op="pool2d"):
    v = [int(d) for d in (v if isinstance(v, (list, tuple)) else [v, v])]
    if len(v) != 2:
        raise ValueError(f"{op}: {what} must have 2 elements [h, w], got {v}")
    return v


def _out_size(size, k, before, after, s, ceil_mode):
    if size < 0:
        return -1
    return (size - k + before + after + (s - 1 if ceil_mode else 0)) // s + 1


def pool_geometry(attrs, x_shape, err=ValueError, x_name="X"):
    """(kh, kw, sh, sw, pt, pb, pl, pr, OH, OW) for an NCHW / NHWC input shape.

    Raises `err(msg)` for a bad layout, kernel, stride, padding or an empty output.
    """
    fmt = attrs["data_format"]
    if fmt not in ("NCHW", "NHWC"):
        raise err(f"data_format must be 'NCHW' or 'NHWC', got {fmt!r}")
    if len(x_shape) != 4:
        raise err(f"{x_name} must be 4-D ({fmt}), got shape {tuple(x_shape)}")
    if attrs["pooling_type"] not in ("max", "avg"):
        raise err(f"pooling_type must be 'max' or 'avg', got {attrs['pooling_type']!r}")
    H, W = (x_shape[2], x_shape[3]) if fmt == "NCHW" else (x_shape[1], x_shape[2])
    kh, kw = _pair(attrs["ksize"], "ksize")
    if attrs["adaptive"] and not attrs["global_pooling"]:
        # ksize is the output size (adaptive_pool.py); strides and paddings are unused
        if min(kh, kw) <= 0:
            raise err(f"adaptive pooling's ksize is the output size and must be positive, "
                      f"got {[kh, kw]}")
        return kh, kw, 1, 1, 0, 0, 0, 0, kh, kw
    sh, sw = _pair(attrs["strides"], "strides")
    pads = [int(p) for p in attrs["paddings"]]
    if len(pads) == 2:
        pt, pb, pl, pr = pads[0], pads[0], pads[1], pads[1]
    elif len(pads) == 4:
        pt, pb, pl, pr = pads
    else:
        raise err(f"paddings must be [pad_h, pad_w] or [top, bottom, left, right], got {pads}")
    algo = attrs["padding_algorithm"]
    if attrs["global_pooling"]:
        kh, kw, pt, pb, pl, pr = H, W, 0, 0, 0, 0
        if H < 0 or W < 0:
            return kh, kw, sh, sw, pt, pb, pl, pr, 1, 1
    elif algo == "VALID":
        pt = pb = pl = pr = 0
    elif algo == "SAME":
        if H < 0 or W < 0:
            raise err(f"padding 'SAME' needs known spatial dims; {x_name} is {tuple(x_shape)}")
        pads = []
        for size, k, s in ((H, kh, sh), (W, kw, sw)):
            total = max(((size + s - 1) // s - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        pt, pb, pl, pr = pads
    elif algo != "EXPLICIT":
        raise err(f"padding_algorithm must be 'EXPLICIT', 'SAME' or 'VALID', got {algo!r}")
    if min(kh, kw) <= 0 or min(sh, sw) <= 0:
        raise err(f"ksize {[kh, kw]} and strides {[sh, sw]} must be positive")
    if min(pt, pb, pl, pr) < 0:
        raise err(f"paddings must be >= 0, got {[pt, pb, pl, pr]}")
    ceil = bool(attrs["ceil_mode"])
    OH = 1 if attrs["global_pooling"] else _out_size(H, kh, pt, pb, sh, ceil)
    OW = 1 if attrs["global_pooling"] else _out_size(W, kw, pl, pr, sw, ceil)
    if (H >= 0 and OH <= 0) or (W >= 0 and OW <= 0):
        raise err(f"output size {[OH, OW]} is not positive: {x_name} spatial size {[H, W]}, "
                  f"ksize {[kh, kw]}, strides {[sh, sw]}, paddings {[pt, pb, pl, pr]}; use a "
                  f"smaller kernel or more padding")
    return kh, kw, sh, sw, pt, pb, pl, pr, OH, OW


def _nchw(a, fmt):
    return a if fmt == "NCHW" else a.transpose(0, 3, 1, 2)


# ---------------------------------------------------------------- ops
def _pool_infer(ctx):
    x = ctx.input("X")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    g = pool_geometry(ctx.attrs, tuple(x.shape), ctx.error, f"X {ctx.name('X')}")
    OH, OW = g[8], g[9]
    N = x.shape[0]
    if ctx.attr("data_format") == "NCHW":
        shape = (N, x.shape[1], OH, OW)
    else:
        shape = (N, OH, OW, x.shape[3])
    return {"Out": VarInfo(shape, x.dtype)}


def _pool_args(cop):
    g = pool_geometry(cop.attrs, cop.input("X").shape)
    return g[:8] + (cop.attrs["pooling_type"] == "max", bool(cop.attrs["exclusive"]))


def _is_2x2_max(args, x, out):
    kh, kw, sh, sw, pt, pb, pl, pr, is_max, _ = args
    return (is_max and kh == kw == sh == sw == 2 and pt == pb == pl == pr == 0
            and 2 * out.shape[2] <= x.shape[2] and 2 * out.shape[3] <= x.shape[3])


def _is_tiled(args, x, out):
    """The windows tile the input exactly (stride == kernel, no padding, no remainder)."""
    kh, kw, sh, sw, pt, pb, pl, pr, _, _ = args
    return (kh == sh and kw == sw and pt == pb == pl == pr == 0
            and out.shape[2] * sh == x.shape[2] and out.shape[3] * sw == x.shape[3])


def _adaptive(cop):
    """(nhwc, is_max) when `cop` is an adaptive pool2d (adaptive_pool.py's kernels)."""
    a = cop.attrs
    if a["adaptive"] and not a["global_pooling"]:
        return a["data_format"] == "NHWC", a["pooling_type"] == "max"
    return None


def _pool_cpu(cop):
    if _adaptive(cop):
        return adaptive_pool.cpu_forward(*_adaptive(cop))
    args, fmt = _pool_args(cop), cop.attrs["data_format"]

    def bind(ins, outs):
        x, out = _nchw(ins["X"][0], fmt), _nchw(outs["Out"][0], fmt)
        if _is_2x2_max(args, x, out):
            return functools.partial(max2x2_fwd, x, out)
        return functools.partial(pool2d_fwd, x, out, *args)
    return bind


def _pool_grad_rule(g):
    g.append("pool2d_grad", {"X": g.fwd("X"), "Out": g.fwd("Out"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


def _pool_grad_cpu(cop):
    if _adaptive(cop):
        return adaptive_pool.cpu_backward(*_adaptive(cop))
    args, fmt = _pool_args(cop), cop.attrs["data_format"]

    def bind(ins, outs):
        x, out = _nchw(ins["X"][0], fmt), _nchw(ins["Out"][0], fmt)
        d, dx = _nchw(ins["Out@GRAD"][0], fmt), _nchw(outs["X@GRAD"][0], fmt)
        if _is_tiled(args, x, out):
            if args[8] and args[0] == args[1] == 2:
                return functools.partial(max2x2_bwd, x, out, d, dx)
            return functools.partial(tiled_bwd, x, out, d, dx, args[0], args[1], args[8])
        return functools.partial(pool2d_bwd, x, out, d, dx, *args)
    return bind


def _pool_gpu_args(cop):
    """(geo, nhwc, is_max, exclusive) for the CUDA kernels (conv_gpu.py)."""
    a = _pool_args(cop)
    return a[:8], cop.attrs["data_format"] == "NHWC", a[8], a[9]


def _pool_gpu(cop):
    if _adaptive(cop):
        return adaptive_pool.gpu_forward(*_adaptive(cop))
    return conv_gpu.pool_forward(*_pool_gpu_args(cop))


def _pool_grad_gpu(cop):
    if _adaptive(cop):
        return adaptive_pool.gpu_backward(*_adaptive(cop))
    return conv_gpu.pool_backward(*_pool_gpu_args(cop))


POOL_ATTRS = {"pooling_type": "max", "ksize": [1, 1], "strides": [1, 1], "paddings": [0, 0],
              "ceil_mode": False, "exclusive": True, "global_pooling": False, "adaptive": False,
              "data_format": "NCHW", "padding_algorithm": "EXPLICIT", "use_cudnn": True}
register_op(OpDef(
    "pool2d", (Slot("X"),), (Slot("Out"),), _pool_infer, _pool_cpu, gpu=_pool_gpu,
    attrs=dict(POOL_ATTRS),
    grad=_pool_grad_rule,
    doc="2-D max / avg pooling over NCHW (or NHWC) X; Paddle's window and ceil_mode rules"))
register_op(OpDef(
    "pool2d_grad", (Slot("X"), Slot("Out"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
    lambda ctx: {"X@GRAD": ctx.input("X")}, _pool_grad_cpu, gpu=_pool_grad_gpu,
    attrs=dict(POOL_ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="max: Out@GRAD to the first maximum of each window; avg: spread over the window"))
