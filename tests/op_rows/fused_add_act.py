"""Table rows for fused_elemwise_add_activation and its gradient op, with references
written from the math in numpy (not from the registered bodies the kernels compose).

The forward rows' gradient check differentiates Out and IntermediateOut, so it runs the
fused gradient op (for Out) and the unfused one (for IntermediateOut's own gradient)."""
import math

import numpy as np
from scipy.special import erf

from numbaflow.testing.op_test import away_from_zero, paddle_align, uniform

from . import F, row

OP = "fused_elemwise_add_activation"
GRAD = OP + "_grad"
_C = math.sqrt(2 / math.pi)


def _gelu_tanh(v):
    return 0.5 * v * (1 + np.tanh(_C * (v + 0.044715 * v ** 3)))


def _gelu_tanh_grad(v):
    t = np.tanh(_C * (v + 0.044715 * v ** 3))
    return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * _C * (1 + 3 * 0.044715 * v * v)


# act: (attrs, f, f' as a function of the input)
ACTS = {
    "relu": ({}, lambda v: np.maximum(v, 0.0), lambda v: (v > 0).astype(F)),
    "tanh": ({}, np.tanh, lambda v: 1 - np.tanh(v) ** 2),
    "sigmoid": ({}, lambda v: 1 / (1 + np.exp(-v)),
                lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2),
    "gelu": ({"approximate": False}, lambda v: 0.5 * v * (1 + erf(v / math.sqrt(2))),
             lambda v: 0.5 * (1 + erf(v / math.sqrt(2))) + v * np.exp(-v * v / 2) /
             math.sqrt(2 * math.pi)),
    "gelu_tanh": ({"approximate": True}, _gelu_tanh, _gelu_tanh_grad),
    # scale's bias is honoured (Paddle's kernel drops it)
    "scale": ({"scale": 2.0, "bias": 0.5}, lambda v: 2.0 * v + 0.5, lambda v: 2.0 + 0 * v),
    "scale_before": ({"scale": -1.5, "bias": 0.25, "bias_after_scale": False},
                     lambda v: (v + 0.25) * -1.5, lambda v: -1.5 + 0 * v),
}
# relu, tanh and sigmoid differentiate from their output, as their _grad ops
FROM_OUT = {"relu": lambda o: (o > 0).astype(F), "tanh": lambda o: 1 - o * o,
            "sigmoid": lambda o: o * (1 - o)}


def _name(act):
    return act.split("_")[0]


def _sum_to(g, shape, axis):
    """g summed down to `shape` (Paddle-aligned at `axis`)."""
    aligned = paddle_align(np.zeros(shape), g.ndim, axis).shape
    aligned = (1,) * (g.ndim - len(aligned)) + aligned       # axis -1: trailing
    axes = tuple(d for d in range(g.ndim) if aligned[d] == 1 and g.shape[d] != 1)
    return g.sum(axis=axes).reshape(shape)


def fwd_ref(act, outer):
    _, f, _ = ACTS[act]

    def ref(ins, a):
        x, y = ins["X"].astype(F), ins["Y"].astype(F)
        nd = max(x.ndim, y.ndim)
        x, yb = paddle_align(x, nd, a["axis"]), paddle_align(y, nd, a["axis"])
        if outer:
            inter = x + yb
            out = f(inter)
        else:
            inter = f(y)
            out = x + paddle_align(inter, nd, a["axis"])
        dt = ins["X"].dtype
        return {"Out": out.astype(dt), "IntermediateOut": inter.astype(dt)}
    return ref


# ---------------------------------------------------------------- forward (and its gradient)
# [act, add]: an fc-style bias on axis 1; X away from zero and Y small keep X + Y off
# relu's kink (finite differences)
for _act, (_attrs, _f, _df) in ACTS.items():
    row(OP, {"X": away_from_zero((2, 3, 2), 0.3, 1.5), "Y": uniform((3,), -0.1, 0.1)},
        fwd_ref(_act, True), f"{OP}-{_act}-add-axis1",
        attrs=dict(_attrs, functor_list=[_name(_act), "elementwise_add"], axis=1))
    # [add, act]: X + act(Y), same shapes (act(Y) is written as IntermediateOut)
    row(OP, {"X": uniform((3, 4)), "Y": away_from_zero((3, 4), 0.2, 1.5)},
        fwd_ref(_act, False), f"{OP}-add-{_act}",
        attrs=dict(_attrs, functor_list=["elementwise_add", _name(_act)]))
