"""More optimizer update ops, with Paddle's update rules: adagrad, rmsprop, adamax and
adamw. Like optim.py's, each is an elementwise body over the parameter, its gradient,
its state and the (shape (1,)) learning rate, written in place.
"""
from .. import scalar as S
from ..math.elementwise import elementwise_op
from .optim import with_beta_pows
from ..registry import NO_GRAD, OPTIMIZER

_TRAITS = (OPTIMIZER, NO_GRAD)


def _adagrad(a, p, g, m, lr):
    m_new = m + g * g
    return p - lr * g / (S.sqrt(m_new) + a["epsilon"]), m_new


elementwise_op(
    "adagrad", ("Param", "Grad", "Moment", "LearningRate"), _adagrad,
    outputs=("ParamOut", "MomentOut"), attrs={"epsilon": 1e-6},
    inplace={"ParamOut": "Param", "MomentOut": "Moment"}, traits=_TRAITS,
    doc="MomentOut = Moment + Grad^2; ParamOut = Param - lr * Grad / (sqrt(MomentOut) + eps)")


def _rmsprop(a, p, g, ms, mg, mom, lr):
    rho, eps = a["decay"], a["epsilon"]
    ms_new = rho * ms + (1.0 - rho) * g * g
    if a["centered"]:
        mg_new = rho * mg + (1.0 - rho) * g
        denom = S.sqrt(ms_new - mg_new * mg_new + eps)
    else:
        mg_new = mg
        denom = S.sqrt(ms_new + eps)
    mom_new = a["momentum"] * mom + lr * g / denom
    return p - mom_new, mom_new, ms_new, mg_new


elementwise_op(
    "rmsprop", ("Param", "Grad", "MeanSquare", "MeanGrad", "Moment", "LearningRate"),
    _rmsprop, outputs=("ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut"),
    attrs={"decay": 0.9, "epsilon": 1e-10, "momentum": 0.0, "centered": False},
    inplace={"ParamOut": "Param", "MomentOut": "Moment", "MeanSquareOut": "MeanSquare",
             "MeanGradOut": "MeanGrad"}, traits=_TRAITS,
    doc="MeanSquareOut = rho * MeanSquare + (1 - rho) Grad^2; MomentOut = momentum * Moment "
        "+ lr * Grad / sqrt(MeanSquareOut [- MeanGradOut^2 if centered] + eps); "
        "ParamOut = Param - MomentOut")


def _adamax(a, p, g, lr, m, inf, b1p):
    b1 = a["beta1"]
    m_new = b1 * m + (1.0 - b1) * g
    inf_new = S.maximum(a["beta2"] * inf + a["epsilon"], S.abs_(g))
    return p - (lr / (1.0 - b1p)) * m_new / inf_new, m_new, inf_new


elementwise_op(
    "adamax", ("Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow"), _adamax,
    outputs=("ParamOut", "MomentOut", "InfNormOut"),
    attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
    inplace={"ParamOut": "Param", "MomentOut": "Moment", "InfNormOut": "InfNorm"},
    traits=_TRAITS,
    doc="MomentOut = b1 Moment + (1 - b1) Grad; InfNormOut = max(b2 InfNorm + eps, |Grad|); "
        "ParamOut = Param - lr / (1 - Beta1Pow) * MomentOut / InfNormOut")


def _adamw(a, p, g, lr, m1, m2, b1p, b2p):
    b1, b2 = a["beta1"], a["beta2"]
    lr = lr * a["lr_ratio"]
    if a["with_decay"]:
        p = p * (1.0 - lr * a["coeff"])
    m1_new = b1 * m1 + (1.0 - b1) * g
    m2_new = b2 * m2 + (1.0 - b2) * g * g
    lr_t = lr * S.sqrt(1.0 - b2p) / (1.0 - b1p)
    return (p - lr_t * (m1_new / (S.sqrt(m2_new) + a["epsilon"] * S.sqrt(1.0 - b2p))),
            m1_new, m2_new)


with_beta_pows(elementwise_op(
    "adamw", ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"),
    _adamw, outputs=("ParamOut", "Moment1Out", "Moment2Out"),
    attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "coeff": 0.01, "lr_ratio": 1.0,
           "with_decay": True},
    inplace={"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2"},
    traits=_TRAITS,
    doc="Adam with decoupled weight decay: Param *= 1 - lr * coeff (when with_decay), then "
        "Paddle's adam update (Beta1PowOut/Beta2PowOut as adam's)"))
