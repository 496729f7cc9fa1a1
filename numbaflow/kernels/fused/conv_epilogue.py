"""The per-block steps a convolution's epilogue adds to conv.py's kernels (fused_conv2d,
conv_fused.py): the forward's per-channel `o * mul + add` and relu on each (sample,
group) block of Output, and the backward's relu mask and bias gradient on each block of
dOut; and the per-run fold of an is_test batch_norm into (mul, add).
"""
import numpy as np
from numba import njit

# what conv.py's kernels are compiled with (fastmath lets the row sums vectorise)
_JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


# The epilogue runs on each (sample, group) block right
# after its GEMM wrote it, while it is still in cache: `epi` 0 nothing, 1 adds a
# per-channel `add`, 2 computes `o * mul + add` (a folded batch_norm); `act` 1: relu.
# Plain conv2d passes epi = act = 0 and empty (G, 0) arrays.
@njit(inline="always", **_JIT)
def epilogue(o, mul, add, epi, act):
    """o[r, :] = act(o[r, :] * mul[r] + add[r]) for the epi / act modes above."""
    if epi == 0 and not act:
        return
    for r in range(o.shape[0]):
        row = o[r]
        if epi == 2:
            m, a = mul[r], add[r]
            for j in range(row.shape[0]):
                row[j] = row[j] * m + a
        elif epi == 1:
            a = add[r]
            for j in range(row.shape[0]):
                row[j] += a
        if act:
            for j in range(row.shape[0]):
                v = row[j]
                row[j] = v if v > 0 else 0


@njit(inline="always", **_JIT)
def dout_epilogue(d, o, dm, db, need_db, act):
    """The gradient the GEMMs use for one (sample, group) block of dOut `d`: d itself, or
    (act: relu) d masked by o > 0 written to `dm`; adds its row sums to the bias gradient
    `db` (need_db) in the same pass over d."""
    if not (need_db or act):
        return d
    for r in range(d.shape[0]):
        s = 0.0
        if act:
            for j in range(d.shape[1]):
                v = d[r, j] if o[r, j] > 0 else 0
                dm[r, j] = v
                s += v
        else:
            for j in range(d.shape[1]):
                s += d[r, j]
        if need_db:
            db[r] += s
    return dm if act else d


@njit(**_JIT)
def fold_bn(scale, shift, mean, var, bias, has_bias, eps, mul, add):
    """batch_norm(conv + bias) = conv * mul + add, per channel (float64 arithmetic)."""
    for m in range(mul.shape[0]):
        r = np.float64(scale[m]) / np.sqrt(np.float64(var[m]) + eps)
        b = np.float64(bias[m]) if has_bias else 0.0
        mul[m] = r
        add[m] = (b - np.float64(mean[m])) * r + np.float64(shift[m])
