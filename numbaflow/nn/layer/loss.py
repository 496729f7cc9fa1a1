"""Loss layers, generated from one table like the activations: each forward is its
`paddle.nn.functional` loss with the layer's arguments. A row whose functional this tree
does not have yet is skipped."""
from __future__ import annotations

from .. import functional as F
from .activation import make_layer

# (class, functional, constructor arguments in Paddle's order)
LOSSES = [
    ("CrossEntropyLoss", "cross_entropy",
     "weight: None = None, ignore_index: int = -100, reduction: str = 'mean', "
     "soft_label: bool = False, axis: int = -1, use_softmax: bool = True, "
     "label_smoothing: float = 0.0"),
    ("MSELoss", "mse_loss", "reduction: str = 'mean'"),
    ("L1Loss", "l1_loss", "reduction: str = 'mean'"),
    ("SmoothL1Loss", "smooth_l1_loss", "reduction: str = 'mean', delta: float = 1.0"),
    ("NLLLoss", "nll_loss", "weight: None = None, ignore_index: int = -100, "
                            "reduction: str = 'mean'"),
    ("BCELoss", "binary_cross_entropy", "weight: None = None, reduction: str = 'mean'"),
    ("BCEWithLogitsLoss", "binary_cross_entropy_with_logits",
     "weight: None = None, reduction: str = 'mean', pos_weight: None = None"),
    ("KLDivLoss", "kl_div", "reduction: str = 'mean'"),
    ("SoftMarginLoss", "soft_margin_loss", "reduction: str = 'mean'"),
    ("HingeEmbeddingLoss", "hinge_embedding_loss", "margin: float = 1.0, "
                                                   "reduction: str = 'mean'"),
]
# (class, functional, constructor arguments, forward's inputs)
LOSSES_3 = [("MarginRankingLoss", "margin_ranking_loss", "margin: float = 0.0, "
             "reduction: str = 'mean'", ("input", "other", "label"))]


def _doc(cls, fn, sig):
    args = "".join(f"        {a.split(':')[0].strip()} ({a.split(':')[1].split('=')[0].strip()})"
                   f": as in F.{fn}.\n" for a in sig.split(", ") if a)
    label = {"cross_entropy": "[None, 1], 'int64'", "nll_loss": "[None], 'int64'"}.get(
        fn, "[None, 3]")
    return (f"The loss `paddle.nn.functional.{fn}` as a layer: `loss = {cls}()(input, label)`."
            f"\n\n    Args:\n{args}        name (str, optional): a prefix for the output's "
            f"name.\n\n    Example:\n        >>> x = static.data('x', [None, 3])\n"
            f"        >>> y = static.data('y', {label})\n"
            f"        >>> paddle.nn.{cls}()(x, y).shape\n        ()\n")


__all__ = []
for _cls, _fn, _sig in LOSSES:
    if hasattr(F, _fn):
        globals()[_cls] = make_layer(_cls, _fn, _sig, ("input", "label"), _doc(_cls, _fn, _sig))
        __all__.append(_cls)
for _cls, _fn, _sig, _ins in LOSSES_3:
    globals()[_cls] = make_layer(_cls, _fn, _sig, _ins, _doc(_cls, _fn, _sig).replace(
        "    >>> paddle.nn.", "    >>> z = static.data('z', [None, 3])\n        >>> paddle.nn.")
        .replace("(x, y)", "(x, z, y)").replace("(input, label)", "(input, other, label)"))
    __all__.append(_cls)
