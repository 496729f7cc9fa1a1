"""fluid.regularizer: L1Decay and L2Decay with Paddle 1.x's argument name."""
from __future__ import annotations

from .. import optimizer as _opt

__all__ = ["L1Decay", "L1DecayRegularizer", "L2Decay", "L2DecayRegularizer"]


class L2Decay(_opt.L2Decay):
    """grad += regularization_coeff * param (Paddle 1.x argument name).

    Args:
        regularization_coeff (float): the coefficient.

    Example:
        >>> opt = fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L2Decay(1e-4))
    """

    def __init__(self, regularization_coeff: float = 0.0) -> None:
        super().__init__(regularization_coeff)


L2DecayRegularizer = L2Decay


class L1Decay(_opt.L1Decay):
    """grad += regularization_coeff * sign(param) (Paddle 1.x argument name).

    Args:
        regularization_coeff (float): the coefficient.

    Example:
        >>> opt = fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L1Decay(1e-4))
    """

    def __init__(self, regularization_coeff: float = 0.0) -> None:
        super().__init__(regularization_coeff)


L1DecayRegularizer = L1Decay
