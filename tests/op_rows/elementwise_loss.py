"""Table rows for Paddle's elementwise loss ops huber_loss, bce_loss and kldiv_loss.

References are numpy in float64 written from the losses' formulas (the Huber loss, the
binary cross-entropy with Paddle's log clip at -100, the KL divergence term), not from the
kernels; the gradients are checked by finite differences. Inputs keep away from the
kinks (|Y - X| = delta, Target = 0) where a finite difference is not a derivative.
"""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row


def huber_ref(ins, a):
    r = f64(ins["Y"]) - f64(ins["X"])
    d = a["delta"]
    out = np.where(np.abs(r) <= d, 0.5 * r ** 2, d * np.abs(r) - 0.5 * d ** 2)
    dt = ins["X"].dtype
    return {"Out": out.astype(dt), "Residual": r.astype(dt)}


def _residual_targets(rng):
    # Y - X lands in [0.1, 0.8] or [1.4, 2.3] in size: both sides of delta 1 and 1.2
    return rng.choice([-2.0, -0.5, 0.4, 1.7], (3, 4)) + rng.uniform(-0.1, 0.1, (3, 4))


for _id, _attrs in [("huber_loss", {}), ("huber_loss-delta", {"delta": 1.2})]:
    row("huber_loss", {"X": uniform((3, 4), -0.2, 0.2), "Y": _residual_targets}, huber_ref,
        _id, attrs=_attrs, outputs_for_grad=("Out",))


def bce_ref(ins, a):
    x, lab = f64(ins["X"]), f64(ins["Label"])
    out = -(lab * np.maximum(np.log(x), -100) + (1 - lab) * np.maximum(np.log1p(-x), -100))
    return {"Out": out.astype(ins["X"].dtype)}


row("bce_loss", {"X": uniform((3, 4), 0.05, 0.95), "Label": uniform((3, 4), 0.0, 1.0)},
    bce_ref, "bce_loss-soft")
row("bce_loss", {"X": lambda rng: np.array([[0.0, 1.0, 0.5], [1e-50, 0.3, 0.7]]),
                 "Label": lambda rng: np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])},
    lambda ins, a: {"Out": np.array([[100.0, 100.0, np.log(2)],
                                     [0.0, -np.log(0.3), -np.log(0.3)]], ins["X"].dtype)},
    "bce_loss-clipped", grad_inputs=())


def kldiv_ref(ins, a):
    x, t = f64(ins["X"]), f64(ins["Target"])
    out = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1.0)) - x), 0.0)
    return {"Loss": out.astype(ins["X"].dtype)}


def _targets(rng):
    t = rng.uniform(0.05, 1.0, (3, 4))
    t[rng.uniform(size=(3, 4)) < 0.3] = 0.0           # Paddle's 0 where Target <= 0
    t[0, 0] = -0.5
    return t


row("kldiv_loss", {"X": uniform((3, 4), -2.0, 0.0), "Target": _targets}, kldiv_ref,
    attrs={"reduction": "none"})
