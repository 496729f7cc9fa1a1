"""conv2d's CPU kernels: im2col + BLAS per group over a chunk of samples, and the same
over several threads at once (`*_par`: one worker per thread, each claiming the next chunk
until none is left (workshare.py), with its own scratch and its own dFilter /
bias-gradient partial, summed after by `sum_partials`).

Each serial kernel takes the sample range [n0, n1) it works on. With the budget's threads
the LeNet's two convolutions use both cores: their GEMMs (6-16 filters x 25-150 x 100-784)
are far below the size at which a BLAS splits one product over threads, so one call per
chunk leaves the second core idle unless the samples are split. The BLAS itself runs at
one thread (no parallel region nests another: executor/threads.py).

One im2col / col2im pair serves every stride and dilation (a zero-bordered copy of the
plane, then plain copies), so a cold cache compiles one forward and one backward kernel
per conv (plus the 1x1 fast path), not one per geometry family."""
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


# The planes are flat (C, Hp*Wp) and indexed with unsigned offsets: numba adds a
# negative-index wrap to every signed index it cannot prove >= 0 (an offset j*dw with
# run-time dw), which kept the copy loops from vectorising (im2col of a 16x32x32 plane,
# 64 times: 1.4 ms this way, 2.2 ms with per-row views, 12 ms with signed indices).
@njit(**JIT)
def im2col(x, xp, cols, off, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW, Wp):
    """cols[(c*kh + i)*kw + j, off + oh*OW + ow] = x[c, oh*sh - pt + i*dh, ow*sw - pl + j*dw],
    0 where that falls in the padding. The plane is first copied into the zero-bordered
    flat `xp` (C, Hp*Wp) (allocated once, its border never written), so every row is a
    branch-free copy (the LeNet's im2col: 1.26 -> 0.20 ms this way)."""
    C, H, W = x.shape
    for c in range(C):
        for h in range(H):
            for w in range(W):
                xp[c, np.uintp((h + pt) * Wp + w + pl)] = x[c, h, w]
    for c in range(C):
        plane = xp[c]
        for i in range(kh):
            for j in range(kw):
                row = cols[(c * kh + i) * kw + j]
                for oh in range(OH):
                    s0 = np.uintp((oh * sh + i * dh) * Wp + j * dw)
                    d0 = np.uintp(off + oh * OW)
                    if sw == 1:
                        for ow in range(OW):
                            row[d0 + np.uintp(ow)] = plane[s0 + np.uintp(ow)]
                    else:
                        for ow in range(OW):
                            row[d0 + np.uintp(ow)] = plane[s0 + np.uintp(ow * sw)]


@njit(**JIT)
def col2im(cols, off, gp, dx, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW, Wp):
    """dx = the adjoint of im2col applied to cols[:, off:off + OH*OW] (dx is overwritten;
    gp: a flat zero-bordered plane like im2col's, the sums land there first)."""
    C, H, W = dx.shape
    gp[:] = 0
    for c in range(C):
        plane = gp[c]
        for i in range(kh):
            for j in range(kw):
                row = cols[(c * kh + i) * kw + j]
                for oh in range(OH):
                    s0 = np.uintp((oh * sh + i * dh) * Wp + j * dw)
                    d0 = np.uintp(off + oh * OW)
                    if sw == 1:
                        for ow in range(OW):
                            plane[s0 + np.uintp(ow)] += row[d0 + np.uintp(ow)]
                    else:
                        for ow in range(OW):
                            plane[s0 + np.uintp(ow * sw)] += row[d0 + np.uintp(ow)]
    for c in range(C):
        for h in range(H):
            for w in range(W):
                dx[c, h, w] = gp[c, np.uintp((h + pt) * Wp + w + pl)]


# Samples go through the GEMMs S at a time (a chunk): the columns of S samples side by side
# make one (Mg, K) x (K, S*P) product instead of S narrow ones. S is picked at bind time so
# that a chunk's columns stay near 2 MB (conv.py: chunk_samples); measured on the
# ResNet-20's 3x3 convolutions at 1 thread the GEMMs ran at 35-56 GFLOP/s one sample at a
# time and 45-64 four at a time, while whole-batch products (S = 64) fell back to 24-58.
@njit(**JIT)
def _chunk(buf, rows, s, P):
    """The first rows * s * P elements of the flat scratch `buf` as a (rows, s*P) matrix."""
    return buf[:rows * s * P].reshape((rows, s * P))


