"""conv2d's CPU kernels: im2col + BLAS per group over a chunk of samples. Each kernel is a
worker (workshare.py) claiming the next chunk until none is left, with its own scratch
and its own dFilter / bias-gradient partial (summed after by `sum_partials`); conv.py runs
one worker per thread.

With the budget's threads
the LeNet's two convolutions use both cores: their GEMMs (6-16 filters x 25-150 x 100-784)
are far below the size at which a BLAS splits one product over threads, so one call per
chunk leaves the second core idle unless the samples are split. The BLAS itself runs at
one thread (no parallel region nests another: executor/threads.py).

One im2col / col2im pair serves every stride and dilation (a zero-bordered copy of the
plane, then plain copies), so a cold cache compiles one forward and one backward kernel
per conv (plus the 1x1 fast path), not one per geometry family."""
import numpy as np
from numba import njit

from ..fused.conv_epilogue import dout_epilogue, epilogue
from ..math.gemm_cpu import gemm
from ..workshare import PARALLEL_MIN_WORK, bind_workers, claim, parallel_threads  # noqa: F401

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
# that a chunk's columns stay within about an L2 cache (512 KB; conv.py: chunk_samples).
# Alone, the ResNet-20's 3x3 GEMMs ran at 35-56 GFLOP/s one sample at a time and 45-64
# four at a time (whole-batch products fell back to 24-58); inside the model step, 2 MB
# chunks were slower than one sample at a time (the columns pushed the activations out of
# cache, and every conv op's scratch added 200 MB of RSS), 512 KB ones level with it.
@njit(**JIT)
def _chunk(buf, rows, s, P):
    """The first rows * s * P elements of the flat scratch `buf` as a (rows, s*P) matrix."""
    return buf[:rows * s * P].reshape((rows, s * P))


@njit(**JIT)
def conv_fwd(x5, w3, out4, ab, mul2, add2, epi, act, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW, Wp, S,
             cols, tmp, xp, counter):
    """A worker: x5 (N, G, Cg, H, W), w3 (G, Mg, K), out4 (N, G, Mg, OH*OW), ab the BLAS
    scalars (gemm_cpu.blas_scalars); mul2, add2
    (G, Mg): the epilogue's; its own flat scratch cols (K*S*P) and tmp (Mg*S*P) and
    zero-bordered plane xp. Claims chunks of S samples from `counter` until none is left."""
    G, Mg, K = w3.shape
    N, P = x5.shape[0], OH * OW
    c0 = claim(counter) * S
    while c0 < N:
        s = min(S, N - c0)
        for g in range(G):
            cg = _chunk(cols, K, s, P)
            for j in range(s):
                im2col(x5[c0 + j, g], xp, cg, j * P, kh, kw, sh, sw, dh, dw, pt, pl, OH, OW,
                       Wp)
            if s == 1:
                gemm(w3[g], cg, out4[c0, g], False, False, ab)
            else:
                o = _chunk(tmp, Mg, s, P)
                gemm(w3[g], cg, o, False, False, ab)
                for j in range(s):
                    dst = out4[c0 + j, g]
                    for r in range(Mg):
                        for p in range(P):
                            dst[r, p] = o[r, j * P + p]
            for j in range(s):
                epilogue(out4[c0 + j, g], mul2[g], add2[g], epi, act)
        c0 = claim(counter) * S


@njit(**JIT)
def conv1x1_fwd(x4, w3, out4, ab, mul2, add2, epi, act, counter):
    """A worker for 1x1, stride 1, no padding: x4 (N, G, Cg, H*W) already is the columns;
    claims samples from `counter`."""
    n = claim(counter)
    while n < x4.shape[0]:
        for g in range(x4.shape[1]):
            gemm(w3[g], x4[n, g], out4[n, g], False, False, ab)
            epilogue(out4[n, g], mul2[g], add2[g], epi, act)
        n = claim(counter)


@njit(**JIT)
def _add_dfilter(d, cols, tmpw, dwg, ab):
    """dwg += d @ cols.T (tmpw: scratch). A loop, not `dwg += tmpw`: numba compiles that
    array expression for ~3 s of CPU on a cold cache, the rest of conv_bwd in ~1.3 s."""
    gemm(d, cols, tmpw, False, True, ab)
    for i in range(tmpw.shape[0]):
        for j in range(tmpw.shape[1]):
            dwg[i, j] += tmpw[i, j]


@njit(**JIT)
def _zero_partials(dw3, db2, need_dw, need_db):
    if need_dw:
        dw3[:] = 0
    if need_db:
        db2[:] = 0


# The backward workers take the epilogue's gradient too (fused_conv2d_grad): o4 (the
# Output, read when act), dm (Mg, OH*OW scratch) and db2 (G, Mg, the bias gradient);
# plain conv2d_grad passes need_db = act = False and empty arrays. Each worker sums its
# chunks' dFilter / bias gradient into its own dw3 / db2 (zeroed first: a worker may claim
# nothing), which conv.py adds up after (sum_partials) when there are several.
@njit(**JIT)
def conv_bwd(x5, w3, ab, d4, dx5, o4, need_dx, need_dw, need_db, act, kh, kw, sh, sw, dh, dw, pt, pl,
             OH, OW, Wp, S, dw3, db2, cols, dcols, dtmp, tmpw, dm, xp, gp, counter):
    """dFilter_g = sum_n dOut[n, g] @ cols(x[n, g])^T; dInput[n, g] = col2im(W_g^T @ dOut[n, g]),
    S samples at a time. Its own: the partials dw3, db2, flat scratch cols, dcols (K*S*P),
    dtmp (Mg*S*P), tmpw (Mg, K), dm (Mg, P), the zero-bordered planes xp, gp."""
    _zero_partials(dw3, db2, need_dw, need_db)
    G, Mg, K = w3.shape
    N, P = d4.shape[0], OH * OW
    c0 = claim(counter) * S
    while c0 < N:
        s = min(S, N - c0)
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
                _add_dfilter(d, cg, tmpw, dw3[g], ab)
            if need_dx:
                dc = _chunk(dcols, K, s, P)
                gemm(w3[g], d, dc, True, False, ab)
                for j in range(s):
                    col2im(dc, j * P, gp, dx5[c0 + j, g], kh, kw, sh, sw, dh, dw, pt, pl,
                           OH, OW, Wp)
        c0 = claim(counter) * S


@njit(**JIT)
def conv1x1_bwd(x4, w3, ab, d4, dx4, o4, need_dx, need_dw, need_db, act, dw3, db2, tmpw, dm,
                counter):
    _zero_partials(dw3, db2, need_dw, need_db)
    n = claim(counter)
    while n < d4.shape[0]:
        for g in range(d4.shape[1]):
            d = dout_epilogue(d4[n, g], o4[n, g], dm, db2[g], need_db, act)
            if need_dw:
                _add_dfilter(d, x4[n, g], tmpw, dw3[g], ab)
            if need_dx:
                gemm(w3[g], d, dx4[n, g], True, False, ab)
        n = claim(counter)
