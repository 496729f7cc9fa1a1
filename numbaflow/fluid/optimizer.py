"""fluid.optimizer: SGD, Momentum, Adam, Adagrad, RMSProp, Adamax with Paddle 1.x's keyword
names.

`regularization` is the 2.x `weight_decay` (a float or fluid.regularizer.L2Decay),
`parameter_list` the 2.x `parameters`. The update ops are numbaflow.optimizer's.

>>> fluid.optimizer.SGD(learning_rate=0.01).minimize(avg_cost)
"""
from .. import optimizer as _opt


class _FluidNames:
    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Append backward and update ops; return (optimize_ops, params_grads)."""
        return super().minimize(loss, startup_program, parameter_list, no_grad_set)

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 callbacks=None):
        return super().backward(loss, startup_program, parameter_list, no_grad_set)


class SGD(_FluidNames, _opt.SGD):
    """param -= learning_rate * grad"""

    def __init__(self, learning_rate, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)


class Momentum(_FluidNames, _opt.Momentum):
    """velocity = momentum * velocity + grad; param -= learning_rate * velocity"""

    def __init__(self, learning_rate, momentum, parameter_list=None, use_nesterov=False,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, momentum, parameter_list, use_nesterov, regularization,
                         grad_clip, name)


class Adam(_FluidNames, _opt.Adam):
    """Adam with bias correction (beta pows kept per parameter)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameter_list=None, regularization=None, grad_clip=None, name=None,
                 lazy_mode=False):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization,
                         grad_clip, name, lazy_mode)


class Adagrad(_FluidNames, _opt.Adagrad):
    """moment += grad^2; param -= lr * grad / (sqrt(moment) + epsilon)"""

    def __init__(self, learning_rate, epsilon=1e-6, parameter_list=None, regularization=None,
                 grad_clip=None, name=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, epsilon, parameter_list, regularization, grad_clip,
                         name, initial_accumulator_value)


class RMSProp(_FluidNames, _opt.RMSProp):
    """RMSProp as Paddle's rmsprop op (optionally centered, with momentum)."""

    def __init__(self, learning_rate, rho=0.95, epsilon=1e-6, momentum=0.0, centered=False,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, rho, epsilon, momentum, centered, parameter_list,
                         regularization, grad_clip, name)


class Adamax(_FluidNames, _opt.Adamax):
    """Adam with the infinity norm (Paddle's adamax op)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization,
                         grad_clip, name)


SGDOptimizer, MomentumOptimizer, AdamOptimizer = SGD, Momentum, Adam
AdagradOptimizer, RMSPropOptimizer, AdamaxOptimizer = Adagrad, RMSProp, Adamax
