"""`pool3d` (max / avg over the D, H, W dims of NCDHW or NDHWC X) and `pool3d_grad`,
Paddle's op contract; the window rules are pool.py's (pool2d), one more dim:

* out = (n + p_before + p_after - k) // s + 1 (`ceil_mode`: + s - 1 before the division);
  window o of an axis covers [o*s - p_before, min(o*s - p_before + k, n + p_after)),
  clipped to the input; a window wholly in the padding outputs 0 and takes no gradient.
* avg divides by the clipped window (`exclusive`) or by the window in the padded input;
  max gives the gradient to the window's *first* maximum in (d, h, w) row-major order.
* `adaptive`: ksize is the output size, cell o covers [floor(o n / O), ceil((o+1) n / O));
  `global_pooling`: one window over the whole volume.
* `paddings`: [p], [pd, ph, pw] or [front, back, top, bottom, left, right];
  `padding_algorithm` 'SAME' / 'VALID' override them as in pool2d.

The windows are index tables made at bind time, per axis a (3, O) array of rows
(start, end, padded size), so one kernel serves the plain, adaptive and global pools.
CPU kernels run on (N, C, D, H, W) views (NDHWC: transposed views); the CUDA kernels on
flat buffers with (n, c, d, h, w) element strides, the gradient as a thread per Out
element adding into a zeroed X@GRAD with atomics (windows may overlap).
"""
import functools

import numpy as np
from numba import float64, njit

from ..gpu import gpu_util
from .conv_gpu import launch, layout
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls

cuda = None   # numba.cuda, bound by `kernels()` on first use


# ---------------------------------------------------------------- geometry
def triple(v, what, err):
    """[d, h, w] from an int or 1 or 3 ints; `err(msg)` otherwise."""
    v = [int(d) for d in (v if isinstance(v, (list, tuple)) else [v])]
    v = v * 3 if len(v) == 1 else v
    if len(v) != 3:
        raise err(f"{what} must have 1 or 3 elements [d, h, w], got {v}")
    return v


def _spatial(attrs, shape, err, x_name="X"):
    fmt = attrs["data_format"]
    if fmt not in ("NCDHW", "NDHWC"):
        raise err(f"data_format must be 'NCDHW' or 'NDHWC', got {fmt!r}")
    if len(shape) != 5:
        raise err(f"{x_name} must be 5-D ({fmt}), got shape {tuple(shape)}")
    return list(shape[2:]) if fmt == "NCDHW" else list(shape[1:4])


