"""conv2d's direct float32 forward in channel blocks of one vector register (NCHWc, as
onnxruntime's MLAS): LANES = 16 channels (zmm) where the CPU has AVX-512, else 8 (ymm), for
the small-channel convolutions of a CIFAR ResNet; conv.py picks it (`use_nchwc`), the design
and measured table are in docs/architecture.md. The filters are packed into (M/L, C/L, kh,
kw, L in, L out) blocks, each sample's planes into a zero-bordered (C/L, Hp, Wpa, L) layout;
tiles of ob x L output channels x nc columns of an output row keep their accumulators in
registers over all taps and apply the epilogue there (`conv_tile`, LLVM IR: numba code
became scalar FMAs). One worker computes a sample whole, so no result depends on the threads;
the blocked ops (fused/conv_blocked.py) run them too; dFilter has its own tile (`dw_tile`)."""
import functools

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


class _Vectors:
    """The L-lane float32 vector pieces both intrinsics build IR from: the type `vt`, the
    `fma` intrinsic, a vector pointer `at(base, off)` and a broadcast `splat(s, ty)`."""

    def __init__(self, builder):
        self.b, self.vt = builder, ir.VectorType(ir.FloatType(), LANES)
        self.fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(self.vt, [self.vt] * 3), f"llvm.fma.v{LANES}f32")

    def at(self, base, off):
        return self.b.bitcast(self.b.gep(base, [off]), self.vt.as_pointer())

    def splat(self, s, ty=None):
        undef = ir.Constant(ty or self.vt, ir.Undefined)
        lanes0 = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
        return self.b.shuffle_vector(self.b.insert_element(
            undef, s, ir.Constant(ir.IntType(32), 0)), undef, lanes0)


def _tile(OB, NC):
    """The tile intrinsic for OB output blocks and NC columns (_tile_typer says what it does)."""
    def conv_tile(typingctx, w, woff, wstride, x, xoff, taps, xstride, out, ooff, ostride,
                  ncols, mul, add, ch, act):
        return _tile_typer(OB, NC, w, woff, wstride, x, xoff, taps, xstride, out, ooff,
                           ostride, ncols, mul, add, ch, act)
    conv_tile.__name__ = f"conv_tile_{OB}x{NC}"
    return intrinsic(conv_tile)


def _tile_typer(OB, NC, *args):
    """For the OB output blocks b, NC columns c (the first `ncols` stored) and L output lanes
    o: out[ooff + b*ostride + c*L + o] = act(mul[ch + b*L + o] * s + add[ch + b*L + o]),
    s = sum over taps t and input lanes i of x[xoff + taps[t] + c*xstride + i] *
    w[woff + b*wstride + t*L*L + i*L + o]; act: relu when `act` (NaN kept); all float32,
    flat C arrays. The accumulators stay in registers over the taps, and the epilogue is
    applied to them there: no tile buffer, no scalar copy-out."""
    sig = types.void(*args)

    def codegen(context, builder, sig, args):
        ip = context.get_value_type(types.intp)
        w_p, x_p, out_p, mul_p, add_p = (
            context.make_array(sig.args[i])(context, builder, args[i]).data
            for i in (0, 3, 7, 11, 12))
        woff, wstride, xoff, xstride, ooff, ostride, ncols, ch, act = (
            context.cast(builder, args[i], sig.args[i], types.intp)
            for i in (1, 2, 4, 6, 8, 9, 10, 13, 14))
        taps = context.make_array(sig.args[5])(context, builder, args[5])
        v = _Vectors(builder)
        vt, fma, vec_at, splat = v.vt, v.fma, v.at, v.splat
        zero = ir.Constant(vt, [0.0] * LANES)

        def const(v):
            return ir.Constant(ip, v)
        # allocas (promoted to registers by LLVM) carry the accumulators round the loop
        slots = [cgutils.alloca_once(builder, vt) for _ in range(NC * OB)]
        for slot in slots:
            builder.store(zero, slot)
        with cgutils.for_range(builder, builder.extract_value(taps.shape, 0)) as loop:
            t = loop.index
            accs = [builder.load(s) for s in slots]
            wb = builder.gep(w_p, [builder.add(woff, builder.mul(t, const(LANES * LANES)))])
            tap = builder.load(builder.gep(taps.data, [t]))
            xb = builder.gep(x_p, [builder.add(xoff, context.cast(
                builder, tap, sig.args[5].dtype, types.intp))])
            for i in range(LANES):
                wrows = [builder.load(vec_at(wb, builder.add(builder.mul(const(b), wstride),
                                                             const(i * LANES))), align=4)
                         for b in range(OB)]
                for c in range(NC):
                    s = builder.load(builder.gep(xb, [builder.add(builder.mul(const(c), xstride),
                                                                  const(i))]))
                    sv = splat(s)
                    for b in range(OB):
                        accs[b * NC + c] = builder.call(fma, [sv, wrows[b], accs[b * NC + c]])
            for a, slot in zip(accs, slots):
                builder.store(a, slot)
        relu = splat(builder.icmp_signed("!=", act, const(0)), ir.VectorType(ir.IntType(1), LANES))
        for b in range(OB):
            chb = builder.add(ch, const(b * LANES))
            mulv = builder.load(vec_at(mul_p, chb), align=4)
            addv = builder.load(vec_at(add_p, chb), align=4)
            for c in range(NC):
                v = builder.call(fma, [builder.load(slots[b * NC + c]), mulv, addv])
                v = builder.select(builder.and_(builder.fcmp_ordered("<", v, zero), relu), zero, v)
                with builder.if_then(builder.icmp_signed("<", const(c), ncols)):
                    at = builder.add(ooff, builder.add(builder.mul(const(b), ostride),
                                                       const(c * LANES)))
                    builder.store(v, vec_at(out_p, at), align=4)
        return context.get_dummy_value()
    return sig, codegen


