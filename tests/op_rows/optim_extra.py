"""Table rows for adagrad, rmsprop, adamax and adamw: numpy transcriptions of Paddle's
update formulas (its CPU kernels), in float64."""
import numpy as np

from numbaflow.testing.op_test import const, ints, uniform

from . import f64, row
from .core import beta_pows_ref

X34 = (3, 4)
P34 = {"Param": uniform(X34), "Grad": uniform(X34), "LearningRate": const([0.05])}


def _out(ins, **arrays):
    dt = ins["Param"].dtype
    return {k: v.astype(dt) for k, v in arrays.items()}


def adagrad_ref(ins, a):
    p, g, m, lr = (f64(ins[k]) for k in ("Param", "Grad", "Moment", "LearningRate"))
    m = m + g * g
    return _out(ins, ParamOut=p - lr * g / (np.sqrt(m) + a["epsilon"]), MomentOut=m)


def rmsprop_ref(ins, a):
    p, g, ms, mg, mom, lr = (f64(ins[k]) for k in (
        "Param", "Grad", "MeanSquare", "MeanGrad", "Moment", "LearningRate"))
    rho, eps = a["decay"], a["epsilon"]
    ms = rho * ms + (1 - rho) * g * g
    if a["centered"]:
        mg = rho * mg + (1 - rho) * g
        mom = a["momentum"] * mom + lr * g / np.sqrt(ms - mg * mg + eps)
    else:
        mom = a["momentum"] * mom + lr * g / np.sqrt(ms + eps)
    return _out(ins, ParamOut=p - mom, MomentOut=mom, MeanSquareOut=ms, MeanGradOut=mg)


def adamax_ref(ins, a):
    p, g, lr, m, inf, b1p = (f64(ins[k]) for k in (
        "Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow"))
    m = a["beta1"] * m + (1 - a["beta1"]) * g
    inf = np.maximum(a["beta2"] * inf + a["epsilon"], np.abs(g))
    return _out(ins, ParamOut=p - lr / (1 - b1p) * m / inf, MomentOut=m, InfNormOut=inf)


def adamw_ref(ins, a):
    p, g, lr, m1, m2, b1p, b2p = (f64(ins[k]) for k in (
        "Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"))
    lr = lr * a["lr_ratio"]
    if a["with_decay"]:
        p = p - lr * a["coeff"] * p
    b1, b2 = a["beta1"], a["beta2"]
    m1 = b1 * m1 + (1 - b1) * g
    m2 = b2 * m2 + (1 - b2) * g * g
    m1_hat, m2_hat = m1 / (1 - b1p), m2 / (1 - b2p)
    # Paddle folds the bias corrections into lr and epsilon; this is the same value
    p = p - lr * m1_hat / (np.sqrt(m2_hat) + a["epsilon"])
    return dict(_out(ins, ParamOut=p, Moment1Out=m1, Moment2Out=m2),
                **beta_pows_ref(b1p, b2p, a, ins["Beta1Pow"].dtype))


row("adagrad", dict(P34, Moment=uniform(X34, 0.0, 1.0)), adagrad_ref, attrs={"epsilon": 1e-6})
for _centered in (False, True):
    row("rmsprop", dict(P34, MeanSquare=uniform(X34, 0.5, 1.0), MeanGrad=uniform(X34, -0.2, 0.2),
                        Moment=uniform(X34)), rmsprop_ref,
        f"rmsprop-{'centered' if _centered else 'plain'}",
        attrs={"decay": 0.95, "epsilon": 1e-6, "momentum": 0.9, "centered": _centered})
row("adamax", dict(P34, Moment=uniform(X34), InfNorm=uniform(X34, 0.0, 1.0),
                   Beta1Pow=const([0.9 ** 3])), adamax_ref)
for _decay in (True, False):
    row("adamw", dict(P34, Moment1=uniform(X34), Moment2=uniform(X34, 0.0, 0.5),
                      Beta1Pow=const([0.9 ** 3]), Beta2Pow=const([0.999 ** 3])), adamw_ref,
        f"adamw-{'decay' if _decay else 'no-decay'}",
        attrs={"coeff": 0.1, "lr_ratio": 0.5, "with_decay": _decay})


def lamb_ref(ins, a):
    p, g, lr, m1, m2, b1p, b2p = (f64(ins[k]) for k in (
        "Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"))
    b1, b2 = a["beta1"], a["beta2"]
    m1 = b1 * m1 + (1 - b1) * g
    m2 = b2 * m2 + (1 - b2) * g * g
    r = (m1 / (1 - b1p)) / (np.sqrt(m2 / (1 - b2p)) + a["epsilon"]) + a["weight_decay"] * p
    pn, rn = np.linalg.norm(p), np.linalg.norm(r)
    ratio = pn / rn if pn > 0 and rn > 0 else 1.0
    return _out(ins, ParamOut=p - lr * ratio * r, Moment1Out=m1, Moment2Out=m2)


for _wd in (0.01, 0.0):
    row("lamb", dict(P34, Moment1=uniform(X34), Moment2=uniform(X34, 0.0, 0.5),
                     Beta1Pow=const([0.9 ** 2]), Beta2Pow=const([0.999 ** 2])), lamb_ref,
        f"lamb-wd{_wd}", attrs={"weight_decay": _wd, "epsilon": 1e-6})
row("lamb", {"Param": const(np.zeros((2, 3))), "Grad": uniform((2, 3)),
             "LearningRate": const([0.1]), "Moment1": const(np.zeros((2, 3))),
             "Moment2": const(np.zeros((2, 3))), "Beta1Pow": const([0.9]),
             "Beta2Pow": const([0.999])}, lamb_ref, "lamb-zero-param-ratio-1")


# ---------------------------------------------------------------- auc (a metric with state)
def auc_ref(ins, a):
    """Buckets by sorting-free counting, then the ROC area by the rank statistic: the
    probability that a positive outscores a negative, ties (same bucket) counting 1/2."""
    nt = a["num_thresholds"]
    score = np.clip((ins["Predict"][:, -1].astype(np.float64) * nt).astype(np.int64), 0, nt)
    lab = ins["Label"].reshape(-1) != 0
    pos = ins["StatPos"] + np.bincount(score[lab], minlength=nt + 1)
    neg = ins["StatNeg"] + np.bincount(score[~lab], minlength=nt + 1)
    p_idx, n_idx = np.repeat(np.arange(nt + 1), pos), np.repeat(np.arange(nt + 1), neg)
    if len(p_idx) and len(n_idx):
        diff = p_idx[:, None] - n_idx[None, :]
        area = ((diff > 0) + 0.5 * (diff == 0)).mean()
    else:
        area = 0.0
    return {"AUC": np.array(area), "StatPosOut": pos.astype(np.int64),
            "StatNegOut": neg.astype(np.int64)}


def _probs(n):
    def make(rng):
        p = rng.uniform(0, 1, n)
        return np.stack([1 - p, p], 1)
    return make


for _id, _nt, _stats in [("fresh", 10, 0), ("accumulated", 7, 2)]:
    row("auc", {"Predict": _probs(12), "Label": ints((12, 1), 0, 2),
                "StatPos": (lambda n, s: lambda rng: rng.integers(0, s + 1, n + 1))(_nt, _stats),
                "StatNeg": (lambda n, s: lambda rng: rng.integers(0, s + 1, n + 1))(_nt, _stats)},
        auc_ref, f"auc-{_id}", attrs={"num_thresholds": _nt}, rtol=1e-12, atol=1e-12)
