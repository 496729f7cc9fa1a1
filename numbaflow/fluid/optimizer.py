"""fluid.optimizer: SGD, Momentum, Adam, Adagrad, RMSProp, Adamax with Paddle 1.x's keyword
names.

`regularization` is the 2.x `weight_decay` (a float or fluid.regularizer.L2Decay),
`parameter_list` the 2.x `parameters`. The update ops are numbaflow.optimizer's.

>>> x = fluid.layers.data('x', [3])
>>> avg_cost = fluid.layers.mean(fluid.layers.fc(x, size=1))
>>> _ = fluid.optimizer.SGD(learning_rate=0.01).minimize(avg_cost)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import optimizer as _opt
from ..tensor.generator import shared_doc as _shared_doc

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..graph.program import Operator, Parameter, Program, Variable
    from ..nn.clip import ClipGradByGlobalNorm
    from ..optimizer import L2Decay

__all__ = ["SGD", "Momentum", "Adam", "Adagrad", "RMSProp", "Adamax", "SGDOptimizer",
           "MomentumOptimizer", "AdamOptimizer", "AdagradOptimizer", "RMSPropOptimizer",
           "AdamaxOptimizer"]


class _FluidNames:
    def minimize(self, loss: Variable, startup_program: Program | None = None,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 no_grad_set: Iterable[Variable | str] | None = None
                 ) -> tuple[list[Operator], list[tuple[Parameter, Variable]]]:
        """Append the backward and update ops that train `loss`.

        Args:
            loss (Variable): a scalar.
            startup_program (Program, optional): accepted for Paddle compatibility.
            parameter_list (list, optional): default the optimizer's, else every trainable one.
            no_grad_set (set, optional): variables to treat as constants.

        Returns:
            tuple: (optimize_ops, params_grads).
        """
        return super().minimize(loss, startup_program, parameter_list, no_grad_set)

    def backward(self, loss: Variable, startup_program: Program | None = None,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 no_grad_set: Iterable[Variable | str] | None = None,
                 callbacks: object = None) -> list[tuple[Parameter, Variable]]:
        """Append the backward ops of `loss` (see `fluid.backward.append_backward`).

        Args:
            loss (Variable): a scalar.
            startup_program (Program, optional): accepted for Paddle compatibility.
            parameter_list (list, optional): default the optimizer's, else every trainable one.
            no_grad_set (set, optional): variables to treat as constants.
            callbacks: accepted for Paddle compatibility.

        Returns:
            list of (Parameter, Variable): each parameter with its gradient.
        """
        return super().backward(loss, startup_program, parameter_list, no_grad_set)


# the arguments every fluid optimizer takes after its own, documented once
_COMMON_ARGS = """parameter_list (list of Parameter or str, optional): what to train; default every
            trainable parameter.
        regularization (float or L2Decay, optional): L2 regularisation coefficient.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        name (str, optional): accepted for Paddle compatibility."""


@_shared_doc(common=_COMMON_ARGS)
class SGD(_FluidNames, _opt.SGD):
    """param -= learning_rate * grad (Paddle 1.x argument names).

    Args:
        learning_rate (float or Variable): the step size.
        {common}

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> avg_cost = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> opt = fluid.optimizer.SGD(learning_rate=0.01)
        >>> optimize_ops, params_grads = opt.minimize(avg_cost)
        >>> sorted({op.type for op in optimize_ops})
        ['sgd']
    """

    def __init__(self, learning_rate: float | Variable,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)


class Momentum(_FluidNames, _opt.Momentum):
    """velocity = momentum * velocity + grad; param -= learning_rate * velocity (Paddle 1.x
    argument names).

    Args:
        learning_rate (float or Variable): the step size.
        momentum (float): the velocity decay.
        parameter_list (list of Parameter or str, optional): what to train; default every
            trainable parameter.
        use_nesterov (bool): Nesterov momentum.
        regularization (float or L2Decay, optional): L2 regularisation coefficient.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> avg_cost = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> opt = fluid.optimizer.Momentum(learning_rate=0.01, momentum=0.9)
        >>> optimize_ops, params_grads = opt.minimize(avg_cost)
        >>> sorted({op.type for op in optimize_ops})
        ['momentum']
    """

    def __init__(self, learning_rate: float | Variable, momentum: float,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 use_nesterov: bool = False, regularization: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, momentum, parameter_list, use_nesterov, regularization,
                         grad_clip, name)


@_shared_doc(common=_COMMON_ARGS)
class Adam(_FluidNames, _opt.Adam):
    """Adam with bias correction (Paddle 1.x argument names).

    Args:
        learning_rate (float or Variable): the step size.
        beta1 (float): the first-moment decay, in [0, 1).
        beta2 (float): the second-moment decay, in [0, 1).
        epsilon (float): added to the denominator.
        {common}
        lazy_mode (bool): accepted for Paddle compatibility.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> avg_cost = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> opt = fluid.optimizer.Adam(learning_rate=0.001)
        >>> optimize_ops, params_grads = opt.minimize(avg_cost)
        >>> sorted({op.type for op in optimize_ops})
        ['adam']
    """

    def __init__(self, learning_rate: float | Variable = 0.001, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-8,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None, name: str | None = None,
                 lazy_mode: bool = False) -> None:
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization,
                         grad_clip, name, lazy_mode)


@_shared_doc(common=_COMMON_ARGS)
class Adagrad(_FluidNames, _opt.Adagrad):
    """moment += grad^2; param -= learning_rate * grad / (sqrt(moment) + epsilon) (Paddle 1.x
    argument names).

    Args:
        learning_rate (float or Variable): the step size.
        epsilon (float): added to the denominator.
        {common}
        initial_accumulator_value (float): the moment's initial value.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> avg_cost = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, _ = fluid.optimizer.Adagrad(learning_rate=0.1).minimize(avg_cost)
        >>> sorted({op.type for op in optimize_ops})
        ['adagrad']
    """

    def __init__(self, learning_rate: float | Variable, epsilon: float = 1e-6,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None, name: str | None = None,
                 initial_accumulator_value: float = 0.0) -> None:
        super().__init__(learning_rate, epsilon, parameter_list, regularization, grad_clip,
                         name, initial_accumulator_value)


@_shared_doc(common=_COMMON_ARGS)
class RMSProp(_FluidNames, _opt.RMSProp):
    """RMSProp as Paddle's rmsprop op, optionally centered and with momentum (Paddle 1.x
    argument names).

    Args:
        learning_rate (float or Variable): the step size.
        rho (float): the mean-square decay.
        epsilon (float): added under the square root.
        momentum (float): the momentum of the update.
        centered (bool): subtract the squared mean gradient.
        {common}

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> avg_cost = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, _ = fluid.optimizer.RMSProp(learning_rate=0.01).minimize(avg_cost)
        >>> sorted({op.type for op in optimize_ops})
        ['rmsprop']
    """

    def __init__(self, learning_rate: float | Variable, rho: float = 0.95,
                 epsilon: float = 1e-6, momentum: float = 0.0, centered: bool = False,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, rho, epsilon, momentum, centered, parameter_list,
                         regularization, grad_clip, name)


@_shared_doc(common=_COMMON_ARGS)
class Adamax(_FluidNames, _opt.Adamax):
    """Adam with the infinity norm (Paddle's adamax op; Paddle 1.x argument names).

    Args:
        learning_rate (float or Variable): the step size.
        beta1 (float): the first-moment decay, in [0, 1).
        beta2 (float): the infinity-norm decay, in [0, 1).
        epsilon (float): added to the decayed norm.
        {common}

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> avg_cost = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, _ = fluid.optimizer.Adamax(learning_rate=0.01).minimize(avg_cost)
        >>> sorted({op.type for op in optimize_ops})
        ['adamax', 'scale']
    """

    def __init__(self, learning_rate: float | Variable = 0.001, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-8,
                 parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization,
                         grad_clip, name)


SGDOptimizer, MomentumOptimizer, AdamOptimizer = SGD, Momentum, Adam
AdagradOptimizer, RMSPropOptimizer, AdamaxOptimizer = Adagrad, RMSProp, Adamax
