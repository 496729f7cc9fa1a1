"""Convolutions on activations kept in channel blocks (NCHWc) between layers, CPU only: the
ops the nchwc_layout pass (graph/passes/nchwc_layout.py) puts into an inference program.

A blocked activation is (N, C/L, H + 2, W + 2, L), L = conv_nchwc.LANES (16 with AVX-512,
else 8), zero outside the H x W interior (a border of 1: the padding of a 3x3 pad-1 conv).

    nchwc_pack(X [N, C, H, W])          -> Out, blocked          (C a multiple of L)
    nchwc_unpack(X blocked)             -> Out [N, C, H, W]
    fused_conv2d_nchwc(Input blocked, Filter, Bias?, BN*?) -> Output, blocked: fused_conv2d's
        maths and attributes (epilogue included), paddings at most the border

relu and elementwise_add of two blocked activations of one shape stay the ordinary ops:
they keep the border zero (relu(0) = 0 + 0 = 0). Every kernel writes its whole output, so
the executor may reuse buffers. No GPU kernels: the pass refuses GPU places.
"""
import functools

import numpy as np

from ..nn import conv_im2col as cpu
from ..nn import conv_nchwc as nchwc
from ..nn.conv import conv_params
from .conv_epilogue import fold_bn
from .conv_fused import activation_of, bn_arrays, check_channels, BN, FUSED_ATTRS
from ..registry import FUSED, NO_GRAD, OpDef, Slot, VarInfo, register_op, sequence

BORDER = 1


