"""sigmoid_cross_entropy_with_logits (Paddle's op) and its gradient, as scalar bodies.

Out = max(X, 0) - X * Label + log(1 + exp(-|X|)) elementwise (the numerically stable
form of -Label * log(sigmoid(X)) - (1 - Label) * log(1 - sigmoid(X))); where Label equals
`ignore_index` Out and the gradient are 0. Paddle's `normalize=True` (dividing by the
count of non-ignored labels) is built by the layer from ops, not here.

The optional `pos_weight` input w (Paddle's: 1 + (pos_weight - 1) * Label, built by
F.binary_cross_entropy_with_logits) scales only the log term, and Paddle's gradient is
(sigmoid(X) * w - Label) * Out@GRAD, which is not the derivative of that forward; both are
kept as Paddle's kernels have them, so training matches Paddle's.
"""
from .. import scalar as S
from ..math.elementwise import elementwise_op
from ..registry import NO_GRAD, Slot


def _ignored(a, label):
    return S.equal(label, float(a["ignore_index"]))


def _loss(a, x, label, w=None):
    log_term = S.log(1.0 + S.exp(-S.abs_(x)))
    out = S.maximum(x, 0.0) - x * label + (log_term if w is None else log_term * w)
    return S.where(_ignored(a, label), 0.0, out)


def _loss_grad(a, x, label, d, w=None):
    sig = 1.0 / (1.0 + S.exp(-x))
    return S.where(_ignored(a, label), 0.0, ((sig if w is None else sig * w) - label) * d)


def _rule(g):
    w = g.fwd("pos_weight")
    g.append("sigmoid_cross_entropy_with_logits_grad",
             {"X": g.fwd("X"), "Label": g.fwd("Label"), "Out@GRAD": g.dout("Out"),
              **({"pos_weight": w} if w is not None else {})},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


_ATTRS = {"ignore_index": -100, "normalize": False}

elementwise_op(
    "sigmoid_cross_entropy_with_logits",
    ("X", Slot("Label", no_grad=True), Slot("pos_weight", optional=True, no_grad=True)), _loss,
    attrs=_ATTRS, grad=_rule,
    doc="Out = max(X, 0) - X * Label + log(1 + exp(-|X|)); 0 where Label == ignore_index")
elementwise_op(
    "sigmoid_cross_entropy_with_logits_grad",
    ("X", "Label", "Out@GRAD", Slot("pos_weight", optional=True)), _loss_grad,
    outputs=(Slot("X@GRAD"),), attrs=_ATTRS, out_like={"X@GRAD": "X"}, traits=(NO_GRAD,),
    doc="X@GRAD = (sigmoid(X) * pos_weight - Label) * Out@GRAD (pos_weight 1 when absent); "
        "0 where Label == ignore_index")