@njit(**JIT)
def conv_fwd(x5, w3, out4, cols, tmp, xp, mul2, add2, epi, act, kh, kw, sh, sw, dh, dw, pt, pl,
             OH, OW, Wp, S, n0, n1):
    """x5 (N, G, Cg, H, W), w3 (G, Mg, K), out4 (N, G, Mg, OH*OW); flat scratch cols (K*S*P)
    and tmp (Mg*S*P); xp the zero-bordered plane; mul2, add2 (G, Mg): the epilogue's;
    samples n0 <= n < n1, S at a time."""
    G, Mg, K = w3.shape
    P = OH * OW
    for c0 in range(n0, n1, S):
        s = min(S, n1 - c0)
        for g in range(G):
            cg = _chunk(cols, K, s, P)
            for j in range(s):
                im2col(x5[c0 + j, g], xp, cg, j * P, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW,
                       Wp)
            if s == 1:
                np.dot(w3[g], cg, out4[c0, g])
            else:
                o = _chunk(tmp, Mg, s, P)
                np.dot(w3[g], cg, o)
                for j in range(s):
                    dst = out4[c0 + j, g]
                    for r in range(Mg):
                        for p in range(P):
                            dst[r, p] = o[r, j * P + p]
            for j in range(s):
                epilogue(out4[c0 + j, g], mul2[g], add2[g], epi, act)


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
def conv_bwd(x5, w3, d4, dx5, dw3, cols, dcols, dtmp, tmpw, xp, gp, need_dx, need_dw,
             o4, dm, db2, need_db, act, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW, Wp, S, n0, n1,
             zero):
    """dFilter_g = sum_n dOut[n, g] @ cols(x[n, g])^T; dInput[n, g] = col2im(W_g^T @ dOut[n, g]),
    S samples at a time (flat scratch: cols, dcols (K*S*P), dtmp (Mg*S*P)); xp, gp: the
    zero-bordered planes of im2col / col2im. `zero`: start dFilter / the bias gradient at 0
    (else add to them)."""
    _zero_grads(dw3, db2, need_dw and zero, need_db and zero)
    G, Mg, K = w3.shape
    P = OH * OW
    for c0 in range(n0, n1, S):
        s = min(S, n1 - c0)
        for g in range(G):
            if s == 1:
                d = dout_epilogue(d4[c0, g], o4[c0, g], dm, db2[g], need_db, act)
            else:
                d = _chunk(dtmp, Mg, s, P)
                for j in range(s):
                    dj = dout_epilogue(d4[c0 + j, g], o4[c0 + j, g], dm, db2[g], need_db, act)
                    for r in range(Mg):
                        for p in range(P):
                            d[r, j * P + p] = dj[r, p]
            if need_dw:
                cg = _chunk(cols, K, s, P)
                for j in range(s):
                    im2col(x5[c0 + j, g], xp, cg, j * P, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW,
                       Wp)
                _add_dfilter(d, cg, tmpw, dw3[g])
            if need_dx:
                dc = _chunk(dcols, K, s, P)
                np.dot(w3[g].T, d, dc)
                for j in range(s):
                    col2im(dc, j * P, gp, dx5[c0 + j, g], kh, kw, sh, sw, dh, dw, pt, pl,
                           OH, OW, Wp)


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
# One worker per thread (T = cols.shape[0]), each claiming the next chunk of S samples
# (or the next sample) from `counter`.
@njit(parallel=True, **JIT)
def conv_fwd_par(x5, w3, out4, cols, tmp, xp, mul2, add2, epi, act, kh, kw, sh, sw, dh, dw, pt,
                 pl, OH, OW, Wp, S, counter):
    """conv_fwd over T workers at once (cols, tmp, xp: one per worker)."""
    T, N = cols.shape[0], x5.shape[0]
    counter[0] = 0
    for t in prange(T):
        n = claim(counter) * S
        while n < N:
            conv_fwd(x5, w3, out4, cols[t], tmp[t], xp[t], mul2, add2, epi, act, kh, kw, sh, sw,
                     dh, dw, pt, pl, OH, OW, Wp, S, n, min(n + S, N))
            n = claim(counter) * S


@njit(parallel=True, **JIT)
def conv1x1_fwd_par(x4, w3, out4, mul2, add2, epi, act, T, counter):
    N = x4.shape[0]
    counter[0] = 0
    for t in prange(T):
        n = claim(counter)
        while n < N:
            conv1x1_fwd(x4, w3, out4, mul2, add2, epi, act, n, n + 1)
            n = claim(counter)


# The backward's per-worker arrays have a leading T axis: the scratch, and the partials
# dw3 (T, G, Mg, K) and db2 (T, G, Mg) that sum_partials adds up after (each worker
# zeroes its own partial first: a worker may claim no chunk at all).
@njit(parallel=True, **JIT)
def conv_bwd_par(x5, w3, d4, dx5, dw3, cols, dcols, dtmp, tmpw, xp, gp, need_dx, need_dw,
                 o4, dm, db2, need_db, act, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW, Wp, S,
                 counter):
    T, N = cols.shape[0], d4.shape[0]
    counter[0] = 0
    for t in prange(T):
        _zero_grads(dw3[t], db2[t], need_dw, need_db)
        n = claim(counter) * S
        while n < N:
            conv_bwd(x5, w3, d4, dx5, dw3[t], cols[t], dcols[t], dtmp[t], tmpw[t], xp[t], gp[t],
                     need_dx, need_dw, o4, dm[t], db2[t], need_db, act, kh, kw, sh, sw, dh, dw,
                     pt, pl, OH, OW, Wp, S, n, min(n + S, N), False)
            n = claim(counter) * S


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
