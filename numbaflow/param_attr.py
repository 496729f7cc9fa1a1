"""ParamAttr: how a layer creates its parameter (name, initializer, lr scale, trainable)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .param_init import Initializer
    from .regularizer import L2Decay


class ParamAttr:
    """How a layer creates its parameter: name, initializer, learning-rate scale, trainable.

    Args:
        name (str, optional): the parameter's name; default a unique one such as `fc_0.w_0`.
        initializer (Initializer, optional): default the layer's (Xavier for weights, 0 for
            biases).
        learning_rate (float): a factor on the optimizer's learning rate for this parameter.
        regularizer (L2Decay, optional): weight decay for this parameter only.
        trainable (bool): False keeps it fixed (no gradient).
        do_model_average (bool): accepted for Paddle compatibility; ignored.
        need_clip (bool): whether gradient clipping applies to it.

    Example:
        >>> w = paddle.ParamAttr(name='fc_w', initializer=paddle.nn.initializer.Constant(0.5))
        >>> x = static.data('x', [None, 3])
        >>> y = static.nn.fc(x, size=2, weight_attr=w)
        >>> static.default_main_program().global_block().var('fc_w').shape
        (3, 2)
    """

    def __init__(self, name: str | None = None, initializer: Initializer | None = None,
                 learning_rate: float = 1.0, regularizer: L2Decay | None = None,
                 trainable: bool = True, do_model_average: bool = False,
                 need_clip: bool = True) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ParamAttr.name must be a str, got {type(name).__name__}")
        if initializer is not None and not hasattr(initializer, "_init_op"):
            hint = (" (a name is not enough: pass the object, e.g. "
                    "initializer=paddle.nn.initializer.XavierUniform() or Constant(0.0))"
                    if isinstance(initializer, str) else "")
            raise TypeError(f"ParamAttr: initializer must be an Initializer such as "
                            f"paddle.nn.initializer.XavierUniform(), got "
                            f"{type(initializer).__name__} {initializer!r}{hint}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.need_clip = need_clip

    @staticmethod
    def _to_attr(arg):
        if arg is None or arg is True:
            return ParamAttr()
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if hasattr(arg, "__call__") and hasattr(arg, "_init_op"):
            return ParamAttr(initializer=arg)
        raise TypeError(f"expected a ParamAttr, a name, an initializer or None, got "
                        f"{type(arg).__name__}")