conv_tile, conv_tile1 = _tile(2, NC2), _tile(1, NC1)


def tile_blocks(m):
    """Output blocks per tile for m output channels: 2 where m is a multiple of 2L, else 1."""
    return 2 if m % (2 * LANES) == 0 else 1


def filter_packing(w):
    """(wb, the call packing w (M, C, kh, kw) into wb when w changed since its last call):
    pack_filter's blocks, the first call always packing (NaN != anything)."""
    m, c, kh, kw = w.shape
    wb = np.empty((m // LANES, -(-c // LANES), kh, kw, LANES, LANES), np.float32)
    return wb, functools.partial(pack_filter, w, np.full(w.shape, np.nan, np.float32), wb)


@njit(**JIT)
def pack_filter(w, last, wb):
    """wb[mb, cb, i, j, ci, co] = w[mb*L + co, cb*L + ci, i, j] (0 past C), w (M, C, kh, kw),
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
    """The interior of the zero-bordered block plane: xb[c // L, pt + h, pl + w, c % L] = x[c, h, w]
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
def nchwc_fwd(x4, wb, out4, mul, add, act, sh, sw, pt, pl, taps, ob, xb, yb, counter):
    """A worker: x4 (N, C, H, W) -> out4 (N, M, OH, OW), wb packed by pack_filter, tiles of
    `ob` output blocks, the epilogue act(. * mul + add); through its own zero-bordered block
    planes xb (C/L, Hp, Wpa, L) of the input (borders pt, pl) and yb (M/L, OH+2, OW+2, L) of
    the output. Claims samples."""
    xf = xb.reshape(-1)
    n = claim(counter)
    while n < x4.shape[0]:
        _pack_input(x4[n], xb, pt, pl)
        conv_sample(xf, xb.shape[2], wb, yb, mul, add, act, sh, sw, 0, 0, taps, ob)
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
def conv_sample(xf, Wp, wb, o, mul, add, act, sh, sw, oh0, ow0_, taps, ob):
    """One sample: the interior of o (M/L, OH+2, OW+2, L, contiguous) = act(conv * mul + add)
    per channel (act: relu) of the flat block planes xf (rows Wp wide), the conv's first
    tap at row oh0, column ow0_; wb packed by pack_filter; tiles of `ob` output blocks."""
    Mb, OHp, OWp = o.shape[0], o.shape[1], o.shape[2]
    nc = NC2 if ob == 2 else NC1
    per_m = wb.shape[1] * wb.shape[2] * wb.shape[3] * LANES * LANES
    wf, of = wb.reshape(-1), o.reshape(-1)
    for mb in range(0, Mb, ob):
        for oh in range(OHp - 2):
            for ow0 in range(0, OWp - 2, nc):
                xoff = ((oh * sh + oh0) * Wp + ow0 * sw + ow0_) * LANES
                ooff = ((mb * OHp + 1 + oh) * OWp + 1 + ow0) * LANES
                ncols = min(nc, OWp - 2 - ow0)
                if ob == 2:
                    conv_tile(wf, mb * per_m, per_m, xf, xoff, taps, sw * LANES, of, ooff,
                              OHp * OWp * LANES, ncols, mul, add, mb * LANES, act)
                else:
                    conv_tile1(wf, mb * per_m, per_m, xf, xoff, taps, sw * LANES, of, ooff,
                               OHp * OWp * LANES, ncols, mul, add, mb * LANES, act)


@njit(**JIT)
def blocked_fwd(xb5, wb, ob5, mul, add, act, sh, sw, oh0, ow0_, taps, ob, counter):
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
        conv_sample(xb5[n].reshape(-1), xb5.shape[3], wb, o, mul, add, act, sh, sw, oh0, ow0_,
                    taps, ob)
        n = claim(counter)


# ---------------------------------------------------------------- the filter gradient
@intrinsic
def dw_tile(typingctx, wacc, woff, x, xoff, xstep, xrow, d, doff, drow, rows, cols):
    """wacc[woff + ci*L + co] += sum over r < rows, q < cols of
    x[xoff + r*xrow + q*xstep + ci] * d[doff + r*drow + q*L + co], for the L input lanes ci
    and L output lanes co; all float32, flat C arrays. One tap's L x L filter block: its L
    accumulators (one per input lane) stay in registers over every output position."""
    sig = types.void(wacc, woff, x, xoff, xstep, xrow, d, doff, drow, rows, cols)

    def codegen(context, builder, sig, args):
        w_p, x_p, d_p = (context.make_array(sig.args[i])(context, builder, args[i]).data
                         for i in (0, 2, 6))
        woff, xoff, xstep, xrow, doff, drow, rows, cols = (
            context.cast(builder, args[i], sig.args[i], types.intp)
            for i in (1, 3, 4, 5, 7, 8, 9, 10))
        ip = context.get_value_type(types.intp)
        v = _Vectors(builder)
        vt, fma, vec_at = v.vt, v.fma, v.at
        slots = [cgutils.alloca_once(builder, vt) for _ in range(LANES)]
        for ci, slot in enumerate(slots):
            builder.store(builder.load(vec_at(w_p, builder.add(woff, ir.Constant(
                ip, ci * LANES))), align=4), slot)
        with cgutils.for_range(builder, rows) as r_loop:
            xr = builder.add(xoff, builder.mul(r_loop.index, xrow))
            dr = builder.add(doff, builder.mul(r_loop.index, drow))
            with cgutils.for_range(builder, cols) as q_loop:
                q = q_loop.index
                dv = builder.load(vec_at(d_p, builder.add(dr, builder.mul(q, ir.Constant(
                    ip, LANES)))), align=4)
                xq = builder.gep(x_p, [builder.add(xr, builder.mul(q, xstep))])
                for ci, slot in enumerate(slots):
                    sv = v.splat(builder.load(builder.gep(xq, [ir.Constant(ip, ci)])))
                    builder.store(builder.call(fma, [sv, dv, builder.load(slot)]), slot)
        for ci, slot in enumerate(slots):
            builder.store(builder.load(slot), vec_at(w_p, builder.add(woff, ir.Constant(
                ip, ci * LANES))), align=4)
        return context.get_dummy_value()
    return sig, codegen


@njit(**JIT)
def nchwc_dw(x4, d4, sh, sw, pt, pl, parts, xb, db, counter):
    """A worker: claims fixed chunks q of the samples and sets parts[q] (pack_filter's layout)
    to chunk q's filter gradient, x4 (N, C, H, W) packed into its bordered xb (borders pt,
    pl) and d4 (N, M, OH, OW) into db (M/L, OH, OW, L): no sum depends on the workers."""
    Q, N = parts.shape[0], x4.shape[0]
    Mb, Cb, KH, KW = parts.shape[1:5]
    OH, OW = d4.shape[2], d4.shape[3]
    Hp, Wp = xb.shape[1], xb.shape[2]
    xf, df = xb.reshape(-1), db.reshape(-1)
    q = claim(counter)
    while q < Q:
        parts[q] = 0
        wf = parts[q].reshape(-1)
        for n in range(q * N // Q, (q + 1) * N // Q):
            _pack_input(x4[n], xb, pt, pl)
            _pack_input(d4[n], db, 0, 0)
            for mb in range(Mb):
                for cb in range(Cb):
                    for i in range(KH):
                        for j in range(KW):
                            dw_tile(wf, (((mb * Cb + cb) * KH + i) * KW + j) * LANES * LANES,
                                    xf, ((cb * Hp + i) * Wp + j) * LANES, sw * LANES,
                                    sh * Wp * LANES, df, mb * OH * OW * LANES, OW * LANES, OH,
                                    OW)
        q = claim(counter)


@njit(**JIT)
def unpack_dw(parts, dw):
    """dw[m, c, i, j] = the sum over chunks t (in order) of parts[t, m // L, c // L, i, j,
    c % L, m % L]."""
    M, C, KH, KW = dw.shape
    for m in range(M):
        for c in range(C):
            for i in range(KH):
                for j in range(KW):
                    s = np.float32(0)
                    for t in range(parts.shape[0]):
                        s += parts[t, m // LANES, c // LANES, i, j, c % LANES, m % LANES]
                    dw[m, c, i, j] = s