def blocked_shape(n, c, h, w):
    """The blocked activation's shape of an [n, c, h, w] one.

    >>> L = nchwc.LANES
    >>> blocked_shape(2, 2 * L, 8, 8) == (2, 2, 10, 10, L)
    True
    """
    return (n, c // nchwc.LANES, h + 2 * BORDER, w + 2 * BORDER, nchwc.LANES)


def conv_fits(attrs, c, m, h, w, kh, kw, dtype):
    """None when fused_conv2d_nchwc can run this convolution (float32, one group, no
    dilation, equal strides 1 or 2, paddings within the border, channels multiples of L,
    every tile's reads inside the bordered rows); else what does not fit."""
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = conv_params(attrs)
    L = nchwc.LANES
    if np.dtype(dtype) != np.float32 or int(attrs["groups"]) != 1 or (dh, dw) != (1, 1):
        return f"dtype {np.dtype(dtype)}, groups {attrs['groups']}, dilations {[dh, dw]}: " \
               f"only float32, 1 group, no dilation"
    if c % L or m % L:
        return f"{c} -> {m} channels: not multiples of {L}"
    if sh != sw or sh not in (1, 2) or max(pt, pb, pl, pr) > BORDER:
        return f"strides {[sh, sw]}, paddings {[pt, pb, pl, pr]}: equal strides 1 or 2 and " \
               f"paddings up to {BORDER} only"
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    nc = nchwc.SHAPES[nchwc.tile_blocks(m)]
    if (-(-ow // nc) * nc - 1) * sw + kw - 1 + BORDER - pl >= w + 2 * BORDER or \
            (oh - 1) * sh + kh - 1 + BORDER - pt >= h + 2 * BORDER:
        return f"the tiles of a {oh} x {ow} output would read past the bordered input"
    return None


def _plain(shape):
    n, cb, hp, wp, L = shape
    return n, cb * L, hp - 2 * BORDER, wp - 2 * BORDER


def _check_blocked(ctx, slot):
    x = ctx.input(slot)
    if len(x.shape) != 5 or x.shape[4] != nchwc.LANES or x.dtype != np.float32:
        raise ctx.error(f"{slot} {ctx.name(slot)} {tuple(x.shape)} {x.dtype} is not a blocked "
                        f"float32 activation (N, C/{nchwc.LANES}, H+2, W+2, {nchwc.LANES})")
    return x


def _pack_infer(ctx):
    x = ctx.input("X")
    if len(x.shape) != 4 or x.dtype != np.float32 or x.shape[1] % nchwc.LANES:
        raise ctx.error(f"X {ctx.name('X')} {tuple(x.shape)} {x.dtype}: expected float32 "
                        f"[N, C, H, W] with C a multiple of {nchwc.LANES}")
    n, c, h, w = x.shape
    return {"Out": VarInfo(blocked_shape(n, c, h, w), x.dtype)}


def _unpack_infer(ctx):
    x = _check_blocked(ctx, "X")
    return {"Out": VarInfo(_plain(x.shape), x.dtype)}


def _conv_infer(ctx):
    x, w = _check_blocked(ctx, "Input"), ctx.input("Filter")
    n, c, h, wd = _plain(x.shape)
    m, cg, kh, kw = w.shape
    if cg != c:
        raise ctx.error(f"Filter {ctx.name('Filter')} {tuple(w.shape)} expects {cg} input "
                        f"channels; Input {ctx.name('Input')} has {c}")
    why = conv_fits(ctx.attrs, c, m, h, wd, kh, kw, x.dtype)
    if why:
        raise ctx.error(f"cannot run blocked: {why}; use fused_conv2d")
    activation_of(ctx.attrs, ctx.op_type)
    check_channels(ctx, ("Bias",) + BN, m, x.dtype)
    (sh, _), (pt, pb, pl, pr), _ = conv_params(ctx.attrs)
    oh, ow = (h + pt + pb - kh) // sh + 1, (wd + pl + pr - kw) // sh + 1
    return {"Output": VarInfo(blocked_shape(n, m, oh, ow), x.dtype)}


def _threads(x, per_element=1):
    """Workers over x's samples, for per_element multiply-adds an element of x."""
    return cpu.parallel_threads(x.size * per_element, x.shape[0])


def _layout_cpu(kernel):
    """The CPU factory of nchwc_pack / nchwc_unpack: `kernel(X, Out)` over the samples."""
    def factory(cop):
        def bind(ins, outs):
            x = ins["X"][0]
            return cpu.bind_workers(kernel, (x, outs["Out"][0]), [()] * _threads(x))
        return bind
    return factory


def _conv_cpu(cop):
    act, eps = activation_of(cop.attrs, cop.type), float(cop.attrs["epsilon"])
    (sh, sw), (pt, _, pl, _), _ = conv_params(cop.attrs)

    def bind(ins, outs):
        x, w, out = ins["Input"][0], ins["Filter"][0], outs["Output"][0]
        L, (m, c, kh, kw) = nchwc.LANES, w.shape
        wb, pack = nchwc.filter_packing(w)
        taps = nchwc.tap_offsets(c // L, kh, kw, 1, 1, x.shape[2], x.shape[3])
        bias = ins["Bias"][0] if ins.get("Bias") else None
        bn = bn_arrays(ins)
        mul, add = np.ones(m, np.float32), np.zeros(m, np.float32)
        steps = [pack]
        if bn is not None:
            steps.append(functools.partial(fold_bn, *bn, bias if bias is not None else mul,
                                           bias is not None, eps, mul, add))
        elif bias is not None:
            add = bias
        T = _threads(x, m * kh * kw)
        steps.append(cpu.bind_workers(nchwc.blocked_fwd, (
            x, wb, out, mul, add, int(act), sh, sw, BORDER - pt, BORDER - pl, taps,
            nchwc.tile_blocks(m)),
            [()] * T))
        return sequence(steps)
    return bind


register_op(OpDef("nchwc_pack", (Slot("X"),), (Slot("Out"),), _pack_infer,
                  _layout_cpu(nchwc.pack_blocked),
                  traits=frozenset({NO_GRAD, FUSED}),
                  doc="[N, C, H, W] -> (N, C/L, H+2, W+2, L) channel blocks, zero border 1 "
                      "(CPU only; made by the nchwc_layout pass)"))
register_op(OpDef("nchwc_unpack", (Slot("X"),), (Slot("Out"),), _unpack_infer,
                  _layout_cpu(nchwc.unpack_blocked),
                  traits=frozenset({NO_GRAD, FUSED}),
                  doc="nchwc_pack's inverse (CPU only; made by the nchwc_layout pass)"))
register_op(OpDef(
    "fused_conv2d_nchwc", (Slot("Input"), Slot("Filter"), Slot("Bias", optional=True))
    + tuple(Slot(s, optional=True, no_grad=True) for s in BN),
    (Slot("Output"),), _conv_infer, _conv_cpu, attrs=FUSED_ATTRS,
    traits=frozenset({NO_GRAD, FUSED}),
    doc="fused_conv2d on blocked activations (CPU only; made by the nchwc_layout pass)"))
