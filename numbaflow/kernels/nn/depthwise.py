"""depthwise_conv2d kernels (CPU): each input channel convolved with its own filters.

Memory-bound, so no im2col: each input plane is copied once into a zero-padded
per-thread buffer (borders stay zero: only the interior is ever written), and the
output rows are computed from shifted rows of that buffer, which vectorise without
bounds checks. 3x3 / stride 1 / dilation 1 has an unrolled path. The backward pass
handles one input plane per step and computes dInput (a gather over a zero-padded dOut
plane for stride 1, a scatter otherwise) and dFilter (per-thread partial sums, added
at the end, so no two threads write the same element). With
`fuse_relu_before_depthwise_conv` the relu is applied while a plane is padded, and the
input gradient is masked by Input > 0.

Shapes, attributes, the gradient rule and the CUDA kernels are conv2d's (conv.py).
"""
import functools

import numpy as np
from numba import njit

from .conv import (ATTRS, GRAD_IN_SLOTS, GRAD_OUT_SLOTS, IN_SLOTS, conv_gpu_backward, conv_grad_infer,
    conv_grad_rule, conv_gpu_forward, conv_infer, geometry, zero)
from .conv_im2col import JIT, parallel_threads, sum_partials
from ..workshare import bind_workers, claim
from ..registry import NO_GRAD, OpDef, Slot, register_op, run_calls


@njit(**JIT)
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
@njit(**JIT)
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


@njit(**JIT)
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


@njit(**JIT)
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


@njit(**JIT)
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


@njit(**JIT)
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


@njit(**JIT)
def dw_fwd_worker(x3, w4, out4, C, pt, pl, sh, sw, dh, dw, relu_in, block, pad, tmp, counter):
    """dw_fwd_range over blocks of `block` planes claimed from `counter` (workshare.py)."""
    P = x3.shape[0]
    p0 = claim(counter) * block
    while p0 < P:
        dw_fwd_range(x3, w4, out4, pad, tmp, p0, min(p0 + block, P), C, pt, pl, sh, sw, dh, dw,
                     relu_in)
        p0 = claim(counter) * block


@njit(**JIT)
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


@njit(**JIT)
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


@njit(**JIT)
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


@njit(**JIT)
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


@njit(**JIT)
def dw_bwd_worker(x3, w4, d4, dx3, C, need_dx, need_dw, relu_in, pt, pl, sh, sw, dh, dw, z, block,
                  dwp, xpad, dpad, tmp, counter):
    """dw_bwd_range over blocks of `block` planes claimed from `counter`, summing dFilter
    into this worker's partial `dwp` (zeroed first: a worker may claim nothing)."""
    flat = dwp.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] = 0
    P = x3.shape[0]
    p0 = claim(counter) * block
    while p0 < P:
        dw_bwd_range(x3, w4, d4, dx3, dwp, xpad, dpad, tmp, p0, min(p0 + block, P), C, need_dx,
                     need_dw, relu_in, pt, pl, sh, sw, dh, dw, z)
        p0 = claim(counter) * block


def _block(planes, T):
    """Planes per claim: about four claims per worker, room to rebalance on a busy machine."""
    return max(1, planes // (4 * T))


def _threads(k):
    work = k["n"] * k["m"] * k["oh"] * k["ow"] * k["kh"] * k["kw"]
    return parallel_threads(work, k["n"] * k["c"])


def _dw_views(k, x, w, d):
    C, mult = k["c"], k["m"] // k["c"]
    return (x.reshape(k["n"] * C, k["h"], k["w"]), w.reshape(C, mult, k["kh"], k["kw"]),
            d.reshape(k["n"] * C, mult, k["oh"], k["ow"]))


def _fast3(k):
    """The flat 3x3 / stride 1 / dilation 1 path applies."""
    return (k["kh"] == k["kw"] == 3 and k["sh"] == k["sw"] == 1 and k["dh"] == k["dw"] == 1)


def _depthwise_cpu(cop):
    k = geometry(cop)
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
        return bind_workers(dw_fwd_worker, (x3, w4, out4, k["c"], *geo, _block(x3.shape[0], T)),
                           list(zip(pads, tmps)))
    return bind


def _depthwise_grad_cpu(cop):
    k = geometry(cop)
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
            calls = [] if not need_dw else [functools.partial(zero, part)]
            calls.append(functools.partial(dw_bwd_range, x3, w4, d4, dx3, part, xpads[0],
                                           dpads[0], tmps[0], 0, x3.shape[0], *flags))
            return functools.partial(run_calls, tuple(calls))
        calls = [bind_workers(dw_bwd_worker, (x3, w4, d4, dx3, *flags, _block(x3.shape[0], T)),
                             list(zip(parts, xpads, dpads, tmps)))]
        if need_dw:
            calls.append(functools.partial(sum_partials, parts.reshape(T, -1), dw4.reshape(-1)))
        return functools.partial(run_calls, tuple(calls))
    return bind


_DW_ATTRS = dict(ATTRS, fuse_relu_before_depthwise_conv=False)

register_op(OpDef("depthwise_conv2d", IN_SLOTS, (Slot("Output"),), conv_infer, _depthwise_cpu,
                  gpu=conv_gpu_forward, attrs=_DW_ATTRS, grad=conv_grad_rule,
                  doc="depthwise 2-D convolution (groups == channels), Filter [C*mult, 1, kh, "
                      "kw]; optionally relu on Input first (fuse_relu_before_depthwise_conv)"))
register_op(OpDef("depthwise_conv2d_grad", GRAD_IN_SLOTS, GRAD_OUT_SLOTS, conv_grad_infer,
                  _depthwise_grad_cpu, gpu=conv_gpu_backward, attrs=_DW_ATTRS,
                  traits=frozenset({NO_GRAD})))
