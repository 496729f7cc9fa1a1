"""conv2d's direct float32 forward in channel blocks of one vector register (NCHWc, as
onnxruntime's MLAS): LANES = 16 channels (zmm) where the CPU has AVX-512, else 8 (ymm), for
the small-channel convolutions of a CIFAR ResNet; conv.py picks it (`use_nchwc`), the design
and measured table are in docs/architecture.md. The filters are packed into (M/L, C/L, kh,
kw, L in, L out) blocks, each sample's planes into a zero-bordered (C/L, Hp, Wpa, L) layout;
tiles of ob x L output channels x nc columns of an output row keep their accumulators in
registers over all taps (`TILES`, LLVM IR: numba's LLVM runs no SLP vectorizer, and the same
loops in numba code became scalar FMAs, 3 against 45-60 GFLOP/s). One worker computes a
sample whole, so the result does not depend on the threads.
"""
import numpy as np
from llvmlite import binding, ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..workshare import claim

JIT = dict(nogil=True, cache=True, error_model="numpy")
# channels per block: one vector register of float32 (numba compiles for the host CPU; its
# disk cache is keyed by the CPU's features, so a cached kernel always matches LANES)
LANES = 16 if binding.get_host_cpu_features().get("avx512f") else 8
# (output blocks, columns) of a tile, by output blocks: 8 accumulators either way; two
# blocks share each broadcast input lane (fewer loads per FMA) where M is a multiple of 2L
NC2, NC1 = 4, 8
SHAPES = {2: NC2, 1: NC1}
ACC = max(2 * NC2, NC1) * LANES     # a worker's tile buffer


def _tile(OB, NC):
    """The tile intrinsic for OB output blocks and NC columns (_tile_typer says what it does)."""
    def conv_tile(typingctx, acc, w, woff, wstride, x, xoff, taps, xstride):
        return _tile_typer(OB, NC, typingctx, acc, w, woff, wstride, x, xoff, taps, xstride)
    conv_tile.__name__ = f"conv_tile_{OB}x{NC}"
    return intrinsic(conv_tile)


def _tile_typer(OB, NC, typingctx, acc, w, woff, wstride, x, xoff, taps, xstride):
    """acc[(b*NC + c)*L + o] += sum over taps t and input lanes i of
    x[xoff + taps[t] + c*xstride + i] * w[woff + b*wstride + t*L*L + i*L + o], for the OB
    output blocks b, NC columns c and L output lanes o; all float32, flat C arrays. The
    accumulators stay in registers over the taps (one load, one store)."""
    sig = types.void(acc, w, woff, wstride, x, xoff, taps, xstride)
    fma_name = f"llvm.fma.v{LANES}f32"

    def codegen(context, builder, sig, args):
        ip = context.get_value_type(types.intp)
        acc_p, w_p, x_p = (context.make_array(sig.args[i])(context, builder, args[i]).data
                           for i in (0, 1, 4))
        woff, wstride, xoff, xstride = (context.cast(builder, args[i], sig.args[i], types.intp)
                                        for i in (2, 3, 5, 7))
        taps = context.make_array(sig.args[6])(context, builder, args[6])
        vt = ir.VectorType(ir.FloatType(), LANES)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt] * 3),
                                             fma_name)
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


conv_tile, conv_tile1 = _tile(2, NC2), _tile(1, NC1)


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
def nchwc_fwd(x4, wb, out4, mul2, add2, epi, act, sh, sw, pt, pl, taps, ob, xb, yb, acc,
              counter):
    """A worker: x4 (N, C, H, W) -> out4 (N, M, OH, OW), wb packed by pack_filter, tiles of
    `ob` output blocks; through its own zero-bordered block planes xb (C/L, Hp, Wpa, L) of
    the input (borders pt, pl) and yb (M/L, OH+2, OW+2, L) of the output, and tile buffer
    acc (ACC). Claims samples."""
    xf = xb.reshape(-1)
    n = claim(counter)
    while n < x4.shape[0]:
        _pack_input(x4[n], xb, pt, pl)
        conv_sample(xf, xb.shape[2], wb, yb, mul2[0], add2[0], epi, act, sh, sw, 0, 0, taps,
                    ob, acc)
        _unpack_sample(yb, out4[n])
        n = claim(counter)


