"""Optimizer update ops. Each is an elementwise body over the parameter, its gradient,
its state and the (broadcast, shape (1,)) learning rate; outputs overwrite the inputs
in place (ParamOut is Param), so an update allocates nothing.
"""
from . import scalar as S
from .elementwise import elementwise_op
from .registry import NO_GRAD, OPTIMIZER

_TRAITS = (OPTIMIZER, NO_GRAD)

elementwise_op(
    "sgd", ("Param", "Grad", "LearningRate"), lambda a, p, g, lr: p - lr * g,
    outputs=("ParamOut",), inplace={"ParamOut": "Param"}, traits=_TRAITS,
    doc="ParamOut = Param - LearningRate * Grad")


def _momentum(a, p, g, v, lr):
    v_new = a["mu"] * v + g
    if a["use_nesterov"]:
        return p - lr * (g + a["mu"] * v_new), v_new
    return p - lr * v_new, v_new


elementwise_op(
    "momentum", ("Param", "Grad", "Velocity", "LearningRate"), _momentum,
    outputs=("ParamOut", "VelocityOut"), attrs={"mu": 0.9, "use_nesterov": False},
    inplace={"ParamOut": "Param", "VelocityOut": "Velocity"}, traits=_TRAITS,
    doc="VelocityOut = mu * Velocity + Grad; ParamOut = Param - lr * VelocityOut "
        "(Nesterov: Param - lr * (Grad + mu * VelocityOut))")


def _adam(a, p, g, lr, m1, m2, b1p, b2p):
    b1, b2 = a["beta1"], a["beta2"]
    m1_new = b1 * m1 + (1.0 - b1) * g
    m2_new = b2 * m2 + (1.0 - b2) * g * g
    lr_t = lr * S.sqrt(1.0 - b2p) / (1.0 - b1p)
    p_new = p - lr_t * (m1_new / (S.sqrt(m2_new) + a["epsilon"] * S.sqrt(1.0 - b2p)))
    return p_new, m1_new, m2_new


elementwise_op(
    "adam", ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"),
    _adam, outputs=("ParamOut", "Moment1Out", "Moment2Out"),
    attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
    inplace={"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2"},
    traits=_TRAITS,
    doc="Adam as in Paddle: bias correction through Beta1Pow/Beta2Pow (updated by "
        "separate scale ops after the update)")
