"""conv2d's CPU kernels: im2col + BLAS per (sample, group), and the same over several
threads at once (`*_par`: one worker per thread, each claiming the next sample until none
is left (workshare.py), with its own scratch and its own dFilter / bias-gradient partial,
summed after by `sum_partials`).

Each serial kernel takes the sample range [n0, n1) it works on. With the budget's threads
the LeNet's two convolutions use both cores: their GEMMs (6-16 filters x 25-150 x 100-784)
are far below the size at which a BLAS splits one product over threads, so one call per
sample leaves the second core idle unless the samples are split. The BLAS itself runs at
one thread (no parallel region nests another: executor/threads.py).
"""
import numpy as np
from numba import njit, prange

from .conv_epilogue import dout_epilogue, epilogue
from .workshare import PARALLEL_MIN_WORK, claim, parallel_threads  # noqa: F401 (conv.py's)

# reassoc lets LLVM vectorise the dFilter dot products; contract allows FMAs.
_FM = {"reassoc", "contract"}
JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath=_FM)


@njit(**JIT)
def sum_partials(parts, out):
    """out[i] = sum over t of parts[t, i]: per-thread partials (T, size) into out (size,),
    flat views. Plain loops: `out += parts[t]` on N-D arrays took ~6 s of CPU to compile."""
    for i in range(out.shape[0]):
        out[i] = parts[0, i]
    for t in range(1, parts.shape[0]):
        for i in range(out.shape[0]):
            out[i] += parts[t, i]


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
def conv_fwd(x5, w3, out4, cols, mul2, add2, epi, act, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW,
             n0, n1):
    """x5 (N, G, Cg, H, W), w3 (G, Mg, K), out4 (N, G, Mg, OH*OW), cols (K, OH*OW);
    mul2, add2 (G, Mg): the epilogue's; samples n0 <= n < n1."""
    for n in range(n0, n1):
        for g in range(x5.shape[1]):
            im2col(x5[n, g], cols, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW)
            np.dot(w3[g], cols, out4[n, g])
            epilogue(out4[n, g], mul2[g], add2[g], epi, act)


@njit(**JIT)
def conv_fwd_unit(x5, w3, out4, cols, xp, mul2, add2, epi, act, kh, kw, pt, pl, OH, OW, n0, n1):
    """conv_fwd for stride 1 / dilation 1; xp: the zero-bordered plane of im2col_unit."""
    for n in range(n0, n1):
        for g in range(x5.shape[1]):
            im2col_unit(x5[n, g], xp, cols, kh, kw, pt, pl, OH, OW)
            np.dot(w3[g], cols, out4[n, g])
            epilogue(out4[n, g], mul2[g], add2[g], epi, act)


@njit(**JIT)
def conv1x1_fwd(x4, w3, out4, mul2, add2, epi, act, n0, n1):
    """1x1, stride 1, no padding: x4 (N, G, Cg, H*W) already is the columns."""
    for n in range(n0, n1):
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


@njit(**JIT)
def _zero_grads(dw3, db2, dw, db):
    if dw:
        dw3[:] = 0
    if db:
        db2[:] = 0


# The backward kernels take the epilogue's gradient too (fused_conv2d_grad): o4 (the
# Output, read when act), dm (Mg, OH*OW scratch) and db2 (G, Mg, the bias gradient);
# plain conv2d_grad passes need_db = act = False and empty arrays.
@njit(**JIT)
def conv_bwd(x5, w3, d4, dx5, dw3, cols, dcols, tmpw, need_dx, need_dw,
             o4, dm, db2, need_db, act, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW, n0, n1, zero):
    """dFilter_g = sum_n dOut[n, g] @ cols(x[n, g])^T; dInput[n, g] = col2im(W_g^T @ dOut[n, g]).
    `zero`: start dFilter / the bias gradient at 0 (else add to them)."""
    _zero_grads(dw3, db2, need_dw and zero, need_db and zero)
    if need_dx:
        dx5[n0:n1] = 0
    for n in range(n0, n1):
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
                  o4, dm, db2, need_db, act, kh, kw, pt, pl, OH, OW, n0, n1, zero):
    """conv_bwd for stride 1 / dilation 1; xp, gp: the zero-bordered planes of
    im2col_unit / col2im_unit (col2im_unit overwrites dInput: no zeroing pass)."""
    _zero_grads(dw3, db2, need_dw and zero, need_db and zero)
    for n in range(n0, n1):
        for g in range(d4.shape[1]):
            d = dout_epilogue(d4[n, g], o4[n, g], dm, db2[g], need_db, act)
            if need_dw:
                im2col_unit(x5[n, g], xp, cols, kh, kw, pt, pl, OH, OW)
                _add_dfilter(d, cols, tmpw, dw3[g])
            if need_dx:
                np.dot(w3[g].T, d, dcols)
                col2im_unit(dcols, gp, dx5[n, g], kh, kw, pt, pl, OH, OW)