# ---------------------------------------------------------------- activations kept blocked
# The ops of kernels/nn/conv_blocked.py (made by the nchwc_layout pass) hold activations as
# (N, C/L, H + 2, W + 2, L) with a zero border of 1: a 3x3 pad-1 conv reads it as it is (no
# per-layer packing) and writes its output straight into the same layout (L-wide stores with
# the epilogue applied on the way, no scatter into NCHW rows and no second pass).

@njit(**JIT)
def pack_blocked(x4, xb5, counter):
    """A worker: xb5[n] = the zero-bordered blocks of x4[n] (N, C, H, W), claimed by sample."""
    n = claim(counter)
    while n < x4.shape[0]:
        xb5[n] = 0
        _pack_input(x4[n], xb5[n], 1, 1)
        n = claim(counter)


@njit(**JIT)
def unpack_blocked(xb5, x4, counter):
    """A worker: x4[n, c, h, w] = xb5[n, c // L, 1 + h, 1 + w, c % L], claimed by sample."""
    n = claim(counter)
    while n < x4.shape[0]:
        _unpack_sample(xb5[n], x4[n])
        n = claim(counter)


@njit(**JIT)
def _unpack_sample(xb, x):
    """x[c, h, w] = xb[c // L, 1 + h, 1 + w, c % L]: one sample's interior, NCHW."""
    C, H, W = x.shape
    for c in range(C):
        src = xb[c // LANES]
        for h in range(H):
            for w in range(W):
                x[c, h, w] = src[1 + h, 1 + w, c % LANES]


@njit(**JIT)
def conv_sample(xf, Wp, wb, o, mul, add, epi, act, sh, sw, oh0, ow0_, taps, ob, acc):
    """One sample: the interior of o (M/L, OH+2, OW+2, L) = act(conv * mul + add) per
    channel (epi 2; 1: + add; 0: neither) of the flat block planes xf (rows Wp wide), the
    conv's first tap at row oh0, column ow0_; wb packed by pack_filter; tiles of `ob`
    output blocks, acc the tile buffer (ACC). The tile's L-wide results are stored as they
    are, the epilogue applied on the way."""
    Mb, OH, OW = o.shape[0], o.shape[1] - 2, o.shape[2] - 2
    nc = NC2 if ob == 2 else NC1
    per_m = wb.shape[1] * wb.shape[2] * wb.shape[3] * LANES * LANES
    wf = wb.reshape(-1)
    for mb in range(0, Mb, ob):
        for oh in range(OH):
            for ow0 in range(0, OW, nc):
                acc[:] = 0
                xoff = ((oh * sh + oh0) * Wp + ow0 * sw + ow0_) * LANES
                if ob == 2:
                    conv_tile(acc, wf, mb * per_m, per_m, xf, xoff, taps, sw * LANES)
                else:
                    conv_tile1(acc, wf, mb * per_m, per_m, xf, xoff, taps, sw * LANES)
                for b in range(ob):
                    ch = (mb + b) * LANES
                    row = o[mb + b, 1 + oh]
                    for c in range(min(nc, OW - ow0)):
                        dst, a0 = row[1 + ow0 + c], (b * nc + c) * LANES
                        for co in range(LANES):
                            v = acc[a0 + co]
                            if epi == 2:
                                v = v * mul[ch + co] + add[ch + co]
                            elif epi == 1:
                                v += add[ch + co]
                            if act and v < 0:
                                v = 0
                            dst[co] = v


@njit(**JIT)
def blocked_fwd(xb5, wb, ob5, mul, add, epi, act, sh, sw, oh0, ow0_, taps, ob, acc, counter):
    """A worker: xb5 (N, C/L, H+2, W+2, L) -> ob5 (N, M/L, OH+2, OW+2, L), both zero-bordered
    (conv_sample's arguments). Claims samples."""
    n = claim(counter)
    while n < xb5.shape[0]:
        o = ob5[n]
        OH, OW = o.shape[1] - 2, o.shape[2] - 2
        o[:, 0] = 0
        o[:, OH + 1] = 0
        o[:, :, 0] = 0
        o[:, :, OW + 1] = 0
        conv_sample(xb5[n].reshape(-1), xb5.shape[3], wb, o, mul, add, epi, act, sh, sw, oh0,
                    ow0_, taps, ob, acc)
        n = claim(counter)
