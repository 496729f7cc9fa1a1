"""Regularizers: what `weight_decay` and `ParamAttr(regularizer=...)` take. A low module
(no numbaflow imports), so that ParamAttr, the optimizers and the layers can all name
L2Decay without importing each other."""
from __future__ import annotations

__all__ = ["L1Decay", "L2Decay"]


class L2Decay:
    """grad += coeff * param (Paddle's L2Decay regularizer), for `weight_decay` or a
    parameter's `ParamAttr(regularizer=...)`.

    Args:
        coeff (float): the coefficient.

    Example:
        >>> opt = paddle.optimizer.SGD(0.1, weight_decay=paddle.optimizer.L2Decay(1e-4))
    """

    def __init__(self, coeff: float = 0.0) -> None:
        self.coeff = float(coeff)


class L1Decay:
    """grad += coeff * sign(param) (Paddle's L1Decay regularizer), for `weight_decay` or a
    parameter's `ParamAttr(regularizer=...)`.

    Args:
        coeff (float): the coefficient.

    Example:
        >>> opt = paddle.optimizer.SGD(0.1, weight_decay=paddle.optimizer.L1Decay(1e-4))
    """

    def __init__(self, coeff: float = 0.0) -> None:
        self.coeff = float(coeff)
