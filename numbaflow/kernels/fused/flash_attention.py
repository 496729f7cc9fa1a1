"""flash_attention: softmax(scale * Q K^T + Mask) V in tiles, without the score matrix.

Q [.., Tq, D], K [.., Tk, D], V [.., Tk, Dv] (the leading dims, batch and heads, equal),
Mask optional (broadcast over the leading dims, last dim Tk; no gradient), `causal` keeping
the positions j <= i of each [Tq, Tk] score matrix (fused_softmax_mask's rule); Out [.., Tq, Dv].

The unfused chain (matmul -> scale -> + mask -> softmax -> matmul) writes the [B, H, Tq, Tk]
scores and probabilities and reads them back, forward and backward: at the GPT d512's
b16 that is 32 MB per layer kept from the forward to the backward. Here each worker claims
a block of BLOCK_Q query rows of one (batch, head) item, computes its [BLOCK_Q, Tk]
probabilities with one BLAS product (gemm_cpu.gemm; under `causal` only up to the block's
last key) and one pass per row, and writes its output rows with a second product: one
such block per worker is all that exists of the scores. FlashAttention's online softmax
over key tiles (running max and sum, a rescaled accumulator) was measured first and
dropped: on a CPU the whole row block stays in L2, and the rescaling and extra calls
only cost (docs/architecture.md, "Attention without the score matrix").

The backward recomputes each block's probabilities instead of reading them (its rows are
whole, so no log-sum-exp has to be carried from the forward, which a rewrite could not
add a variable for): with delta = rowsum(dO * Out), dV += P^T dO, dS = scale * P *
(dO V^T - delta), dQ = dS K, dK += dS^T Q. A worker claims a whole (batch, head) item
(dK and dV sum over its query blocks). The work is shared over the threads by claiming.
"""
import math

import numpy as np
from numba import float64, njit

from ..fastmath import exp as _fast_exp
from ..gpu import gpu_util
from ..math.gemm_cpu import blas_scalars, gemm
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, numel, register_op
from ..workshare import bind_workers, claim, parallel_threads
from .softmax_mask import mask_rows

BLOCK_Q = 64     # query rows per claimed block: a [64, Tk] float32 score block is 64 KB at Tk 256

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)

_JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


@njit(**_JIT)
def _probabilities(q3, k3, mask2, mrow, bh, i0, i1, scale, has_mask, causal, ab, s):
    """s[:bq, :kend] = the probabilities of query rows i0:i1 of item bh over the keys they
    see (kend: all, or up to i1 under the causal rule, whose masked entries are 0); one
    product, then one pass over each row while the block is in cache."""
    Tq, Tk = q3.shape[1], k3.shape[1]
    kend = min(Tk, i1) if causal else Tk
    st = s[:i1 - i0, :kend]
    gemm(q3[bh, i0:i1], k3[bh, :kend], st, False, True, ab)
    for r in range(i1 - i0):
        row = st[r]
        valid = min(kend, i0 + r + 1) if causal else kend
        if has_mask:
            mr = mask2[mrow[bh * Tq + i0 + r]]
            for c in range(valid):
                row[c] = scale * row[c] + mr[c]
        else:
            for c in range(valid):
                row[c] = scale * row[c]
        m = row[0]
        for c in range(valid):
            m = max(m, row[c])
        total = 0.0
        for c in range(valid):
            e = _fast_exp(row[c] - m)
            row[c] = e
            total += e
        inv = q3.dtype.type(1.0 / total)
        for c in range(valid):
            row[c] = row[c] * inv
        for c in range(valid, kend):
            row[c] = 0.0
    return kend


@njit(**_JIT)
def attention_forward_worker(q3, k3, v3, mask2, mrow, out3, scale, has_mask, causal, ab,
                             counter):
    """Claim (item, query block) pieces: their rows of out3 = P V."""
    BH, Tq = q3.shape[0], q3.shape[1]
    nq = -(-Tq // BLOCK_Q)
    s = np.empty((BLOCK_Q, k3.shape[1]), q3.dtype)
    piece = claim(counter)
    while piece < BH * nq:
        bh, i0 = piece // nq, (piece % nq) * BLOCK_Q
        i1 = min(Tq, i0 + BLOCK_Q)
        kend = _probabilities(q3, k3, mask2, mrow, bh, i0, i1, scale, has_mask, causal, ab, s)
        gemm(s[:i1 - i0, :kend], v3[bh, :kend], out3[bh, i0:i1], False, False, ab)
        piece = claim(counter)


@njit(**_JIT)
def attention_backward_worker(q3, k3, v3, mask2, mrow, out3, dout3, dq3, dk3, dv3,
                              scale, has_mask, causal, ab, counter):
    """Claim (batch, head) items: their dQ, dK, dV, recomputing P block by block."""
    BH, Tq, D = q3.shape
    Tk, Dv = k3.shape[1], v3.shape[2]
    s = np.empty((BLOCK_Q, Tk), q3.dtype)
    dp = np.empty((BLOCK_Q, Tk), q3.dtype)
    tk = np.empty((Tk, max(D, Dv)), q3.dtype)
    bh = claim(counter)
    while bh < BH:
        dk3[bh] = 0
        dv3[bh] = 0
        for i0 in range(0, Tq, BLOCK_Q):
            i1 = min(Tq, i0 + BLOCK_Q)
            bq = i1 - i0
            qi, doi = q3[bh, i0:i1], dout3[bh, i0:i1]
            kend = _probabilities(q3, k3, mask2, mrow, bh, i0, i1, scale, has_mask, causal,
                                  ab, s)
            st, dpt = s[:bq, :kend], dp[:bq, :kend]
            gemm(st, doi, tk[:kend, :Dv], True, False, ab)       # dV += P^T dO_i
            dv3[bh, :kend] += tk[:kend, :Dv]
            gemm(doi, v3[bh, :kend], dpt, False, True, ab)       # dP = dO_i V^T
            for r in range(bq):
                delta = q3.dtype.type(0.0)                         # rowsum(dO * Out)
                for c in range(Dv):
                    delta += doi[r, c] * out3[bh, i0 + r, c]
                for c in range(kend):
                    dpt[r, c] = scale * st[r, c] * (dpt[r, c] - delta)
            gemm(dpt, k3[bh, :kend], dq3[bh, i0:i1], False, False, ab)   # dQ_i = dS K
            gemm(dpt, qi, tk[:kend, :D], True, False, ab)         # dK += dS^T Q_i
            dk3[bh, :kend] += tk[:kend, :D]
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
            gpu_util.launch_flat(kern.forward, rows * v3.shape[2], q3, k3, v3, mask2, mrow,
                                 lse, out3, scale, has_mask, causal)))
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
        out3 = outs["Out"][0].reshape(q3.shape[0], q3.shape[1], v3.shape[2])
        T = _threads(q3, k3, v3, q3.shape[0] * -(-q3.shape[1] // BLOCK_Q))
        return bind_workers(attention_forward_worker, (q3, k3, v3, mask2, mrow, out3, scale,
                            has_mask, causal, blas_scalars(q3.dtype)), [()] * T)
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
