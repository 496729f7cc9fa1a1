"""batch_norm, dropout and lookup_table_v2 (embedding), with their gradient ops.

batch_norm follows Paddle's CPU kernel (paddle/phi/kernels/cpu/batch_norm_kernel.cc):
training normalises with the *biased* batch variance (sum of squares / count) and
updates the running statistics with that same biased variance:
    running = momentum * running + (1 - momentum) * batch_stat
SavedMean is the batch mean and SavedVariance the inverse std 1/sqrt(var + eps), which
the gradient reuses. With global statistics (`use_global_stats`, or `is_test` without
`trainable_statistics`) Y uses the running Mean/Variance and nothing is updated; we then
also write SavedMean/SavedVariance from the running statistics (Paddle leaves them
unset), so batch_norm_grad needs no Mean/Variance inputs. MeanOut/VarianceOut are the
same Variables as Mean/Variance in a program (`inplace`); the kernel reads each channel's
running value before writing it, so it is also right when they are separate buffers.
Inputs are viewed as (A, C, B): (N, C, H*W) for NCHW, (N*H*W, C, 1) for NHWC and 2-D.

dropout follows paddle/phi/kernels/cpu/dropout_kernel.cc: an element is dropped when a
uniform draw is < p; Mask is uint8; "upscale_in_train" scales kept values by 1/(1-p) in
training and is the identity at test, "downgrade_in_infer" keeps them unscaled in
training and multiplies by (1-p) at test; p == 1 gives zeros. Random numbers: with
`fix_seed` the generator is re-seeded from `seed` every run (the same mask each run, as
in Paddle); otherwise one generator is created from `seed` when the kernel is bound
(seed 0: fresh entropy) and advances every run, so each run draws a new mask while
`numbaflow.seed(n)` (which fixes the layers' seed attrs) reproduces the sequence.

lookup_table_v2 follows Paddle's LookupTableV2 CPU kernels: rows whose id equals
`padding_idx` (-1 = none) are zero and get no gradient; any other id outside
[0, vocab) raises ValueError (MAY_FAIL); the dense W@GRAD accumulates repeated ids.

The CUDA kernels are in nn_gpu.py (dropout draws on the host through `UniformDraws`, so
CPU and GPU masks agree; out-of-range ids go into the device's error record there).
"""
import functools

import numpy as np
from numba import njit

from . import nn_gpu
from .gpu_errors import ERR_LOOKUP, ERR_LOOKUP_GRAD, ERROR_MESSAGES, DataError
from .registry import MAY_FAIL, NO_GRAD, RANDOM, OpDef, Slot, VarInfo, numel, register_op


