"""Sampling: Paddle's `multinomial` op (draw category indices from rows of weights).

Like dropout, one generator is made from the `seed` attr when the kernel is bound and
advances every run: each run draws new samples, and `numbaflow.seed(n)` (which fixes
the seed attrs) reproduces the whole sequence; seed 0 draws fresh entropy. The uniform
draws come from numpy on the host; an njit loop turns them into indices by inverse CDF
(with replacement) or by drawing one index at a time and removing it (without). The GPU
kernel stages through the host (sampling reads a few rows per step; the draws must be
the CPU's to give one sequence per seed on both).
"""
import functools

import numpy as np
from numba import njit

from ..gpu.host_staged import host_staged
from ..registry import MAY_FAIL, NO_GRAD, RANDOM, OpDef, Slot, VarInfo, register_op


@njit(nogil=True, cache=True)
def multinomial_kernel(p2, u2, replacement, out2):
    """out2[r, j] = the category of draw u2[r, j] under the weights p2[r] (unnormalised,
    >= 0). Without replacement a drawn category's weight is zeroed for the next draws.
    Returns the first row whose weights are invalid (negative, or all zero), or -1."""
    C = p2.shape[1]
    w = np.empty(C, np.float64)
    for r in range(p2.shape[0]):
        total = 0.0
        for c in range(C):
            w[c] = p2[r, c]
            if not w[c] >= 0.0:      # negative or NaN
                return r
            total += w[c]
        for j in range(out2.shape[1]):
            if total <= 0.0:
                return r
            target = u2[r, j] * total
            acc, pick = 0.0, -1
            for c in range(C):
                if w[c] > 0.0:
                    pick = c         # the last positive weight catches rounding at the top
                    acc += w[c]
                    if target < acc:
                        break
            out2[r, j] = pick
            if not replacement:
                total -= w[pick]
                w[pick] = 0.0
    return -1


def _infer(ctx):
    x, n = ctx.input("X"), int(ctx.attr("num_samples"))
    if len(x.shape) not in (1, 2) or x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float weights of rank 1 or 2, got "
                        f"shape {tuple(x.shape)} dtype {x.dtype}")
    if n < 1:
        raise ctx.error(f"num_samples must be >= 1, got {n}")
    if not ctx.attr("replacement") and x.shape[-1] != -1 and n > x.shape[-1]:
        raise ctx.error(f"num_samples {n} exceeds the {x.shape[-1]} categories of X "
                        f"{ctx.name('X')}; pass replacement=True to draw more")
    return {"Out": VarInfo(tuple(x.shape[:-1]) + (n,), np.dtype("int64"))}


class _Draws:
    """The op's generator and the run: draw uniforms, pick indices, check the weights."""

    def __init__(self, rng, attrs, p2, out2):
        self.rng = rng
        self.replacement = bool(attrs["replacement"])
        self.p2, self.out2 = p2, out2
        self.u2 = np.empty(out2.shape, np.float64)

    def __call__(self):
        self.rng.random(out=self.u2)
        bad = multinomial_kernel(self.p2, self.u2, self.replacement, self.out2)
        if bad >= 0:
            raise ValueError(f"multinomial: row {bad} of the weights has a negative or NaN "
                             f"entry, or too few positive ones for the samples asked; "
                             f"weights must be >= 0 with a positive sum")


def _cpu(cop):
    C, n = cop.input("X").shape[-1], int(cop.attrs["num_samples"])
    # one stream per specialised op: the executor may bind again (new fed arrays) and
    # the stream must go on, not restart
    rng = np.random.default_rng(int(cop.attrs["seed"]) or None)
    return lambda ins, outs: _Draws(rng, cop.attrs, ins["X"][0].reshape(-1, C),
                                    outs["Out"][0].reshape(-1, n))


register_op(OpDef("multinomial", (Slot("X", no_grad=True),), (Slot("Out"),), _infer, _cpu,
                  gpu=lambda cop: functools.partial(host_staged, _cpu(cop)),
                  attrs={"num_samples": 1, "replacement": False, "seed": 0},
                  traits=frozenset((NO_GRAD, RANDOM, MAY_FAIL)),
                  doc="Out[..., j] = a category index drawn with probability proportional "
                      "to X[..., c] (without replacement unless `replacement`)"))
