"""dropout and dropout_grad (Paddle's ops).

dropout follows paddle/phi/kernels/cpu/dropout_kernel.cc: an element is dropped when a
uniform draw is < p; Mask is uint8; "upscale_in_train" scales kept values by 1/(1-p) in
training and is the identity at test, "downgrade_in_infer" keeps them unscaled in
training and multiplies by (1-p) at test; p == 1 gives zeros. Random numbers: with
`fix_seed` the generator is re-seeded from `seed` every run (the same mask each run, as
in Paddle); otherwise one generator is created from `seed` when the kernel is bound
(seed 0: fresh entropy) and advances every run, so each run draws a new mask while
`numbaflow.seed(n)` (which fixes the layers' seed attrs) reproduces the sequence.

The CUDA kernels are in nn_gpu.py: dropout draws on the host through `UniformDraws`, so CPU
and GPU masks agree.
"""
import functools

import numpy as np
from numba import njit

from . import nn_gpu
from ..registry import NO_GRAD, RANDOM, OpDef, Slot, VarInfo, numel, register_op

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