# X broadcast into Y (X is the smaller operand)
row(OP, {"X": uniform((4,), -0.1, 0.1), "Y": away_from_zero((3, 4), 0.3, 1.5)},
    fwd_ref("relu", True), f"{OP}-relu-add-x_smaller",
    attrs={"functor_list": ["relu", "elementwise_add"]})


# ---------------------------------------------------------------- the gradient op alone
def grad_ref(act, outer):
    """Gradients of the fused op from the given inputs, as the op defines them: the
    saved value is IntermediateOut when given, else recomputed from X, Y (or Out)."""
    df = ACTS[act][2]

    def ref(ins, a):
        y, d = ins["Y"].astype(F), ins["Out@GRAD"].astype(F)
        nd = d.ndim
        axis = a["axis"]
        if outer:      # Out = act(x + y)
            if _name(act) in FROM_OUT:      # the derivative from the given Out
                d_inter = d * FROM_OUT[_name(act)](ins["Out"].astype(F))
            else:
                inter = ins["IntermediateOut"].astype(F) if "IntermediateOut" in ins else \
                    paddle_align(ins["X"].astype(F), nd, axis) + paddle_align(y, nd, axis)
                d_inter = d * df(inter)
            x_shape = ins["X"].shape if "X" in ins else d.shape
            out = {"X@GRAD": _sum_to(d_inter, x_shape, axis),
                   "Y@GRAD": _sum_to(d_inter, y.shape, axis), "IntermediateOut@GRAD": d_inter}
        else:          # Out = x + act(y)
            x_shape = ins["X"].shape if "X" in ins else d.shape
            d_inter = _sum_to(d, y.shape, axis)
            out = {"X@GRAD": _sum_to(d, x_shape, axis), "Y@GRAD": d_inter * df(y),
                   "IntermediateOut@GRAD": d_inter}
        return {k: v.astype(ins["Out@GRAD"].dtype) for k, v in out.items()}
    return ref


def _grad_row(id, act, outer, inputs, axis=-1, with_inter=False):
    names = [_name(act) + "_grad", "elementwise_add_grad"]
    row(GRAD, inputs, grad_ref(act, outer), f"{GRAD}-{id}",
        attrs=dict(ACTS[act][0], functor_list=names if outer else names[::-1], axis=axis,
                   save_intermediate_out=with_inter))


# Paddle's own backward form: no X, no IntermediateOut; relu's mask from Out
_grad_row("relu-add-paddle_form", "relu", True,
          {"Y": uniform((3,)), "Out": lambda rng: np.maximum(uniform((2, 3, 4))(rng), 0.0),
           "Out@GRAD": uniform((2, 3, 4))}, axis=1)
# gelu's derivative at IntermediateOut = X + Y (given), and recomputed from X + Y
_grad_row("gelu-add-saved", "gelu", True,
          {"X": uniform((2, 3, 4)), "Y": uniform((3,)), "Out": uniform((2, 3, 4)),
           "IntermediateOut": uniform((2, 3, 4), -2, 2), "Out@GRAD": uniform((2, 3, 4))},
          axis=1, with_inter=True)
_grad_row("gelu_tanh-add-recomputed", "gelu_tanh", True,
          {"X": uniform((3, 4)), "Y": uniform((4,)), "Out": uniform((3, 4)),
           "Out@GRAD": uniform((3, 4))})
_grad_row("add-tanh-y_broadcast", "tanh", False,
          {"X": uniform((2, 3, 4)), "Y": uniform((3,)), "Out": uniform((2, 3, 4)),
           "Out@GRAD": uniform((2, 3, 4))}, axis=1)
_grad_row("add-scale-x_smaller", "scale", False,
          {"X": uniform((4,)), "Y": uniform((3, 4)), "Out": uniform((3, 4)),
           "Out@GRAD": uniform((3, 4))})


def _sigmoid_saved_ref(ins, a):
    # IntermediateOut is sigmoid(Y) as saved by the forward: its derivative s (1 - s)
    s, d = ins["IntermediateOut"].astype(F), ins["Out@GRAD"].astype(F)
    return {k: v.astype(ins["Out@GRAD"].dtype) for k, v in
            {"X@GRAD": d, "Y@GRAD": d * s * (1 - s), "IntermediateOut@GRAD": d}.items()}


row(GRAD, {"X": uniform((3, 4)), "Y": uniform((3, 4)), "Out": uniform((3, 4)),
           "IntermediateOut": uniform((3, 4), 0.1, 0.9), "Out@GRAD": uniform((3, 4))},
    _sigmoid_saved_ref, f"{GRAD}-add-sigmoid-saved",
    attrs={"functor_list": ["elementwise_add_grad", "sigmoid_grad"],
           "save_intermediate_out": True})
