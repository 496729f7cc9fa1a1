"""The optimizer base and the first-order rules: Optimizer (minimize = append_backward +
gradient clipping + weight decay + one update op per parameter, role OPTIMIZE), SGD, Momentum,
Adam. The learning rate is the persistable `learning_rate_N` (shape [1]), initialised in the
startup program; feed it or `Scope.set` it to change it, or give an `lr.LRScheduler`, whose
value is written into it before every run."""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from ..graph.backward import append_backward
from ..graph.program import OPTIMIZE, Variable, default_startup_program
from ..regularizer import L1Decay, L2Decay
from ..utils import unique_name
from . import lr

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..graph.program import Operator, Parameter, Program
    from ..nn.clip import ClipGradByGlobalNorm

class Optimizer:
    """Base class of the optimizers: `minimize(loss)` = `backward` (append_backward) +
    `apply_gradients` (gradient clipping, weight decay, one update op per parameter).

    The learning rate is the persistable `learning_rate_N` (shape [1]), initialised in the
    startup program; feed it or `Scope.set` it to change it, or pass a Variable.

    Args:
        learning_rate (float or Variable): the step size (>= 0).
        parameters (list of Parameter or str, optional): what to train; default every
            trainable parameter of the loss's program.
        weight_decay (float or L2Decay, optional): L2 regularisation coefficient.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        name (str, optional): accepted for Paddle compatibility.

    Raises:
        TypeError: a wrongly typed argument.
        ValueError: a negative learning rate.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> opt = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9)
        >>> optimize_ops, params_grads = opt.minimize(paddle.mean(static.nn.fc(x, size=1)))
        >>> isinstance(opt, paddle.optimizer.Optimizer), len(params_grads)
        (True, 2)
    """

    _accumulators = ()      # (name, fill value) per parameter

    def __init__(self, learning_rate: float | Variable | lr.LRScheduler = 0.001,
                 parameters: Sequence[Parameter | str] | None = None,
                 weight_decay: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        if not isinstance(learning_rate, (numbers.Number, Variable, lr.LRScheduler)):
            raise TypeError(f"learning_rate must be a float, a Variable or an "
                            f"optimizer.lr.LRScheduler, got "
                            f"{type(learning_rate).__name__}")
        if isinstance(learning_rate, numbers.Number) and learning_rate < 0:
            raise ValueError(f"learning_rate must be >= 0, got {learning_rate}")
        if weight_decay is not None and not isinstance(weight_decay, (numbers.Number, L2Decay,
                                                                      L1Decay)):
            raise TypeError(f"weight_decay must be a float or L2Decay, got "
                            f"{type(weight_decay).__name__}")
        if grad_clip is not None and not callable(grad_clip):
            raise TypeError("grad_clip must be a clip object such as "
                            "paddle.nn.ClipGradByGlobalNorm(1.0)")
        self._learning_rate = learning_rate
        self._parameter_list = parameters
        self.regularization = L2Decay(weight_decay) if isinstance(weight_decay, numbers.Number) \
            else weight_decay
        self._grad_clip = grad_clip
        self._lr_var = None

    def _lr_variable(self, block):
        if isinstance(self._learning_rate, Variable):
            return self._learning_rate
        if self._lr_var is None or self._lr_var.block is not block:
            name = unique_name.generate("learning_rate")
            self._lr_var = self._persistable(block, name, [1], "float32", self.get_lr())
            if isinstance(self._learning_rate, lr.LRScheduler):
                self._learning_rate._bind(block.program, self._lr_var)
        return self._lr_var

    def get_lr(self) -> float:
        """The current learning rate.

        Returns:
            float: the rate given, or a scheduler's current value.

        Example:
            >>> paddle.optimizer.SGD(learning_rate=0.1).get_lr()
            0.1
        """
        if isinstance(self._learning_rate, lr.LRScheduler):
            return float(self._learning_rate())
        if isinstance(self._learning_rate, Variable):
            raise TypeError(f"get_lr: the learning rate is the Variable "
                            f"{self._learning_rate.name}; fetch it with Executor.run")
        return float(self._learning_rate)

    @staticmethod
    def _persistable(block, name, shape, dtype, value):
        """A persistable var in `block`, filled with `value` by the startup program."""
        var = block.create_var(name, shape, dtype, persistable=True, stop_gradient=True)
        sblock = default_startup_program().global_block()
        svar = sblock.vars.get(name) or sblock.create_var(name, shape, dtype, persistable=True)
        sblock.append_op("fill_constant", outputs={"Out": svar},
                         attrs={"shape": list(shape), "value": float(value), "dtype": str(dtype)})
        return var

    def _accumulator(self, block, param, acc, value, shape=None):
        name = unique_name.generate(f"{param.name}_{acc}")
        return self._persistable(block, name, list(shape if shape is not None else param.shape),
                                 param.dtype, value)

    def backward(self, loss: Variable, startup_program: Program | None = None,
                 parameters: Sequence[Parameter | str] | None = None,
                 no_grad_set: Iterable[Variable | str] | None = None
                 ) -> list[tuple[Parameter, Variable]]:
        """Append the backward ops of `loss` (see `static.append_backward`).

        Args:
            loss (Variable): a scalar.
            startup_program (Program, optional): accepted for Paddle compatibility.
            parameters (list, optional): default the optimizer's, else every trainable one.
            no_grad_set (set, optional): variables to treat as constants.

        Returns:
            list of (Parameter, Variable): each parameter with its gradient.
        """
        params = parameters if parameters is not None else self._parameter_list
        return append_backward(loss, params, no_grad_set)

    def apply_gradients(self, params_grads: list[tuple[Parameter, Variable]]) -> list[Operator]:
        """Append gradient clipping, weight decay and one update op per parameter.

        Args:
            params_grads (list of (Parameter, Variable)): from `backward`.

        Returns:
            list of Operator: the update ops.
        """
        if not params_grads:
            return []
        block = params_grads[0][0].block
        with block.program.role_guard(OPTIMIZE):
            if self._grad_clip is not None:
                params_grads = self._grad_clip(params_grads)
            params_grads = [(p, self._regularized(block, p, g)) for p, g in params_grads]
            lr = self._lr_variable(block)
            ops = []
            for p, g in params_grads:
                plr = lr
                scale = p.optimize_attr.get("learning_rate", 1.0)
                if scale != 1.0:
                    plr = block.create_var(unique_name.generate(f"{p.name}_lr"), [1], lr.dtype)
                    block.append_op("scale", {"X": lr}, {"Out": plr}, {"scale": float(scale)})
                ops.extend(self._append_update(block, p, g, plr))
        return ops

    def _regularized(self, block, param, grad):
        reg = param.regularizer if param.regularizer is not None else self.regularization
        if reg is None or reg.coeff == 0.0:
            return grad
        src = param
        if isinstance(reg, L1Decay):
            src = block.create_var(unique_name.generate(f"{param.name}_sign"), param.shape,
                                   param.dtype)
            block.append_op("sign", {"X": param}, {"Out": src})
        decay = block.create_var(unique_name.generate(f"{param.name}_decay"), param.shape,
                                 param.dtype)
        block.append_op("scale", {"X": src}, {"Out": decay}, {"scale": reg.coeff})
        new_grad = block.create_var(unique_name.generate(f"{grad.name}_regularized"),
                                    grad.shape, grad.dtype)
        block.append_op("sum", {"X": [grad, decay]}, {"Out": new_grad})
        return new_grad

    def minimize(self, loss: Variable, startup_program: Program | None = None,
                 parameters: Sequence[Parameter | str] | None = None,
                 no_grad_set: Iterable[Variable | str] | None = None
                 ) -> tuple[list[Operator], list[tuple[Parameter, Variable]]]:
        """Append the backward and update ops that train `loss`.

        Args:
            loss (Variable): a scalar.
            startup_program (Program, optional): accepted for Paddle compatibility.
            parameters (list, optional): default the optimizer's, else every trainable one.
            no_grad_set (set, optional): variables to treat as constants.

        Returns:
            tuple: (optimize_ops, params_grads).

        Example:
            >>> x = static.data('x', [None, 3])
            >>> loss = paddle.mean(static.nn.fc(x, size=1))
            >>> opt = paddle.optimizer.SGD(learning_rate=0.01)
            >>> optimize_ops, params_grads = opt.minimize(loss)
            >>> sorted({op.type for op in optimize_ops})
            ['sgd']
        """
        _warn_if_trained_already(loss)
        params_grads = self.backward(loss, startup_program, parameters, no_grad_set)
        ops = self.apply_gradients(params_grads)
        return ops, params_grads

    def _append_update(self, block, param, grad, lr):
        raise NotImplementedError


class MinimizeTwiceWarning(UserWarning):
    """A second minimize of a loss its program already trains (each run updates twice).

    Args:
        message (str): what happened and how to keep it on purpose.

    Example:
        >>> issubclass(paddle.optimizer.MinimizeTwiceWarning, UserWarning)
        True
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


def _warn_if_trained_already(loss):
    """Paddle appends a second backward and update without a word; a user never means it
    by accident, so say what it does and how to keep it on purpose."""
    block = getattr(loss, "block", None)
    if block is None or f"{loss.name}@GRAD" not in block.vars or \
            not any(op.role == OPTIMIZE for op in block.ops):
        return
    import warnings
    warnings.warn(
        f"minimize({loss.name}): its program already trains this loss (an earlier minimize "
        f"added its backward and update ops); this call adds a second set, so every run "
        f"will update the parameters twice (Paddle does the same, silently). To change the "
        f"optimizer, build the program again; to apply two updates on purpose, call it inside "
        f"`with warnings.catch_warnings(): warnings.simplefilter('ignore', "
        f"paddle.optimizer.MinimizeTwiceWarning)`", MinimizeTwiceWarning, stacklevel=3)


class SGD(Optimizer):
    """Stochastic gradient descent: param -= lr * grad (op `sgd`).

    Args:
        learning_rate (float or Variable): the step size.
        parameters (list of Parameter or str, optional): what to train; default every
            trainable parameter of the loss's program.
        weight_decay (float or L2Decay, optional): L2 regularisation coefficient.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> opt = paddle.optimizer.SGD(learning_rate=0.1)
        >>> optimize_ops, params_grads = opt.minimize(loss)
        >>> sorted({op.type for op in optimize_ops})
        ['sgd']
    """

    def _append_update(self, block, p, g, lr):
        return [block.append_op("sgd", {"Param": p, "Grad": g, "LearningRate": lr},
                                {"ParamOut": p})]


class Momentum(Optimizer):
    """velocity = momentum * velocity + grad; param -= lr * velocity, or with Nesterov
    param -= lr * (grad + momentum * velocity) (op `momentum`).

    Args:
        learning_rate (float or Variable): the step size.
        momentum (float): the velocity decay.
        parameters (list of Parameter or str, optional): what to train; default every
            trainable parameter of the loss's program.
        use_nesterov (bool): Nesterov momentum.
        weight_decay (float or L2Decay, optional): L2 regularisation coefficient.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> opt = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9)
        >>> optimize_ops, params_grads = opt.minimize(loss)
        >>> sorted({op.type for op in optimize_ops})
        ['momentum']
    """

    def __init__(self, learning_rate: float | Variable = 0.001, momentum: float = 0.9,
                 parameters: Sequence[Parameter | str] | None = None,
                 use_nesterov: bool = False, weight_decay: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._momentum, self._nesterov = float(momentum), bool(use_nesterov)

    def _append_update(self, block, p, g, lr):
        v = self._accumulator(block, p, "velocity", 0.0)
        return [block.append_op("momentum", {"Param": p, "Grad": g, "Velocity": v,
                                             "LearningRate": lr},
                                {"ParamOut": p, "VelocityOut": v},
                                {"mu": self._momentum, "use_nesterov": self._nesterov})]


class Adam(Optimizer):
    """Adam with Paddle's bias correction (beta1^t, beta2^t kept per parameter and
    advanced by the op itself; op `adam`).

    Args:
        learning_rate (float or Variable): the step size.
        beta1 (float): the first-moment decay, in [0, 1).
        beta2 (float): the second-moment decay, in [0, 1).
        epsilon (float): added to the denominator.
        parameters (list of Parameter or str, optional): what to train; default every
            trainable parameter of the loss's program.
        weight_decay (float or L2Decay, optional): L2 regularisation coefficient.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        name (str, optional): accepted for Paddle compatibility.
        lazy_mode (bool): accepted for Paddle compatibility.

    Raises:
        ValueError: beta1 or beta2 outside [0, 1).

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> opt = paddle.optimizer.Adam(learning_rate=0.001)
        >>> optimize_ops, params_grads = opt.minimize(loss)
        >>> sorted({op.type for op in optimize_ops})
        ['adam']
    """

    def __init__(self, learning_rate: float | Variable = 0.001, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-8,
                 parameters: Sequence[Parameter | str] | None = None,
                 weight_decay: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None, name: str | None = None,
                 lazy_mode: bool = False) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        for nm, v in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= float(v) < 1.0:
                raise ValueError(f"Adam: {nm} must be in [0, 1), got {v}")
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _append_update(self, block, p, g, lr):
        m1 = self._accumulator(block, p, "moment1", 0.0)
        m2 = self._accumulator(block, p, "moment2", 0.0)
        b1p = self._accumulator(block, p, "beta1_pow_acc", self._beta1, shape=[1])
        b2p = self._accumulator(block, p, "beta2_pow_acc", self._beta2, shape=[1])
        # the op advances the beta powers itself (Beta1PowOut/Beta2PowOut in place), as
        # Paddle's does: no `scale` op per power
        return [block.append_op(
            "adam", {"Param": p, "Grad": g, "LearningRate": lr, "Moment1": m1, "Moment2": m2,
                     "Beta1Pow": b1p, "Beta2Pow": b2p},
            {"ParamOut": p, "Moment1Out": m1, "Moment2Out": m2, "Beta1PowOut": b1p,
             "Beta2PowOut": b2p},
            {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon})]


SGDOptimizer, MomentumOptimizer, AdamOptimizer = SGD, Momentum, Adam
