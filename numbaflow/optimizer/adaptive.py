"""Adagrad, RMSProp, Adamax, AdamW and Lamb (Paddle 2.x's signatures and update rules;
the ops are in kernels/optim/optim_extra.py and kernels/optim/lamb.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .optimizer import Optimizer

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..graph.program import Parameter, Variable
    from ..nn.clip import ClipGradByGlobalNorm
    from ..regularizer import L2Decay
    from .lr import LRScheduler

_COMMON = """        parameters (list of Parameter or str, optional): what to train; default every
            trainable parameter.
        weight_decay (float or L2Decay, optional): L2 regularisation coefficient.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        name (str, optional): accepted for Paddle compatibility."""


def _example(ctor, ops):
    return f"""
    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> optimize_ops, _ = paddle.optimizer.{ctor}.minimize(loss)
        >>> sorted({{op.type for op in optimize_ops}})
        {ops}
    """


def _unit_interval(cls, **values):
    for nm, v in values.items():
        if not 0.0 <= float(v) < 1.0:
            raise ValueError(f"{cls}: {nm} must be in [0, 1), got {v}")


class Adagrad(Optimizer):
    __doc__ = f"""moment += grad^2; param -= lr * grad / (sqrt(moment) + epsilon).

    Args:
        learning_rate (float, Variable or LRScheduler): the step size.
        epsilon (float): added to the denominator.
{_COMMON}
        initial_accumulator_value (float): the moment's initial value.
{_example("Adagrad(learning_rate=0.1)", "['adagrad']")}"""

    def __init__(self, learning_rate: float | Variable | LRScheduler, epsilon: float = 1e-6,
                 parameters: Sequence[Parameter | str] | None = None,
                 weight_decay: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None, name: str | None = None,
                 initial_accumulator_value: float = 0.0) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._epsilon, self._init_acc = float(epsilon), float(initial_accumulator_value)

    def _append_update(self, block, p, g, lr):
        m = self._accumulator(block, p, "moment", self._init_acc)
        return [block.append_op("adagrad", {"Param": p, "Grad": g, "Moment": m,
                                            "LearningRate": lr},
                                {"ParamOut": p, "MomentOut": m}, {"epsilon": self._epsilon})]


class RMSProp(Optimizer):
    __doc__ = f"""mean_square = rho * mean_square + (1 - rho) * grad^2;
    moment = momentum * moment + lr * grad / sqrt(mean_square [- mean_grad^2] + epsilon);
    param -= moment.

    Args:
        learning_rate (float, Variable or LRScheduler): the step size.
        rho (float): the mean-square decay.
        epsilon (float): added under the square root.
        momentum (float): the momentum of the update.
        centered (bool): subtract the squared mean gradient.
{_COMMON}
{_example("RMSProp(learning_rate=0.01)", "['rmsprop']")}"""

    def __init__(self, learning_rate: float | Variable | LRScheduler, rho: float = 0.95,
                 epsilon: float = 1e-6, momentum: float = 0.0, centered: bool = False,
                 parameters: Sequence[Parameter | str] | None = None,
                 weight_decay: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        if float(epsilon) < 0 or float(momentum) < 0 or float(rho) < 0:
            raise ValueError(f"RMSProp: rho ({rho}), epsilon ({epsilon}) and momentum "
                             f"({momentum}) must be >= 0")
        self._attrs = {"decay": float(rho), "epsilon": float(epsilon),
                       "momentum": float(momentum), "centered": bool(centered)}

    def _append_update(self, block, p, g, lr):
        mom = self._accumulator(block, p, "momentum", 0.0)
        ms = self._accumulator(block, p, "mean_square", 0.0)
        mg = self._accumulator(block, p, "mean_grad", 0.0)
        return [block.append_op(
            "rmsprop", {"Param": p, "Grad": g, "MeanSquare": ms, "MeanGrad": mg, "Moment": mom,
                        "LearningRate": lr},
            {"ParamOut": p, "MomentOut": mom, "MeanSquareOut": ms, "MeanGradOut": mg},
            dict(self._attrs))]


class Adamax(Optimizer):
    __doc__ = f"""Adam with the infinity norm: moment = b1 m + (1 - b1) g; inf_norm =
    max(b2 inf_norm + eps, |g|); param -= lr / (1 - b1^t) * moment / inf_norm.

    Args:
        learning_rate (float, Variable or LRScheduler): the step size.
        beta1 (float): the first-moment decay, in [0, 1).
        beta2 (float): the infinity-norm decay, in [0, 1).
        epsilon (float): added to the decayed norm.
{_COMMON}
{_example("Adamax(learning_rate=0.01)", "['adamax', 'scale']")}"""

    def __init__(self, learning_rate: float | Variable | LRScheduler = 0.001,
                 beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                 parameters: Sequence[Parameter | str] | None = None,
                 weight_decay: float | L2Decay | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _unit_interval("Adamax", beta1=beta1, beta2=beta2)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _append_update(self, block, p, g, lr):
        m = self._accumulator(block, p, "moment", 0.0)
        inf = self._accumulator(block, p, "inf_norm", 0.0)
        b1p = self._accumulator(block, p, "beta1_pow_acc", self._beta1, shape=[1])
        return [
            block.append_op("adamax", {"Param": p, "Grad": g, "LearningRate": lr, "Moment": m,
                                       "InfNorm": inf, "Beta1Pow": b1p},
                            {"ParamOut": p, "MomentOut": m, "InfNormOut": inf},
                            {"beta1": self._beta1, "beta2": self._beta2,
                             "epsilon": self._epsilon}),
            block.append_op("scale", {"X": b1p}, {"Out": b1p}, {"scale": self._beta1}),
        ]


class AdamW(Optimizer):
    __doc__ = f"""Adam with decoupled weight decay: param *= 1 - lr * weight_decay (for the
    parameters `apply_decay_param_fun(name)` accepts; all by default), then Adam's update.

    Args:
        learning_rate (float, Variable or LRScheduler): the step size.
        beta1 (float): the first-moment decay, in [0, 1).
        beta2 (float): the second-moment decay, in [0, 1).
        epsilon (float): added to the denominator.
        parameters (list of Parameter or str, optional): what to train.
        weight_decay (float): the decoupled decay coefficient.
        lr_ratio (callable, optional): param -> a factor on its learning rate.
        apply_decay_param_fun (callable, optional): name -> whether to decay it.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        lazy_mode (bool): accepted for Paddle compatibility.
        multi_precision (bool): accepted for Paddle compatibility.
        name (str, optional): accepted for Paddle compatibility.
{_example("AdamW(learning_rate=0.01)", "['adamw']")}"""

    def __init__(self, learning_rate: float | Variable | LRScheduler = 0.001,
                 beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                 parameters: Sequence[Parameter | str] | None = None,
                 weight_decay: float = 0.01, lr_ratio: Callable | None = None,
                 apply_decay_param_fun: Callable | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None, lazy_mode: bool = False,
                 multi_precision: bool = False, name: str | None = None) -> None:
        if not isinstance(weight_decay, (int, float)):
            raise TypeError(f"AdamW: weight_decay must be a float coefficient, got "
                            f"{type(weight_decay).__name__}")
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        _unit_interval("AdamW", beta1=beta1, beta2=beta2)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._coeff = float(weight_decay)
        self._lr_ratio = lr_ratio
        self._decay_fn = apply_decay_param_fun

    def _append_update(self, block, p, g, lr):
        m1 = self._accumulator(block, p, "moment1", 0.0)
        m2 = self._accumulator(block, p, "moment2", 0.0)
        b1p = self._accumulator(block, p, "beta1_pow_acc", self._beta1, shape=[1])
        b2p = self._accumulator(block, p, "beta2_pow_acc", self._beta2, shape=[1])
        with_decay = self._decay_fn is None or bool(self._decay_fn(p.name))
        ratio = 1.0 if self._lr_ratio is None else float(self._lr_ratio(p))
        # the op advances the beta powers in place, as Paddle's adamw does
        return [block.append_op(
            "adamw", {"Param": p, "Grad": g, "LearningRate": lr, "Moment1": m1, "Moment2": m2,
                      "Beta1Pow": b1p, "Beta2Pow": b2p},
            {"ParamOut": p, "Moment1Out": m1, "Moment2Out": m2, "Beta1PowOut": b1p,
             "Beta2PowOut": b2p},
            {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
             "coeff": self._coeff, "lr_ratio": ratio, "with_decay": with_decay})]


class Lamb(Optimizer):
    __doc__ = f"""LAMB (Paddle 2.x): Adam's bias-corrected direction plus lamb_weight_decay *
    param, scaled per parameter by the trust ratio ||param|| / ||direction||.

    Args:
        learning_rate (float, Variable or LRScheduler): the step size.
        lamb_weight_decay (float): the decay term's coefficient.
        beta1 (float): the first-moment decay, in [0, 1).
        beta2 (float): the second-moment decay, in [0, 1).
        epsilon (float): added to the denominator.
        parameters (list of Parameter or str, optional): what to train.
        grad_clip (ClipGradByGlobalNorm, optional): gradient clipping.
        exclude_from_weight_decay_fn (callable, optional): param -> True for no decay term.
        multi_precision (bool): accepted for Paddle compatibility.
        name (str, optional): accepted for Paddle compatibility.
{_example("Lamb(learning_rate=0.01)", "['lamb', 'scale']")}"""

    def __init__(self, learning_rate: float | Variable | LRScheduler = 0.001,
                 lamb_weight_decay: float = 0.01, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, parameters: Sequence[Parameter | str] | None = None,
                 grad_clip: ClipGradByGlobalNorm | None = None,
                 exclude_from_weight_decay_fn: Callable | None = None,
                 multi_precision: bool = False, name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        _unit_interval("Lamb", beta1=beta1, beta2=beta2)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._wd, self._exclude = float(lamb_weight_decay), exclude_from_weight_decay_fn

    def _append_update(self, block, p, g, lr):
        m1 = self._accumulator(block, p, "moment1", 0.0)
        m2 = self._accumulator(block, p, "moment2", 0.0)
        b1p = self._accumulator(block, p, "beta1_pow_acc", self._beta1, shape=[1])
        b2p = self._accumulator(block, p, "beta2_pow_acc", self._beta2, shape=[1])
        wd = 0.0 if self._exclude is not None and self._exclude(p) else self._wd
        return [
            block.append_op("lamb", {"Param": p, "Grad": g, "LearningRate": lr, "Moment1": m1,
                                     "Moment2": m2, "Beta1Pow": b1p, "Beta2Pow": b2p},
                            {"ParamOut": p, "Moment1Out": m1, "Moment2Out": m2},
                            {"beta1": self._beta1, "beta2": self._beta2,
                             "epsilon": self._epsilon, "weight_decay": wd}),
            block.append_op("scale", {"X": b1p}, {"Out": b1p}, {"scale": self._beta1}),
            block.append_op("scale", {"X": b2p}, {"Out": b2p}, {"scale": self._beta2}),
        ]
