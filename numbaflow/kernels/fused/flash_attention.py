"""flash_attention: softmax(scale * Q K^T + Mask) V in tiles, without the score matrix.

Q [.., Tq, D], K [.., Tk, D], V [.., Tk, Dv] (the leading dims, batch and heads, equal),
Mask optional (broadcast over the leading dims, last dim Tk; no gradient), `causal` keeping
the positions j <= i of each [Tq, Tk] score matrix (fused_softmax_mask's rule). Out is
[.., Tq, Dv].

The unfused chain (matmul -> scale -> + mask -> softmax -> matmul) writes the [B, H, Tq, Tk]
scores and probabilities and reads them back, forward and backward: at the GPT d512's
b16 that is 32 MB per layer kept from the forward to the backward. Here each worker claims
a block of BLOCK_Q query rows of one (batch, head) item and walks the key blocks with an
online softmax (FlashAttention: the running row max m and sum l; the output accumulator
rescaled by exp(m_old - m_new) when the max grows), so a [BLOCK_Q, BLOCK_K] tile is all
that exists of the scores; under `causal` the key blocks right of the query block are
skipped. The tiles' products are BLAS calls (gemm_cpu.gemm).

The backward recomputes each tile's probabilities P = exp(S - LSE) instead of reading them
(FlashAttention-2; the rows' log-sum-exp LSE too, by one more score product per tile: a
rewrite may not add the variable that would carry it from the forward): with dO's row dots delta = rowsum(dO * Out), dV += P^T dO,
dS = P * (dO V^T - delta), dQ += scale * dS K, dK += scale * dS^T Q. A worker claims a
whole (batch, head) item (dK and dV sum over its query blocks). Both kernels share the
work over the op's threads by claiming (workshare.py).
"""
import functools
import math

import numpy as np
from numba import float64, njit

from ..fastmath import exp as _fast_exp
from ..gpu import gpu_util
from ..math.gemm_cpu import blas_scalars, gemm
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, numel, register_op
from ..workshare import bind_workers, claim, parallel_threads
from .softmax_mask import mask_rows

BLOCK_Q = 64     # query rows per claimed block
BLOCK_K = 128    # key columns per score tile: a 64 x 128 float32 tile (32 KB) stays in L2

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)

_JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


@njit(**_JIT)
def _scores(st, mask2, mrow, row0, j0, scale, has_mask, causal, bh_row):
    """Scale and mask the tile st (rows row0.., columns j0..) in place; the number of
    valid columns of each row is returned through the causal rule (the rest are -inf)."""
    bq, bk = st.shape
    for r in range(bq):
        lim = min(bk, row0 + r + 1 - j0) if causal else bk
        row = st[r]
        if has_mask:
            mr = mask2[mrow[bh_row + row0 + r]]
            for c in range(max(lim, 0)):
                row[c] = scale * row[c] + mr[j0 + c]
        else:
            for c in range(max(lim, 0)):
                row[c] = scale * row[c]
        for c in range(max(lim, 0), bk):
            row[c] = -np.inf


