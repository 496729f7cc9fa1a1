"""sigmoid_cross_entropy_with_logits (Paddle's op) and its gradient, as scalar bodies.

Out = max(X, 0) - X * Label + log(1 + exp(-|X|)) elementwise (the numerically stable
form of -Label * log(sigmoid(X)) - (1 - Label) * log(1 - sigmoid(X))); where Label equals
`ignore_index` Out and the gradient are 0. Paddle's `normalize=True` (dividing by the
count of non-ignored labels) is built by the layer from ops, not here.
"""
from . import scalar as S
from .elementwise import elementwise_op
from .registry import NO_GRAD, Slot


def _ignored(a, label):
    return S.equal(label, float(a["ignore_index"]))


def _loss(a, x, label):
    out = S.maximum(x, 0.0) - x * label + S.log(1.0 + S.exp(-S.abs_(x)))
    return S.where(_ignored(a, label), 0.0, out)


def _loss_grad(a, x, label, d):
    sig = 1.0 / (1.0 + S.exp(-x))
    return S.where(_ignored(a, label), 0.0, (sig - label) * d)


def _rule(g):
    g.append("sigmoid_cross_entropy_with_logits_grad",
             {"X": g.fwd("X"), "Label": g.fwd("Label"), "Out@GRAD": g.dout("Out")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


_ATTRS = {"ignore_index": -100, "normalize": False}

elementwise_op(
    "sigmoid_cross_entropy_with_logits", ("X", Slot("Label", no_grad=True)), _loss,
    attrs=_ATTRS, grad=_rule,
    doc="Out = max(X, 0) - X * Label + log(1 + exp(-|X|)); 0 where Label == ignore_index")
elementwise_op(
    "sigmoid_cross_entropy_with_logits_grad", ("X", "Label", "Out@GRAD"), _loss_grad,
    outputs=(Slot("X@GRAD"),), attrs=_ATTRS, out_like={"X@GRAD": "X"}, traits=(NO_GRAD,),
    doc="X@GRAD = (sigmoid(X) - Label) * Out@GRAD; 0 where Label == ignore_index")
