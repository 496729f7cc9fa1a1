"""Table rows for Paddle's loss ops huber_loss, bce_loss, kldiv_loss (elementwise) and nll_loss.

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


# ---------------------------------------------------------------- nll_loss (not elementwise)
def nll_ref(ins, a):
    x, lab = f64(ins["X"]), ins["Label"]
    w = f64(ins["Weight"]) if "Weight" in ins else np.ones(x.shape[1])
    picked = np.zeros(lab.shape)
    weights = np.zeros(lab.shape)
    for idx in np.ndindex(*lab.shape):
        c = lab[idx]
        if c != a["ignore_index"]:
            picked[idx] = -w[c] * x[(idx[0], c) + idx[1:]]
            weights[idx] = w[c]
    total = weights.sum()
    out = {"none": picked, "sum": picked.sum(), "mean": picked.sum() / total}[a["reduction"]]
    dt = ins["X"].dtype
    return {"Out": np.asarray(out).astype(dt), "Total_weight": np.asarray(total).astype(dt)}


def _labels(shape, classes, ignore):
    def make(rng):
        lab = rng.integers(0, classes, shape)
        lab.flat[1] = ignore                              # an ignored position
        return lab
    return make


for _id, _x, _lab, _weight, _attrs in [
        ("mean", (5, 4), (5,), False, {}),
        ("weight-sum", (5, 4), (5,), True, {"reduction": "sum"}),
        ("weight-none", (5, 4), (5,), True, {"reduction": "none"}),
        ("4d-mean", (2, 3, 2, 3), (2, 2, 3), True, {}),
        ("ignore-1", (4, 3), (4,), False, {"ignore_index": 1, "reduction": "sum"})]:
    _ins = {"X": uniform(_x, -2.0, 0.0),
            "Label": _labels(_lab, _x[1], _attrs.get("ignore_index", -100))}
    if _weight:
        _ins["Weight"] = uniform((_x[1],), 0.5, 2.0)
    row("nll_loss", _ins, nll_ref, f"nll_loss-{_id}", attrs=_attrs, outputs_for_grad=("Out",))