@njit(**_JIT)
def _online_softmax(q3, k3, v3, mask2, mrow, bh, i0, i1, scale, has_mask, causal, ab, s, pv,
                    acc, m, lsum, with_values):
    """Rows i0:i1 of item bh over the key tiles: the running max m and sum lsum of each
    score row, and (with_values) acc = the rows' unnormalised sum_j exp(s_ij - m_i) V_j."""
    Tq, Tk = q3.shape[1], k3.shape[1]
    bq = i1 - i0
    kend = min(Tk, i1) if causal else Tk
    acc[:bq] = 0
    m[:bq] = -np.inf
    lsum[:bq] = 0.0
    for j0 in range(0, kend, BLOCK_K):
        j1 = min(kend, j0 + BLOCK_K)
        st = s[:bq, :j1 - j0]
        gemm(q3[bh, i0:i1], k3[bh, j0:j1], st, False, True, ab)
        _scores(st, mask2, mrow, i0, j0, scale, has_mask, causal, bh * Tq)
        for r in range(bq):
            row = st[r]
            mnew = m[r]
            for c in range(j1 - j0):
                mnew = max(mnew, row[c])
            if mnew == -np.inf:        # nothing valid in this row yet
                row[:] = 0
                continue
            total = 0.0
            for c in range(j1 - j0):
                e = _fast_exp(row[c] - mnew)
                row[c] = e
                total += e
            if mnew != m[r]:           # the max grew: rescale what was summed
                alpha = _fast_exp(m[r] - mnew)
                lsum[r] *= alpha
                if with_values:
                    for c in range(acc.shape[1]):
                        acc[r, c] *= alpha
                m[r] = mnew
            lsum[r] += total
        if with_values:
            gemm(st, v3[bh, j0:j1], pv[:bq], False, False, ab)
            acc[:bq] += pv[:bq]


