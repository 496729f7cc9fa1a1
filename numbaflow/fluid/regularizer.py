"""fluid.regularizer: L2Decay with Paddle 1.x's argument name."""
from .. import optimizer as _opt


class L2Decay(_opt.L2Decay):
    """grad += regularization_coeff * param.

    >>> fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L2Decay(1e-4))
    """

    def __init__(self, regularization_coeff=0.0):
        super().__init__(regularization_coeff)


L2DecayRegularizer = L2Decay