def windows(attrs, shape, err=ValueError, x_name="X"):
    """Per spatial axis (size, k, s, p_before, p_after, out, adaptive)."""
    if attrs["pooling_type"] not in ("max", "avg"):
        raise err(f"pooling_type must be 'max' or 'avg', got {attrs['pooling_type']!r}")
    sizes = _spatial(attrs, shape, err, x_name)
    k = triple(attrs["ksize"], "ksize", err)
    if attrs["global_pooling"]:
        return [(n, n, 1, 0, 0, 1, False) for n in sizes]
    if attrs["adaptive"]:
        if min(k) <= 0:
            raise err(f"adaptive pooling's ksize is the output size and must be positive, "
                      f"got {k}")
        return [(n, o, 1, 0, 0, o, True) for n, o in zip(sizes, k)]
    s = triple(attrs["strides"], "strides", err)
    p = [int(v) for v in attrs["paddings"]]
    p = p * 6 if len(p) == 1 else [p[0], p[0], p[1], p[1], p[2], p[2]] if len(p) == 3 else p
    if len(p) != 6:
        raise err(f"paddings must be [p], [pd, ph, pw] or [front, back, top, bottom, left, "
                  f"right], got {attrs['paddings']}")
    algo = attrs["padding_algorithm"]
    if algo == "VALID":
        p = [0] * 6
    elif algo == "SAME":
        if min(sizes) < 0:
            raise err(f"padding 'SAME' needs known spatial dims; {x_name} is {tuple(shape)}")
        p = []
        for n, kk, ss in zip(sizes, k, s):
            total = max(((n + ss - 1) // ss - 1) * ss + kk - n, 0)
            p += [total // 2, total - total // 2]
    elif algo != "EXPLICIT":
        raise err(f"padding_algorithm must be 'EXPLICIT', 'SAME' or 'VALID', got {algo!r}")
    if min(k) <= 0 or min(s) <= 0 or min(p) < 0:
        raise err(f"ksize {k} and strides {s} must be positive and paddings {p} >= 0")
    out = []
    for i, n in enumerate(sizes):
        o = -1 if n < 0 else (n + p[2 * i] + p[2 * i + 1] - k[i]
                              + (s[i] - 1 if attrs["ceil_mode"] else 0)) // s[i] + 1
        if n >= 0 and o <= 0:
            raise err(f"output size {o} is not positive: {x_name} spatial size {sizes}, ksize "
                      f"{k}, strides {s}, paddings {p}; use a smaller kernel or more padding")
        out.append((n, k[i], s[i], p[2 * i], p[2 * i + 1], o, False))
    return out


def axis_table(size, k, s, before, after, out, adaptive):
    """(3, out) int64 rows: window start and end within the input, and the padded size."""
    o = np.arange(out)
    if adaptive:
        lo, hi = (o * size) // out, -((-(o + 1) * size) // out)
        return np.stack([lo, hi, hi - lo]).astype(np.int64)
    a = o * s - before
    b = np.minimum(a + k, size + after)
    return np.stack([np.maximum(a, 0), np.minimum(b, size), b - a]).astype(np.int64)


def tables(cop):
    return [axis_table(*w) for w in windows(cop.attrs, cop.input("X").shape)]


def _ncdhw(a, last):
    return a.transpose(0, 4, 1, 2, 3) if last else a


# ---------------------------------------------------------------- CPU kernels
@njit(nogil=True, cache=True, inline="always")
def _cell(td, th, tw, a, b, e, exclusive):
    """Out cell (a, b, e)'s window (d0, d1, h0, h1, w0, w1) and its avg divisor."""
    d0, d1, h0, h1, w0, w1 = td[0, a], td[1, a], th[0, b], th[1, b], tw[0, e], tw[1, e]
    size = (d1 - d0) * (h1 - h0) * (w1 - w0) if exclusive else td[2, a] * th[2, b] * tw[2, e]
    return d0, d1, h0, h1, w0, w1, size


@njit(nogil=True, cache=True, error_model="numpy")
def pool3d_fwd(x, out, td, th, tw, is_max, exclusive):
    for n, c, a, b, e in np.ndindex(out.shape):
        d0, d1, h0, h1, w0, w1, size = _cell(td, th, tw, a, b, e, exclusive)
        if d1 <= d0 or h1 <= h0 or w1 <= w0:      # a window wholly in the padding
            out[n, c, a, b, e] = 0.0
            continue
        win = x[n, c, d0:d1, h0:h1, w0:w1]
        m, acc = win[0, 0, 0], 0.0
        for v in win.flat:
            m = max(m, v)
            acc += v
        out[n, c, a, b, e] = m if is_max else acc / size


@njit(nogil=True, cache=True, error_model="numpy")
def pool3d_bwd(x, out, dout, dx, td, th, tw, is_max, exclusive):
    dx[...] = 0.0
    for n, c, a, b, e in np.ndindex(out.shape):
        d0, d1, h0, h1, w0, w1, size = _cell(td, th, tw, a, b, e, exclusive)
        g, m, done = dout[n, c, a, b, e], out[n, c, a, b, e], False
        for z in range(d0, d1):
            for y in range(h0, h1):
                for u in range(w0, w1):
                    if not is_max:
                        dx[n, c, z, y, u] += g / size
                    elif not done and x[n, c, z, y, u] == m:   # the first maximum
                        dx[n, c, z, y, u] += g
                        done = True


def _flags(cop):
    return cop.attrs["pooling_type"] == "max", bool(cop.attrs["exclusive"]) or \
        bool(cop.attrs["adaptive"])


def _cpu(cop):
    t, last = tables(cop), cop.attrs["data_format"] == "NDHWC"

    def bind(ins, outs):
        return functools.partial(pool3d_fwd, _ncdhw(ins["X"][0], last),
                                 _ncdhw(outs["Out"][0], last), *t, *_flags(cop))
    return bind


def _grad_cpu(cop):
    t, last = tables(cop), cop.attrs["data_format"] == "NDHWC"

    def bind(ins, outs):
        x, out, d = (_ncdhw(ins[s][0], last) for s in ("X", "Out", "Out@GRAD"))
        return functools.partial(pool3d_bwd, x, out, d, _ncdhw(outs["X@GRAD"][0], last), *t,
                                 *_flags(cop))
    return bind


# ---------------------------------------------------------------- CUDA
@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(device=True)
    def window(o, oshape, xs, os, td, th, tw):
        """Out element o's (x base offset, out offset, d0, d1, h0, h1, w0, w1, padded size)."""
        e = o % oshape[4]
        t = o // oshape[4]
        b = t % oshape[3]
        t //= oshape[3]
        a = t % oshape[2]
        t //= oshape[2]
        c = t % oshape[1]
        n = t // oshape[1]
        return (n * xs[0] + c * xs[1], n * os[0] + c * os[1] + a * os[2] + b * os[3] + e * os[4],
                td[0, a], td[1, a], th[0, b], th[1, b], tw[0, e], tw[1, e],
                td[2, a] * th[2, b] * tw[2, e])

    @cuda.jit(cache=True)
    def fwd(x, out, oshape, xs, os, td, th, tw, is_max, exclusive):
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            base, oi, d0, d1, h0, h1, w0, w1, full = window(o, oshape, xs, os, td, th, tw)
            if d1 <= d0 or h1 <= h0 or w1 <= w0:
                out[oi] = 0.0
                continue
            m = x[base + d0 * xs[2] + h0 * xs[3] + w0 * xs[4]]
            acc = 0.0
            for z in range(d0, d1):
                for y in range(h0, h1):
                    for u in range(w0, w1):
                        v = x[base + z * xs[2] + y * xs[3] + u * xs[4]]
                        m = v if v > m else m
                        acc += float64(v)
            size = (d1 - d0) * (h1 - h0) * (w1 - w0) if exclusive else full
            out[oi] = m if is_max else acc / size

    @cuda.jit(cache=True)
    def bwd(x, out, dout, dx, oshape, xs, os, td, th, tw, is_max, exclusive):
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            base, oi, d0, d1, h0, h1, w0, w1, full = window(o, oshape, xs, os, td, th, tw)
            if d1 <= d0 or h1 <= h0 or w1 <= w0:
                continue
            g, m, done = dout[oi], out[oi], False
            if not is_max:
                g = g / ((d1 - d0) * (h1 - h0) * (w1 - w0) if exclusive else full)
            for z in range(d0, d1):
                for y in range(h0, h1):
                    for u in range(w0, w1):
                        xi = base + z * xs[2] + y * xs[3] + u * xs[4]
                        if not is_max or (not done and x[xi] == m):
                            cuda.atomic.add(dx, xi, g)
                            done = True

    return gpu_util.Kernels(fwd=fwd, bwd=bwd)


def _gpu_args(cop, x, out):
    last = cop.attrs["data_format"] == "NDHWC"
    (_, xs), (oshape, os) = layout(x.shape, last), layout(out.shape, last)
    return (oshape, xs, os, *[gpu_util.to_device(t) for t in tables(cop)], *_flags(cop))


def _gpu(cop):
    def bind(ins, outs):
        x, out, f = ins["X"][0], outs["Out"][0], gpu_util.flat
        return launch(kernels().fwd, out.size, f(x), f(out), *_gpu_args(cop, x, out))
    return bind


def _grad_gpu(cop):
    def bind(ins, outs):
        x, out, d, dx, f = ins["X"][0], ins["Out"][0], ins["Out@GRAD"][0], outs["X@GRAD"][0], \
            gpu_util.flat
        return functools.partial(run_calls, (
            gpu_util.fill_thunk(dx, 0.0),
            launch(kernels().bwd, out.size, f(x), f(out), f(d), f(dx), *_gpu_args(cop, x, out))))
    return bind


# ---------------------------------------------------------------- ops
def _infer(ctx):
    x = ctx.input("X")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    out = tuple(w[5] for w in windows(ctx.attrs, tuple(x.shape), ctx.error,
                                      f"X {ctx.name('X')}"))
    n, c = x.shape[0], x.shape[1 if ctx.attr("data_format") == "NCDHW" else 4]
    shape = (n, c) + out if ctx.attr("data_format") == "NCDHW" else (n,) + out + (c,)
    return {"Out": VarInfo(shape, x.dtype)}


def _grad_rule(g):
    g.append("pool3d_grad", {"X": g.fwd("X"), "Out": g.fwd("Out"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


ATTRS = {"pooling_type": "max", "ksize": [1, 1, 1], "strides": [1, 1, 1],
         "paddings": [0, 0, 0], "ceil_mode": False, "exclusive": True, "global_pooling": False,
         "adaptive": False, "data_format": "NCDHW", "padding_algorithm": "EXPLICIT",
         "use_cudnn": False}
register_op(OpDef(
    "pool3d", (Slot("X"),), (Slot("Out"),), _infer, _cpu, gpu=_gpu, attrs=dict(ATTRS),
    grad=_grad_rule,
    doc="3-D max / avg pooling over NCDHW (or NDHWC) X; pool2d's window and ceil_mode rules"))
register_op(OpDef(
    "pool3d_grad", (Slot("X"), Slot("Out"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
    lambda ctx: {"X@GRAD": ctx.input("X")}, _grad_cpu, gpu=_grad_gpu, attrs=dict(ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="max: Out@GRAD to the first maximum of each window; avg: spread over the window"))