@njit(**_JIT)
def attention_forward_worker(q3, k3, v3, mask2, mrow, out3, scale, has_mask, causal, ab,
                             counter):
    """Claim (item, query block) pieces: their rows of out3 by the online softmax."""
    BH, Tq, D = q3.shape
    Dv = v3.shape[2]
    nq = -(-Tq // BLOCK_Q)
    s = np.empty((BLOCK_Q, BLOCK_K), q3.dtype)
    pv = np.empty((BLOCK_Q, Dv), q3.dtype)
    acc = np.empty((BLOCK_Q, Dv), q3.dtype)
    m = np.empty(BLOCK_Q, q3.dtype)
    lsum = np.empty(BLOCK_Q, np.float64)
    piece = claim(counter)
    while piece < BH * nq:
        bh, i0 = piece // nq, (piece % nq) * BLOCK_Q
        i1 = min(Tq, i0 + BLOCK_Q)
        _online_softmax(q3, k3, v3, mask2, mrow, bh, i0, i1, scale, has_mask, causal, ab, s,
                        pv, acc, m, lsum, True)
        for r in range(i1 - i0):
            inv = q3.dtype.type(1.0 / lsum[r]) if lsum[r] > 0 else q3.dtype.type(0.0)
            for c in range(Dv):
                out3[bh, i0 + r, c] = acc[r, c] * inv
        piece = claim(counter)


@njit(**_JIT)
def attention_backward_worker(q3, k3, v3, mask2, mrow, out3, dout3, dq3, dk3, dv3,
                              scale, has_mask, causal, ab, counter):
    """Claim (batch, head) items: their dQ, dK, dV, recomputing P tile by tile."""
    BH, Tq, D = q3.shape
    Tk, Dv = v3.shape[1], v3.shape[2]
    s = np.empty((BLOCK_Q, BLOCK_K), q3.dtype)
    m = np.empty(BLOCK_Q, q3.dtype)
    lsum = np.empty(BLOCK_Q, np.float64)
    lse = np.empty(BLOCK_Q, np.float64)
    dp = np.empty((BLOCK_Q, BLOCK_K), q3.dtype)
    tq = np.empty((BLOCK_Q, D), q3.dtype)
    tk = np.empty((BLOCK_K, max(D, Dv)), q3.dtype)
    delta = np.empty(BLOCK_Q, np.float64)
    bh = claim(counter)
    while bh < BH:
        dq3[bh] = 0
        dk3[bh] = 0
        dv3[bh] = 0
        for i0 in range(0, Tq, BLOCK_Q):
            i1 = min(Tq, i0 + BLOCK_Q)
            bq = i1 - i0
            qi, doi = q3[bh, i0:i1], dout3[bh, i0:i1]
            # the rows' log-sum-exp, recomputed (one score product per tile; keeping it
            # from the forward would need a variable the rewrite cannot add)
            _online_softmax(q3, k3, v3, mask2, mrow, bh, i0, i1, scale, has_mask, causal, ab,
                            s, tq, tq, m, lsum, False)
            for r in range(bq):
                lse[r] = m[r] + math.log(lsum[r]) if lsum[r] > 0 else np.inf
            for r in range(bq):
                acc = 0.0
                for c in range(Dv):
                    acc += doi[r, c] * out3[bh, i0 + r, c]
                delta[r] = acc
            for j0 in range(0, min(Tk, i1) if causal else Tk, BLOCK_K):
                j1 = min(min(Tk, i1) if causal else Tk, j0 + BLOCK_K)
                bk = j1 - j0
                kj, vj = k3[bh, j0:j1], v3[bh, j0:j1]
                st, dpt = s[:bq, :bk], dp[:bq, :bk]
                gemm(qi, kj, st, False, True, ab)
                _scores(st, mask2, mrow, i0, j0, scale, has_mask, causal, bh * Tq)
                for r in range(bq):
                    for c in range(bk):
                        st[r, c] = _fast_exp(st[r, c] - lse[r])
                gemm(st, doi, tk[:bk, :Dv], True, False, ab)       # dV_j += P^T dO_i
                dv3[bh, j0:j1] += tk[:bk, :Dv]
                gemm(doi, vj, dpt, False, True, ab)                # dP = dO_i V_j^T
                for r in range(bq):
                    for c in range(bk):
                        dpt[r, c] = scale * st[r, c] * (dpt[r, c] - delta[r])
                gemm(dpt, kj, tq[:bq], False, False, ab)           # dQ_i += dS K_j
                dq3[bh, i0:i1] += tq[:bq]
                gemm(dpt, qi, tk[:bk, :D], True, False, ab)        # dK_j += dS^T Q_i
                dk3[bh, j0:j1] += tk[:bk, :D]
        bh = claim(counter)


# ---------------------------------------------------------------- GPU
# The plain form: grid-stride kernels with one thread per output element, each
# recomputing the scores it needs from Q and K (the row statistics, log-sum-exp and
# delta = rowsum(dO * Out), first, one thread per score row). Correct, not tiled: the
# pass does not choose this op on a GPU (fuse_flash_attention's refusal).
@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda

    @cuda.jit(device=True)
    def score(q3, k3, mask2, mrow, bh, i, j, scale, has_mask, causal):
        if causal and j > i:
            return -math.inf
        acc = 0.0
        for d in range(q3.shape[2]):
            acc += float64(q3[bh, i, d]) * float64(k3[bh, j, d])
        acc *= scale
        if has_mask:
            acc += float64(mask2[mrow[bh * q3.shape[1] + i], j])
        return acc

    @cuda.jit(device=True)
    def dscore(q3, k3, v3, mask2, mrow, dout3, lse, delta, bh, i, j, scale, has_mask, causal):
        """dS_ij / scale = P_ij * (dO_i . V_j - delta_i)."""
        p = math.exp(score(q3, k3, mask2, mrow, bh, i, j, scale, has_mask, causal) -
                     lse[bh * q3.shape[1] + i])
        dp = 0.0
        for c in range(v3.shape[2]):
            dp += float64(dout3[bh, i, c]) * float64(v3[bh, j, c])
        return p * (dp - delta[bh * q3.shape[1] + i])

    @cuda.jit(cache=True)
    def stats(q3, k3, mask2, mrow, out3, dout3, lse, delta, scale, has_mask, causal, with_delta):
        BH, Tq, Tk = q3.shape[0], q3.shape[1], k3.shape[1]
        for n in range(cuda.grid(1), BH * Tq, cuda.gridsize(1)):
            bh, i = n // Tq, n % Tq
            m = -math.inf
            for j in range(Tk):
                m = max(m, score(q3, k3, mask2, mrow, bh, i, j, scale, has_mask, causal))
            total = 0.0
            for j in range(Tk):
                total += math.exp(score(q3, k3, mask2, mrow, bh, i, j, scale, has_mask,
                                        causal) - m)
            lse[n] = m + math.log(total) if total > 0.0 else math.inf
            if with_delta:
                acc = 0.0
                for c in range(out3.shape[2]):
                    acc += float64(dout3[bh, i, c]) * float64(out3[bh, i, c])
                delta[n] = acc

    @cuda.jit(cache=True)
    def forward(q3, k3, v3, mask2, mrow, lse, out3, scale, has_mask, causal):
        BH, Tq, Tk, Dv = q3.shape[0], q3.shape[1], k3.shape[1], v3.shape[2]
        for n in range(cuda.grid(1), BH * Tq * Dv, cuda.gridsize(1)):
            bh, i, c = n // (Tq * Dv), (n // Dv) % Tq, n % Dv
            acc = 0.0
            for j in range(Tk):
                acc += math.exp(score(q3, k3, mask2, mrow, bh, i, j, scale, has_mask, causal)
                                - lse[bh * Tq + i]) * float64(v3[bh, j, c])
            out3[bh, i, c] = acc

    @cuda.jit(cache=True)
    def grad_v(q3, k3, mask2, mrow, dout3, lse, dv3, scale, has_mask, causal):
        BH, Tq, Tk, Dv = q3.shape[0], q3.shape[1], k3.shape[1], dv3.shape[2]
        for n in range(cuda.grid(1), BH * Tk * Dv, cuda.gridsize(1)):
            bh, j, c = n // (Tk * Dv), (n // Dv) % Tk, n % Dv
            acc = 0.0
            for i in range(Tq):
                acc += math.exp(score(q3, k3, mask2, mrow, bh, i, j, scale, has_mask, causal)
                                - lse[bh * Tq + i]) * float64(dout3[bh, i, c])
            dv3[bh, j, c] = acc

    @cuda.jit(cache=True)
    def grad_qk(q3, k3, v3, mask2, mrow, dout3, lse, delta, dx3, scale, has_mask, causal,
                for_k):
        """dQ (for_k False: sum over keys of dS K) or dK (sum over queries of dS^T Q)."""
        BH, Tq, Tk, D = q3.shape[0], q3.shape[1], k3.shape[1], q3.shape[2]
        rows, other = (Tk, Tq) if for_k else (Tq, Tk)
        for n in range(cuda.grid(1), BH * rows * D, cuda.gridsize(1)):
            bh, a, d = n // (rows * D), (n // D) % rows, n % D
            acc = 0.0
            for b in range(other):
                i, j = (b, a) if for_k else (a, b)
                ds = dscore(q3, k3, v3, mask2, mrow, dout3, lse, delta, bh, i, j, scale,
                            has_mask, causal)
                acc += ds * (float64(q3[bh, i, d]) if for_k else float64(k3[bh, j, d]))
            dx3[bh, a, d] = scale * acc

    return gpu_util.Kernels(stats=stats, forward=forward, grad_v=grad_v, grad_qk=grad_qk)


def _numel3(a):
    return a.shape[0] * a.shape[1] * a.shape[2]


def _gpu(cop):
    def bind(ins, outs):
        q3, k3, v3, mask2, mrow, scale, has_mask, causal = _operands(cop, ins, "gpu")
        kern, rows = _gpu_kernels(), q3.shape[0] * q3.shape[1]
        out3 = outs["Out"][0].reshape(rows // q3.shape[1], q3.shape[1], v3.shape[2])
        lse = cuda.device_array(max(rows, 1), np.float64)
        return gpu_util.sequence((
            gpu_util.launch_flat(kern.stats, rows, q3, k3, mask2, mrow, out3, out3, lse, lse,
                                 scale, has_mask, causal, False),
            gpu_util.launch_flat(kern.forward, rows * v3.shape[2], q3, k3, v3, mask2, mrow, lse, out3,
                                 scale, has_mask, causal)))
    return bind


def _grad_gpu(cop):
    def bind(ins, outs):
        q3, k3, v3, mask2, mrow, scale, has_mask, causal = _operands(cop, ins, "gpu")
        kern, rows = _gpu_kernels(), q3.shape[0] * q3.shape[1]
        out3 = ins["Out"][0].reshape(q3.shape[0], q3.shape[1], v3.shape[2])
        dout3 = ins["Out@GRAD"][0].reshape(q3.shape[0], q3.shape[1], v3.shape[2])
        lse, delta = (cuda.device_array(max(rows, 1), np.float64) for _ in range(2))
        args = (mask2, mrow)
        calls = [gpu_util.launch_flat(kern.stats, rows, q3, k3, *args, out3, dout3, lse,
                                      delta, scale, has_mask, causal, True)]
        if outs.get("V@GRAD"):
            dv3 = outs["V@GRAD"][0].reshape(*v3.shape)
            calls.append(gpu_util.launch_flat(kern.grad_v, _numel3(v3), q3, k3, *args, dout3,
                                              lse, dv3, scale, has_mask, causal))
        for slot, like, for_k in (("Q@GRAD", q3, False), ("K@GRAD", k3, True)):
            if outs.get(slot):
                dx3 = outs[slot][0].reshape(*like.shape)
                calls.append(gpu_util.launch_flat(kern.grad_qk, _numel3(like), q3, k3, v3, *args,
                                                  dout3, lse, delta, dx3, scale, has_mask,
                                                  causal, for_k))
        return gpu_util.sequence(calls)
    return bind


# ---------------------------------------------------------------- shapes and binding
def _infer(ctx):
    q, k, v, m = (ctx.input(s) for s in ("Q", "K", "V", "Mask"))
    if np.dtype(q.dtype).kind != "f" or not (q.dtype == k.dtype == v.dtype):
        raise ctx.error(f"Q, K, V must share one float dtype, got {q.dtype}, {k.dtype}, "
                        f"{v.dtype}")
    lead = tuple(q.shape[:-2])
    if len(q.shape) < 3 or tuple(k.shape[:-2]) != lead or tuple(v.shape[:-2]) != lead or \
            q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ctx.error(f"expected Q [.., Tq, D], K [.., Tk, D], V [.., Tk, Dv] with the same "
                        f"leading dims, got {tuple(q.shape)}, {tuple(k.shape)}, "
                        f"{tuple(v.shape)}")
    if m is not None and (np.dtype(m.dtype) != np.dtype(q.dtype) or
                          len(m.shape) > len(q.shape) or m.shape[-1] not in (k.shape[-2], -1)):
        raise ctx.error(f"Mask {ctx.name('Mask')} {tuple(m.shape)} {m.dtype} must have Q's "
                        f"dtype and broadcast to the scores {lead + (q.shape[-2], k.shape[-2])}")
    return {"Out": VarInfo(lead + (q.shape[-2], v.shape[-1]), q.dtype),
}


def _operands(cop, ins, device="cpu"):
    """(q3, k3, v3, mask2, mrow, scale, has_mask, causal) of a bound op: the operands as
    [items, rows, cols], the mask as rows and each score row's mask row."""
    (qs, ks, vs), dt = (tuple(cop.input(s).shape) for s in "QKV"), np.dtype(cop.input("Q").dtype)
    lead = qs[:-2]
    BH = numel(lead)
    flat = (lambda a: a) if device == "gpu" else np.ascontiguousarray
    q3, k3, v3 = (flat(ins[s][0]).reshape(BH, shape[-2], shape[-1])
                  for s, shape in (("Q", qs), ("K", ks), ("V", vs)))
    if ins.get("Mask"):
        mrow = mask_rows(lead + (qs[-2], ks[-2]), tuple(cop.input("Mask").shape))
        mask2 = flat(ins["Mask"][0]).reshape(-1, ks[-2])
    else:
        mrow, mask2 = np.zeros(1, np.int64), np.zeros((1, 1), dt)
        if device == "gpu":
            mask2 = gpu_util.to_device(mask2)
    if device == "gpu":
        mrow = gpu_util.to_device(mrow)
    return (q3, k3, v3, mask2, mrow, dt.type(cop.attrs["scale"]), bool(ins.get("Mask")),
            bool(cop.attrs["causal"]))


def _threads(q3, k3, v3, units):
    work = q3.shape[0] * q3.shape[1] * k3.shape[1] * (q3.shape[2] + v3.shape[2])
    return parallel_threads(work, units)


def _cpu(cop):
    def bind(ins, outs):
        q3, k3, v3, mask2, mrow, scale, has_mask, causal = _operands(cop, ins)
        ab = blas_scalars(q3.dtype)
        out3 = outs["Out"][0].reshape(q3.shape[0], q3.shape[1], v3.shape[2])
        T = _threads(q3, k3, v3, q3.shape[0] * -(-q3.shape[1] // BLOCK_Q))
        return bind_workers(attention_forward_worker, (q3, k3, v3, mask2, mrow, out3, scale, has_mask, causal, ab), [()] * T)
    return bind


def _grad_cpu(cop):
    def bind(ins, outs):
        q3, k3, v3, mask2, mrow, scale, has_mask, causal = _operands(cop, ins)
        ab, BH = blas_scalars(q3.dtype), q3.shape[0]
        out3 = ins["Out"][0].reshape(BH, q3.shape[1], v3.shape[2])
        dout3 = np.ascontiguousarray(ins["Out@GRAD"][0]).reshape(out3.shape)
        grads = [outs[s][0].reshape(a.shape) if outs.get(s) else np.empty_like(a)
                 for s, a in (("Q@GRAD", q3), ("K@GRAD", k3), ("V@GRAD", v3))]
        T = _threads(q3, k3, v3, BH)
        return bind_workers(attention_backward_worker,
                            (q3, k3, v3, mask2, mrow, out3, dout3, *grads, scale,
                             has_mask, causal, ab), [()] * T)
    return bind


def _rule(g):
    ins = {s: [g.fwd(s)] for s in ("Q", "K", "V", "Out")}
    if g.fwd("Mask") is not None:
        ins["Mask"] = [g.fwd("Mask")]
    ins["Out@GRAD"] = [g.dout("Out")]
    g.append("flash_attention_grad", ins,
             {"Q@GRAD": g.dx("Q"), "K@GRAD": g.dx("K"), "V@GRAD": g.dx("V")}, dict(g.attrs))


_ATTRS = {"scale": 1.0, "causal": False}
_QKV = (Slot("Q"), Slot("K"), Slot("V"), Slot("Mask", optional=True, no_grad=True))

register_op(OpDef(
    "flash_attention", _QKV, (Slot("Out"),), _infer, _cpu, gpu=_gpu, attrs=dict(_ATTRS),
    grad=_rule,
    doc="Out = softmax(scale * Q K^T + Mask) V over [.., Tq, Tk] score tiles (causal: keys "
        "j <= i), never holding the scores"))
register_op(OpDef(
    "flash_attention_grad", _QKV + (Slot("Out"), Slot("Out@GRAD")),
    (Slot("Q@GRAD", optional=True), Slot("K@GRAD", optional=True),
     Slot("V@GRAD", optional=True)),
    lambda ctx: {"Q@GRAD": ctx.input("Q"), "K@GRAD": ctx.input("K"), "V@GRAD": ctx.input("V")},
    _grad_cpu, gpu=_grad_gpu, attrs=dict(_ATTRS), traits=frozenset((NO_GRAD,)),
    doc="dQ, dK, dV of flash_attention, recomputing each tile's probabilities"))
