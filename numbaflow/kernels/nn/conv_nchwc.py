"""conv2d's direct float32 forward in 8-channel blocks (NCHWc, as onnxruntime's MLAS on AVX2)
for the small-channel convolutions of a CIFAR ResNet; conv.py picks it (`use_nchwc`), the
design and measured table are in docs/architecture.md. The filters are packed into (M/8, C/8,
kh, kw, 8 in, 8 out) blocks, each sample's planes into a zero-bordered (C/8, Hp, Wpa, 8)
layout; tiles of OB x 8 output channels x NC columns of an output row keep their
accumulators in ymm registers over all taps (`conv_tile`, LLVM IR: numba's LLVM runs no SLP
vectorizer, and the same loops in numba code became scalar FMAs, 3 against 45-60 GFLOP/s).
One worker computes a sample whole, so the result does not depend on the threads.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..fused.conv_epilogue import epilogue
from ..workshare import claim

JIT = dict(nogil=True, cache=True, error_model="numpy")
NC = 4      # output columns per tile
OB = 2      # 8-channel output blocks per tile: 8 accumulators, 2 filter rows, a broadcast
LANES = 8   # channels per block: one ymm of float32


@intrinsic
def conv_tile(typingctx, acc, w, woff, wstride, x, xoff, taps, xstride):
    """acc[(b*NC + c)*8 + o] += sum over taps t and input lanes i of
    x[xoff + taps[t] + c*xstride + i] * w[woff + b*wstride + t*64 + i*8 + o], for the OB
    output blocks b, NC columns c and 8 output lanes o; all float32, flat C arrays. The
    accumulators stay in registers over the taps (one load, one store)."""
    sig = types.void(acc, w, woff, wstride, x, xoff, taps, xstride)

    def codegen(context, builder, sig, args):
        ip = context.get_value_type(types.intp)
        acc_p, w_p, x_p = (context.make_array(sig.args[i])(context, builder, args[i]).data
                           for i in (0, 1, 4))
        woff, wstride, xoff, xstride = (context.cast(builder, args[i], sig.args[i], types.intp)
                                        for i in (2, 3, 5, 7))
        taps = context.make_array(sig.args[6])(context, builder, args[6])
        vt = ir.VectorType(ir.FloatType(), LANES)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt] * 3),
                                             "llvm.fma.v8f32")
        lane0, bcast = ir.Constant(ir.IntType(32), 0), ir.Constant(
            ir.VectorType(ir.IntType(32), LANES), [0] * LANES)

        def const(v):
            return ir.Constant(ip, v)

        def vec_at(base, off):
            return builder.bitcast(builder.gep(base, [off]), vt.as_pointer())
        # allocas (promoted to registers by LLVM) carry the accumulators round the loop
        slots = [cgutils.alloca_once(builder, vt) for _ in range(NC * OB)]
        for c, slot in enumerate(slots):
            builder.store(builder.load(vec_at(acc_p, const(c * LANES)), align=4), slot)
        with cgutils.for_range(builder, builder.extract_value(taps.shape, 0)) as loop:
            t = loop.index
            accs = [builder.load(s) for s in slots]
            wb = builder.gep(w_p, [builder.add(woff, builder.mul(t, const(LANES * LANES)))])
            tap = builder.load(builder.gep(taps.data, [t]))
            xb = builder.gep(x_p, [builder.add(xoff, context.cast(
                builder, tap, sig.args[6].dtype, types.intp))])
            for i in range(LANES):
                wrows = [builder.load(vec_at(wb, builder.add(builder.mul(const(b), wstride),
                                                             const(i * LANES))), align=4)
                         for b in range(OB)]
                for c in range(NC):
                    s = builder.load(builder.gep(xb, [builder.add(builder.mul(const(c), xstride),
                                                                  const(i))]))
                    sv = builder.shuffle_vector(builder.insert_element(
                        ir.Constant(vt, ir.Undefined), s, lane0), ir.Constant(vt, ir.Undefined),
                        bcast)
                    for b in range(OB):
                        accs[b * NC + c] = builder.call(fma, [sv, wrows[b], accs[b * NC + c]])
            for a, slot in zip(accs, slots):
                builder.store(a, slot)
        for c, slot in enumerate(slots):
            builder.store(builder.load(slot), vec_at(acc_p, const(c * LANES)), align=4)
        return context.get_dummy_value()
    return sig, codegen


@njit(**JIT)
def pack_filter(w, last, wb):
    """wb[mb, cb, i, j, ci, co] = w[mb*8 + co, cb*8 + ci, i, j] (0 past C), w (M, C, kh, kw),
    unless w equals `last` (its copy when wb was last packed; a for_test program's filters
    never change: the compare costs a read, the packing ~3 ns an element)."""
    wf, lf = w.reshape(-1), last.reshape(-1)
    same = True
    for e in range(wf.shape[0]):
        if wf[e] != lf[e]:
            same = False
            break
    if same:
        return
    lf[:] = wf
    M, C, KH, KW = w.shape
    wb[:] = 0
    for mb in range(wb.shape[0]):
        for cb in range(wb.shape[1]):
            for i in range(KH):
                for j in range(KW):
                    for ci in range(min(LANES, C - cb * LANES)):
                        for co in range(LANES):
                            wb[mb, cb, i, j, ci, co] = w[mb * LANES + co, cb * LANES + ci, i, j]


@njit(**JIT)
def _pack_input(x, xb, pt, pl):
    """The interior of the zero-bordered block plane: xb[c // 8, pt + h, pl + w, c % 8] = x[c, h, w]
    (a channel's rows read in order, unsigned offsets: 2x faster than lanes innermost)."""
    C, H, W = x.shape
    for c in range(C):
        cb, ci = c // LANES, c % LANES
        for h in range(H):
            dst, src = xb[cb, pt + h], x[c, h]
            for w in range(W):
                dst[np.uintp(pl + w), ci] = src[w]


@njit(**JIT)
def tap_offsets(Cb, KH, KW, dh, dw, Hp, Wpa):
    """The flat offset in the block plane of each tap (cb, i, j), relative to the tile's corner."""
    taps = np.empty(Cb * KH * KW, np.intp)
    for cb in range(Cb):
        for i in range(KH):
            for j in range(KW):
                taps[(cb * KH + i) * KW + j] = ((cb * Hp + i * dh) * Wpa + j * dw) * LANES
    return taps


@njit(**JIT)
def nchwc_fwd(x4, wb, out4, mul2, add2, epi, act, sh, sw, pt, pl, OH, OW, taps, xb, acc,
              counter):
    """A worker: x4 (N, C, H, W), wb packed by pack_filter, out4 (N, 1, M, OH*OW); its own
    zero-bordered block plane xb (C/8, Hp, Wpa, 8) and tile acc (NC*8). Claims samples."""
    Mb, Wpa = wb.shape[0], xb.shape[2]
    per_m = wb.shape[1] * wb.shape[2] * wb.shape[3] * LANES * LANES
    xf, wf = xb.reshape(-1), wb.reshape(-1)
    n = claim(counter)
    while n < x4.shape[0]:
        _pack_input(x4[n], xb, pt, pl)
        o = out4[n, 0]
        of = o.reshape(-1)
        for mb in range(0, Mb, OB):
            for oh in range(OH):
                for ow0 in range(0, OW, NC):
                    acc[:] = 0
                    conv_tile(acc, wf, mb * per_m, per_m, xf, (oh * sh * Wpa + ow0 * sw) * LANES,
                              taps, sw * LANES)
                    nc = min(NC, OW - ow0)
                    for b in range(OB):
                        for co in range(LANES):
                            dst = np.uintp(((mb + b) * LANES + co) * OH * OW + oh * OW + ow0)
                            for c in range(nc):
                                of[dst + np.uintp(c)] = acc[(b * NC + c) * LANES + co]
        epilogue(o, mul2[0], add2[0], epi, act)
        n = claim(counter)