@njit(**JIT)
def conv1x1_bwd(x4, w3, d4, dx4, dw3, tmpw, need_dx, need_dw, o4, dm, db2, need_db, act,
                n0, n1, zero):
    _zero_grads(dw3, db2, need_dw and zero, need_db and zero)
    for n in range(n0, n1):
        for g in range(d4.shape[1]):
            d = dout_epilogue(d4[n, g], o4[n, g], dm, db2[g], need_db, act)
            if need_dw:
                _add_dfilter(d, x4[n, g], tmpw, dw3[g])
            if need_dx:
                np.dot(w3[g].T, d, dx4[n, g])


# ---------------------------------------------------------------- over T threads
# One worker per thread (T = cols.shape[0]), each claiming the next sample from `counter`.
@njit(parallel=True, **JIT)
def conv_fwd_par(x5, w3, out4, cols, mul2, add2, epi, act, kh, kw, sh, sw, pt, pl, dh, dw, OH,
                 OW, counter):
    """conv_fwd over T workers at once (cols: one per worker)."""
    T, N = cols.shape[0], x5.shape[0]
    counter[0] = 0
    for t in prange(T):
        n = claim(counter)
        while n < N:
            conv_fwd(x5, w3, out4, cols[t], mul2, add2, epi, act, kh, kw, sh, sw, pt, pl, dh,
                     dw, OH, OW, n, n + 1)
            n = claim(counter)


@njit(parallel=True, **JIT)
def conv_fwd_unit_par(x5, w3, out4, cols, xp, mul2, add2, epi, act, kh, kw, pt, pl, OH, OW,
                      counter):
    T, N = cols.shape[0], x5.shape[0]
    counter[0] = 0
    for t in prange(T):
        n = claim(counter)
        while n < N:
            conv_fwd_unit(x5, w3, out4, cols[t], xp[t], mul2, add2, epi, act, kh, kw, pt, pl,
                          OH, OW, n, n + 1)
            n = claim(counter)


@njit(parallel=True, **JIT)
def conv1x1_fwd_par(x4, w3, out4, mul2, add2, epi, act, T, counter):
    N = x4.shape[0]
    counter[0] = 0
    for t in prange(T):
        n = claim(counter)
        while n < N:
            conv1x1_fwd(x4, w3, out4, mul2, add2, epi, act, n, n + 1)
            n = claim(counter)


# The backward's per-worker arrays have a leading T axis: cols, dcols, tmpw, dm, and the
# partials dw3 (T, G, Mg, K) and db2 (T, G, Mg) that sum_partials adds up after (each
# worker zeroes its own partial first: a worker may claim no sample at all).
@njit(parallel=True, **JIT)
def conv_bwd_par(x5, w3, d4, dx5, dw3, cols, dcols, tmpw, need_dx, need_dw,
                 o4, dm, db2, need_db, act, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW, counter):
    T, N = cols.shape[0], d4.shape[0]
    counter[0] = 0
    for t in prange(T):
        _zero_grads(dw3[t], db2[t], need_dw, need_db)
        n = claim(counter)
        while n < N:
            conv_bwd(x5, w3, d4, dx5, dw3[t], cols[t], dcols[t], tmpw[t], need_dx, need_dw,
                     o4, dm[t], db2[t], need_db, act, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW,
                     n, n + 1, False)
            n = claim(counter)


@njit(parallel=True, **JIT)
def conv_bwd_unit_par(x5, w3, d4, dx5, dw3, cols, dcols, tmpw, xp, gp, need_dx, need_dw,
                      o4, dm, db2, need_db, act, kh, kw, pt, pl, OH, OW, counter):
    T, N = cols.shape[0], d4.shape[0]
    counter[0] = 0
    for t in prange(T):
        _zero_grads(dw3[t], db2[t], need_dw, need_db)
        n = claim(counter)
        while n < N:
            conv_bwd_unit(x5, w3, d4, dx5, dw3[t], cols[t], dcols[t], tmpw[t], xp[t], gp[t],
                          need_dx, need_dw, o4, dm[t], db2[t], need_db, act, kh, kw, pt, pl,
                          OH, OW, n, n + 1, False)
            n = claim(counter)


@njit(parallel=True, **JIT)
def conv1x1_bwd_par(x4, w3, d4, dx4, dw3, tmpw, need_dx, need_dw, o4, dm, db2, need_db, act,
                    counter):
    T, N = tmpw.shape[0], d4.shape[0]
    counter[0] = 0
    for t in prange(T):
        _zero_grads(dw3[t], db2[t], need_dw, need_db)
        n = claim(counter)
        while n < N:
            conv1x1_bwd(x4, w3, d4, dx4, dw3[t], tmpw[t], need_dx, need_dw, o4, dm[t], db2[t],
                        need_db, act, n, n + 1, False)
            n = claim(counter)