# ================================================================ batch_norm
# The channel sums may be reassociated: LLVM then vectorizes them (a strict float64
# left-to-right sum is one dependency chain); they still accumulate in float64.
_BN_JIT = dict(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


@njit(**_BN_JIT)
def bn_train(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv,
             momentum, eps):
    A, C, B = x.shape
    cnt = A * B
    for c in range(C):
        s = 0.0
        for a in range(A):
            for b in range(B):
                s += x[a, c, b]
        mu = s / cnt
        v = 0.0
        for a in range(A):
            for b in range(B):
                d = x[a, c, b] - mu
                v += d * d
        var = v / cnt                       # biased, as Paddle
        bn_normalize_channel(x, c, mu, var, scale, bias, mean_in, var_in, y, mean_out,
                             var_out, saved_mean, saved_inv, momentum, eps)


@njit(**_BN_JIT)
def bn_normalize_channel(x, c, mu, var, scale, bias, mean_in, var_in, y, mean_out, var_out,
                         saved_mean, saved_inv, momentum, eps):
    """Channel c of a training batch_norm given its batch statistics: running statistics
    (each running value read before it is written: MeanOut is Mean in a program), saved
    statistics, and Y. Shared by batch_norm and sync_batch_norm."""
    A, _, B = x.shape
    inv = 1.0 / np.sqrt(var + eps)
    mean_out[c] = momentum * mean_in[c] + (1.0 - momentum) * mu
    var_out[c] = momentum * var_in[c] + (1.0 - momentum) * var
    saved_mean[c] = mu
    saved_inv[c] = inv
    k = scale[c] * inv
    for a in range(A):
        for b in range(B):
            y[a, c, b] = (x[a, c, b] - mu) * k + bias[c]


@njit(**_BN_JIT)
def bn_global(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv,
              eps):
    A, C, B = x.shape
    for c in range(C):
        mu = mean_in[c]
        inv = 1.0 / np.sqrt(var_in[c] + eps)
        mean_out[c] = mu                    # unchanged (a copy when not in place)
        var_out[c] = var_in[c]
        saved_mean[c] = mu
        saved_inv[c] = inv
        k = scale[c] * inv
        for a in range(A):
            for b in range(B):
                y[a, c, b] = (x[a, c, b] - mu) * k + bias[c]


@njit(**_BN_JIT)
def bn_grad(x, scale, saved_mean, saved_inv, dy, dx, dscale, dbias, use_global,
            want_dx, want_dscale, want_dbias):
    A, C, B = x.shape
    cnt = A * B
    for c in range(C):
        mu, inv = saved_mean[c], saved_inv[c]
        sdy = 0.0
        sdyx = 0.0                          # sum(dy * xhat)
        for a in range(A):
            for b in range(B):
                d = dy[a, c, b]
                sdy += d
                sdyx += d * (x[a, c, b] - mu) * inv
        if want_dbias:
            dbias[c] = sdy
        if want_dscale:
            dscale[c] = sdyx
        if want_dx:
            k = scale[c] * inv
            m1, m2 = sdy / cnt, sdyx / cnt
            for a in range(A):
                for b in range(B):
                    if use_global:          # statistics are constants
                        dx[a, c, b] = k * dy[a, c, b]
                    else:
                        xhat = (x[a, c, b] - mu) * inv
                        dx[a, c, b] = k * (dy[a, c, b] - (m1 + xhat * m2))


def bn_acb(shape, layout):
    """The (A, C, B) view of a batch_norm input of `shape`."""
    if len(shape) == 2 or layout == "NHWC":
        C = shape[-1] if layout == "NHWC" else shape[1]
        return (numel(shape) // C, C, 1)
    return (shape[0], shape[1], numel(shape[2:]))


def bn_uses_global_stats(attrs):
    """True when batch_norm normalises with the running statistics (no batch statistics)."""
    return bool(attrs["use_global_stats"]) or (bool(attrs["is_test"]) and
                                               not attrs["trainable_statistics"])


def bn_infer(ctx):
    """batch_norm's shape inference."""
    x = ctx.input("X")
    xn = ctx.name("X")
    layout = ctx.attr("data_layout")
    if layout not in ("NCHW", "NHWC"):
        raise ctx.error(f"data_layout must be 'NCHW' or 'NHWC', got {layout!r}")
    if not 2 <= len(x.shape) <= 5:
        raise ctx.error(f"X {xn} must have rank 2 to 5, got shape {tuple(x.shape)}")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {xn} must be float32 or float64, got {x.dtype}")
    C = x.shape[-1] if layout == "NHWC" and len(x.shape) > 2 else x.shape[1]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        v = ctx.input(slot)
        if v is None:
            raise ctx.error(f"input {slot} is missing")
        if len(v.shape) != 1 or (C != -1 and v.shape[0] not in (C, -1)):
            raise ctx.error(f"{slot} {ctx.name(slot)} must have shape ({C},) (the channels "
                            f"of X {xn} {tuple(x.shape)}, layout {layout}), got "
                            f"{tuple(v.shape)}")
        if v.dtype != x.dtype:
            raise ctx.error(f"{slot} {ctx.name(slot)} must have X's dtype {x.dtype}, got "
                            f"{v.dtype}")
    stat = VarInfo((C,), x.dtype)
    return {"Y": VarInfo(tuple(x.shape), x.dtype), "MeanOut": stat, "VarianceOut": stat,
            "SavedMean": stat, "SavedVariance": stat}


def bn_cpu(cop):
    """batch_norm's CPU kernel thunk."""
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    glob = bn_uses_global_stats(cop.attrs)
    eps, mom = float(cop.attrs["epsilon"]), float(cop.attrs["momentum"])

    def bind(ins, outs):
        args = (ins["X"][0].reshape(acb), ins["Scale"][0], ins["Bias"][0], ins["Mean"][0],
                ins["Variance"][0], outs["Y"][0].reshape(acb), outs["MeanOut"][0],
                outs["VarianceOut"][0], outs["SavedMean"][0], outs["SavedVariance"][0])
        if glob:
            return functools.partial(bn_global, *args, eps)
        return functools.partial(bn_train, *args, mom, eps)
    return bind


def bn_gpu(cop):
    """batch_norm's GPU kernel thunk."""
    return nn_gpu.bn_forward(bn_acb(cop.input("X").shape, cop.attrs["data_layout"]),
                             bn_uses_global_stats(cop.attrs), float(cop.attrs["momentum"]),
                             float(cop.attrs["epsilon"]))


def bn_grad_gpu(cop):
    """batch_norm_grad's GPU kernel thunk."""
    return nn_gpu.bn_backward(bn_acb(cop.input("X").shape, cop.attrs["data_layout"]),
                              bn_uses_global_stats(cop.attrs))


def _bn_grad_rule(g):
    g.append("batch_norm_grad",
             {"X": g.fwd("X"), "Scale": g.fwd("Scale"), "Bias": g.fwd("Bias"),
              "SavedMean": g.fwd("SavedMean"), "SavedVariance": g.fwd("SavedVariance"),
              "Y@GRAD": g.dout("Y")},
             {"X@GRAD": g.dx("X"), "Scale@GRAD": g.dx("Scale"), "Bias@GRAD": g.dx("Bias")},
             dict(g.attrs))


def bn_grad_infer(ctx):
    """batch_norm_grad's shape inference."""
    return {"X@GRAD": ctx.input("X"), "Scale@GRAD": ctx.input("Scale"),
            "Bias@GRAD": ctx.input("Scale")}


def bn_grad_cpu(cop):
    """batch_norm_grad's CPU kernel thunk."""
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    glob = bn_uses_global_stats(cop.attrs)

    def bind(ins, outs):
        x = ins["X"][0].reshape(acb)
        C = acb[1]
        # absent outputs get small placeholders the kernel does not write
        dx = outs["X@GRAD"][0].reshape(acb) if outs.get("X@GRAD") else \
            np.empty((1, 1, 1), x.dtype)
        ds = outs["Scale@GRAD"][0] if outs.get("Scale@GRAD") else np.empty(C, x.dtype)
        db = outs["Bias@GRAD"][0] if outs.get("Bias@GRAD") else np.empty(C, x.dtype)
        return functools.partial(bn_grad, x, ins["Scale"][0], ins["SavedMean"][0],
                                 ins["SavedVariance"][0], ins["Y@GRAD"][0].reshape(acb),
                                 dx, ds, db, glob, bool(outs.get("X@GRAD")),
                                 bool(outs.get("Scale@GRAD")), bool(outs.get("Bias@GRAD")))
    return bind


BN_ATTRS = {"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "data_layout": "NCHW",
            "use_global_stats": False, "trainable_statistics": False}
register_op(OpDef(
    "batch_norm",
    (Slot("X"), Slot("Scale"), Slot("Bias"), Slot("Mean", no_grad=True),
     Slot("Variance", no_grad=True)),
    (Slot("Y"), Slot("MeanOut"), Slot("VarianceOut"), Slot("SavedMean"),
     Slot("SavedVariance")),
    bn_infer, bn_cpu, gpu=bn_gpu, attrs=dict(BN_ATTRS), grad=_bn_grad_rule,
    inplace={"MeanOut": "Mean", "VarianceOut": "Variance"},
    doc="Y = (X - mean) / sqrt(var + eps) * Scale + Bias per channel; batch statistics "
        "(biased variance) and a running-statistics update in training, the running "
        "statistics with is_test / use_global_stats"))
register_op(OpDef(
    "batch_norm_grad",
    (Slot("X"), Slot("Scale"), Slot("Bias", optional=True), Slot("SavedMean"),
     Slot("SavedVariance"), Slot("Y@GRAD")),
    (Slot("X@GRAD", optional=True), Slot("Scale@GRAD", optional=True),
     Slot("Bias@GRAD", optional=True)),
    bn_grad_infer, bn_grad_cpu, gpu=bn_grad_gpu, attrs=dict(BN_ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="Bias@GRAD = sum(dY); Scale@GRAD = sum(dY * xhat); X@GRAD through the batch "
        "statistics (training) or Scale * inv_std * dY (global statistics)"))


# ================================================================ dropout
@njit(nogil=True, cache=True, error_model="numpy")
def dropout_train(x, u, mask, out, p, keep_scale):
    for i in range(x.size):
        if u[i] < p:
            mask[i] = 0
            out[i] = 0.0
        else:
            mask[i] = 1
            out[i] = x[i] * keep_scale


@njit(nogil=True, cache=True, error_model="numpy")
def dropout_test(x, mask, out, factor):
    for i in range(x.size):
        mask[i] = 1
        out[i] = x[i] * factor


@njit(nogil=True, cache=True, error_model="numpy")
def dropout_bwd(mask, dout, dx, factor):
    for i in range(dx.size):
        dx[i] = dout[i] * factor if mask[i] else 0.0


def _dropout_factor(attrs):
    """Scale of kept values in the forward (and of the gradient through them)."""
    p, upscale = float(attrs["dropout_prob"]), attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:
        return 1.0 if upscale else 1.0 - p
    return (1.0 / (1.0 - p) if p < 1.0 else 0.0) if upscale else 1.0


def _dropout_infer(ctx):
    x = ctx.input("X")
    p = ctx.attr("dropout_prob")
    if not 0.0 <= float(p) <= 1.0:
        raise ctx.error(f"dropout_prob must be in [0, 1], got {p}")
    impl = ctx.attr("dropout_implementation")
    if impl not in ("downgrade_in_infer", "upscale_in_train"):
        raise ctx.error(f"dropout_implementation must be 'downgrade_in_infer' or "
                        f"'upscale_in_train', got {impl!r}")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    return {"Out": x, "Mask": VarInfo(tuple(x.shape), np.dtype("uint8"))}


class UniformDraws:
    """The uniform numbers of one bound dropout: `draws()` fills and returns the buffer u
    (n float64s) from the op's generator stream (see the module doc). The CPU and GPU
    kernels both draw through this class, so one seed gives one mask on both."""

    def __init__(self, n, attrs):
        self.u = np.empty(n, np.float64)
        self.seed = int(attrs["seed"])
        self.fixed = bool(attrs["fix_seed"]) and self.seed != 0
        self.rng = np.random.default_rng(self.seed or None)

    def __call__(self):
        rng = np.random.default_rng(self.seed) if self.fixed else self.rng
        rng.random(out=self.u)
        return self.u


class _DropoutRun:
    """The bound training thunk: owns the uniform draws."""

    def __init__(self, x, mask, out, attrs, draws):
        self.x, self.mask, self.out = x.reshape(-1), mask.reshape(-1), out.reshape(-1)
        self.draws = draws
        self.p, self.scale = float(attrs["dropout_prob"]), _dropout_factor(attrs)

    def __call__(self):
        dropout_train(self.x, self.draws(), self.mask, self.out, self.p, self.scale)


def _draws(cop):
    """One generator stream per specialised op, created once: the executor may bind the
    kernel again (new fed or fetched arrays) and the stream must go on, not restart."""
    return UniformDraws(numel(cop.input("X").shape), cop.attrs)


def _dropout_cpu(cop):
    draws = None if cop.attrs["is_test"] else _draws(cop)

    def bind(ins, outs):
        x, mask, out = ins["X"][0], outs["Mask"][0], outs["Out"][0]
        if cop.attrs["is_test"]:
            return functools.partial(dropout_test, x.reshape(-1), mask.reshape(-1),
                                     out.reshape(-1), _dropout_factor(cop.attrs))
        return _DropoutRun(x, mask, out, cop.attrs, draws)
    return bind


def _dropout_gpu(cop):
    draws = None if cop.attrs["is_test"] else _draws(cop)

    def bind(ins, outs):
        x, mask, out = ins["X"][0], outs["Mask"][0], outs["Out"][0]
        if cop.attrs["is_test"]:
            return nn_gpu.dropout_test(x, mask, out, _dropout_factor(cop.attrs))
        return nn_gpu.DropoutRun(draws, x, mask, out,
                                 float(cop.attrs["dropout_prob"]), _dropout_factor(cop.attrs))
    return bind


def _dropout_grad_rule(g):
    g.append("dropout_grad", {"Mask": g.fwd("Mask"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


def _dropout_grad_cpu(cop):
    factor = _dropout_factor(cop.attrs)

    def bind(ins, outs):
        return functools.partial(dropout_bwd, ins["Mask"][0].reshape(-1),
                                 ins["Out@GRAD"][0].reshape(-1),
                                 outs["X@GRAD"][0].reshape(-1), factor)
    return bind


def _dropout_grad_gpu(cop):
    factor = _dropout_factor(cop.attrs)
    return lambda ins, outs: nn_gpu.dropout_grad(ins["Mask"][0], ins["Out@GRAD"][0],
                                                 outs["X@GRAD"][0], factor)


DROPOUT_ATTRS = {"dropout_prob": 0.5, "is_test": False, "seed": 0, "fix_seed": False,
                 "dropout_implementation": "downgrade_in_infer"}
register_op(OpDef(
    "dropout", (Slot("X"),), (Slot("Out"), Slot("Mask")), _dropout_infer,
    _dropout_cpu, gpu=_dropout_gpu, attrs=dict(DROPOUT_ATTRS), grad=_dropout_grad_rule,
    traits=frozenset((RANDOM,)),
    doc="Out = X * Mask (* 1/(1-p) for upscale_in_train) in training, Mask ~ Bernoulli(1-p) "
        "(uint8); at test X (upscale_in_train) or X * (1-p) (downgrade_in_infer)"))
register_op(OpDef(
    "dropout_grad", (Slot("Mask"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
    lambda ctx: {"X@GRAD": ctx.input("Out@GRAD")}, _dropout_grad_cpu,
    gpu=_dropout_grad_gpu, attrs=dict(DROPOUT_ATTRS), traits=frozenset((NO_GRAD,)),
    doc="X@GRAD = Out@GRAD * Mask * the forward's scale of kept values"))


# ================================================================ lookup_table_v2
_LOOKUP_MSG = ERROR_MESSAGES[ERR_LOOKUP][1]      # an id out of range (DataError formats it)
_LOOKUP_GRAD_MSG = ERROR_MESSAGES[ERR_LOOKUP_GRAD][1]


@njit(nogil=True, cache=True, error_model="numpy")
def lookup_fwd(w, ids, out, padding_idx):
    V, D = w.shape
    for i in range(ids.size):
        k = ids[i]
        if k == padding_idx and padding_idx != -1:   # -1: no padding row
            for j in range(D):
                out[i, j] = 0.0
        elif k < 0 or k >= V:
            raise DataError(_LOOKUP_MSG, k, i, V)
        else:
            for j in range(D):
                out[i, j] = w[k, j]


@njit(nogil=True, cache=True, error_model="numpy")
def lookup_bwd(ids, dout, dw, padding_idx):
    V, D = dw.shape
    for r in range(V):
        for j in range(D):
            dw[r, j] = 0.0
    for i in range(ids.size):
        k = ids[i]
        if k == padding_idx and padding_idx != -1:   # -1: no padding row
            continue
        if k < 0 or k >= V:
            raise DataError(_LOOKUP_GRAD_MSG, k, i, V)
        for j in range(D):
            dw[k, j] += dout[i, j]


def _lookup_infer(ctx):
    w, ids = ctx.input("W"), ctx.input("Ids")
    wn, idn = ctx.name("W"), ctx.name("Ids")
    if len(w.shape) != 2:
        raise ctx.error(f"W {wn} must be 2-D (vocab, dim), got shape {tuple(w.shape)}")
    if w.dtype.kind != "f":
        raise ctx.error(f"W {wn} must be float32 or float64, got {w.dtype}")
    if ids.dtype.kind not in "iu":
        raise ctx.error(f"Ids {idn} must be int64 (or int32), got {ids.dtype}; cast them "
                        f"with paddle.cast(ids, 'int64')")
    pad = int(ctx.attr("padding_idx"))
    if pad != -1 and w.shape[0] != -1 and not 0 <= pad < w.shape[0]:
        raise ctx.error(f"padding_idx {pad} is outside [0, {w.shape[0]}) (W {wn} has "
                        f"{w.shape[0]} rows); -1 means no padding")
    return {"Out": VarInfo(tuple(ids.shape) + (w.shape[1],), w.dtype)}


def _lookup_cpu(cop):
    pad = int(cop.attrs["padding_idx"])

    def bind(ins, outs):
        w, ids = ins["W"][0], ins["Ids"][0]
        return functools.partial(lookup_fwd, w, ids.reshape(-1),
                                 outs["Out"][0].reshape(ids.size, w.shape[1]), pad)
    return bind


def _lookup_grad_rule(g):
    g.append("lookup_table_v2_grad",
             {"W": g.fwd("W"), "Ids": g.fwd("Ids"), "Out@GRAD": g.dout("Out")},
             {"W@GRAD": g.dx("W")}, dict(g.attrs))


def _lookup_grad_cpu(cop):
    pad = int(cop.attrs["padding_idx"])

    def bind(ins, outs):
        ids, dw = ins["Ids"][0], outs["W@GRAD"][0]
        return functools.partial(lookup_bwd, ids.reshape(-1),
                                 ins["Out@GRAD"][0].reshape(ids.size, dw.shape[1]), dw, pad)
    return bind


LOOKUP_ATTRS = {"padding_idx": -1, "is_sparse": False}
register_op(OpDef(
    "lookup_table_v2", (Slot("W"), Slot("Ids", no_grad=True)), (Slot("Out"),), _lookup_infer,
    _lookup_cpu, gpu=lambda cop: nn_gpu.lookup_forward(int(cop.attrs["padding_idx"])),
    attrs=dict(LOOKUP_ATTRS), grad=_lookup_grad_rule,
    traits=frozenset((MAY_FAIL,)),
    doc="Out[..., :] = W[Ids[...], :]; zero rows where Ids == padding_idx; ids outside "
        "[0, vocab) raise ValueError"))
register_op(OpDef(
    "lookup_table_v2_grad", (Slot("W"), Slot("Ids"), Slot("Out@GRAD")), (Slot("W@GRAD"),),
    lambda ctx: {"W@GRAD": ctx.input("W")}, _lookup_grad_cpu,
    gpu=lambda cop: nn_gpu.lookup_backward(int(cop.attrs["padding_idx"])),
    attrs=dict(LOOKUP_ATTRS),
    traits=frozenset((NO_GRAD, MAY_FAIL)),
    doc="W@GRAD (dense) = sum of Out@GRAD rows per id, none for padding_idx"))
