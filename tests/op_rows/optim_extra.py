"""Table rows for adagrad, rmsprop, adamax and adamw: numpy transcriptions of Paddle's
update formulas (its CPU kernels), in float64."""
import numpy as np

from numbaflow.testing.op_test import const, uniform

from . import f64, row

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
    return _out(ins, ParamOut=p, Moment1Out=m1, Moment2Out=m2)


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
