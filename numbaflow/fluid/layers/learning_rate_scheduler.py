"""Paddle 1.8's learning-rate decays: `fluid.layers.exponential_decay(...)` etc.

Each returns the persistable learning-rate Variable to give an optimizer. As in Paddle
1.8, a global step counter (`@LR_DECAY_COUNTER@`, in the scope, so it is checkpointed)
advances once per run of the main program, and the rate of run k (counting from 0) is
the decay's formula at step k. numbaflow computes the formula on the host before each
run (the executor's learning-rate hook) instead of with ops in the graph: the numbers
are Paddle's, the program has no counter or decay ops.

>>> lr = fluid.layers.exponential_decay(learning_rate=0.1, decay_steps=100,
...                                     decay_rate=0.5, staircase=True)
>>> fluid.optimizer.SGD(learning_rate=lr).minimize(avg_cost)
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ...graph.program import Variable, default_main_program
from ...optimizer.lr import check_piecewise
from ...utils import unique_name
from .tensor import create_global_var

__all__ = ["autoincreased_step_counter", "exponential_decay", "natural_exp_decay", "inverse_time_decay",
           "polynomial_decay", "piecewise_decay", "noam_decay", "cosine_decay",
           "linear_lr_warmup"]

COUNTER = "@LR_DECAY_COUNTER@"


class _Counter:
    """Before a run: counter += step in the run's scope (the first run sees begin)."""

    def __init__(self, name=COUNTER, step=1):
        self.name, self.step = name, step

    def __call__(self, scope):
        if scope.find_var(self.name) is not None:
            scope.set(self.name, scope.get(self.name) + self.step)


def autoincreased_step_counter(counter_name: str | None = None, begin: int = 1,
                               step: int = 1) -> Variable:
    """A persistable int64 (1,) counter that reads `begin` in the first run of the main
    program and advances by `step` every run (Paddle 1.8's global step counter).

    Args:
        counter_name (str, optional): its name (default "@STEP_COUNTER@"); a second call
            with the same name returns the same counter.
        begin (int): the value in the first run.
        step (int): the increment per run.

    Returns:
        Variable: int64, shape (1,).

    Example:
        >>> step = fluid.layers.autoincreased_step_counter(begin=0)
        >>> step.shape, str(step.dtype)
        ((1,), 'int64')
    """
    program = default_main_program()
    name = counter_name or "@STEP_COUNTER@"
    if name in program.global_block().vars:
        return program.global_block().var(name)
    counter = create_global_var([1], int(begin) - int(step), "int64", persistable=True,
                                name=name)
    program.add_run_hook(_Counter(name, int(step)), first=True)
    return counter


class _Decay:
    """Before a run: lr = fn(counter + begin) into the run's scope."""

    def __init__(self, fn, name, begin):
        self.fn, self.name, self.begin = fn, name, begin

    def __call__(self, scope):
        if scope.find_var(COUNTER) is None or scope.find_var(self.name) is None:
            return
        step = int(scope.get(COUNTER)[0]) + self.begin
        scope.set(self.name, np.array([self.fn(step)], np.float32))


def _decayed(fn, begin=0):
    """The lr Variable of the main program whose value at run k is fn(k + begin)."""
    program = default_main_program()
    block = program.global_block()
    if COUNTER not in block.vars:
        create_global_var([1], -1, "int64", persistable=True, name=COUNTER)
        program.add_run_hook(_Counter(), first=True)
    lr = create_global_var([1], fn(begin), "float32", persistable=True,
                           name=unique_name.generate("learning_rate"))
    lr._lr_fn = lambda step: fn(step + begin)
    program.add_run_hook(_Decay(fn, lr.name, begin))
    return lr


def _positive(v, what, fn):
    if isinstance(v, bool) or not isinstance(v, numbers.Number) or v <= 0:
        raise ValueError(f"{fn}: {what} must be a positive number, got {v!r}")
    return v


def exponential_decay(learning_rate: float, decay_steps: int, decay_rate: float,
                      staircase: bool = False) -> Variable:
    """lr * decay_rate ^ (step / decay_steps) (floored with staircase).

    Args:
        learning_rate (float): the initial rate.
        decay_steps (int): steps per decay period.
        decay_rate (float): the factor per period.
        staircase (bool): decay in whole periods (floor(step / decay_steps)).

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.exponential_decay(0.1, decay_steps=100, decay_rate=0.5)
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    _positive(decay_steps, "decay_steps", "exponential_decay")

    def fn(step):
        div = step / decay_steps
        return learning_rate * decay_rate ** (math.floor(div) if staircase else div)
    return _decayed(fn)


def natural_exp_decay(learning_rate: float, decay_steps: int, decay_rate: float,
                      staircase: bool = False) -> Variable:
    """lr * exp(-decay_rate * (step / decay_steps)) (floored with staircase).

    Args:
        learning_rate (float): the initial rate.
        decay_steps (int): steps per decay period.
        decay_rate (float): the exponent per period.
        staircase (bool): decay in whole periods.

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.natural_exp_decay(0.1, decay_steps=100, decay_rate=0.5)
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    _positive(decay_steps, "decay_steps", "natural_exp_decay")

    def fn(step):
        div = step / decay_steps
        return learning_rate * math.exp(-decay_rate * (math.floor(div) if staircase else div))
    return _decayed(fn)


def inverse_time_decay(learning_rate: float, decay_steps: int, decay_rate: float,
                       staircase: bool = False) -> Variable:
    """lr / (1 + decay_rate * (step / decay_steps)) (floored with staircase).

    Args:
        learning_rate (float): the initial rate.
        decay_steps (int): steps per decay period.
        decay_rate (float): the rate of decay per period.
        staircase (bool): decay in whole periods.

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.inverse_time_decay(0.1, decay_steps=100, decay_rate=0.5)
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    _positive(decay_steps, "decay_steps", "inverse_time_decay")

    def fn(step):
        div = step / decay_steps
        return learning_rate / (1 + decay_rate * (math.floor(div) if staircase else div))
    return _decayed(fn)


def polynomial_decay(learning_rate: float, decay_steps: int, end_learning_rate: float = 0.0001,
                     power: float = 1.0, cycle: bool = False) -> Variable:
    """(lr - end) * (1 - step / decay_steps) ^ power + end; `cycle` restarts the decay.

    Args:
        learning_rate (float): the initial rate.
        decay_steps (int): steps to reach end_learning_rate.
        end_learning_rate (float): the final rate.
        power (float): the polynomial's power.
        cycle (bool): restart the decay every decay_steps.

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.polynomial_decay(0.1, decay_steps=100)
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    _positive(decay_steps, "decay_steps", "polynomial_decay")

    def fn(step):
        steps = decay_steps
        if cycle:
            steps = decay_steps * (math.ceil(step / decay_steps) if step else 1)
        else:
            step = min(step, decay_steps)
        return (learning_rate - end_learning_rate) * (1 - step / steps) ** power + \
            end_learning_rate
    return _decayed(fn)


def piecewise_decay(boundaries: list[int], values: list[float]) -> Variable:
    """values[i] while step < boundaries[i]; values[-1] after the last boundary.

    Args:
        boundaries (list of int): the steps where the rate changes.
        values (list of float): one more than boundaries.

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.piecewise_decay(boundaries=[100, 200], values=[0.1, 0.01, 0.001])
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    boundaries, values = check_piecewise(boundaries, values, "piecewise_decay")

    def fn(step):
        for b, v in zip(boundaries, values):
            if step < b:
                return float(v)
        return float(values[-1])
    return _decayed(fn)


def noam_decay(d_model: int, warmup_steps: int, learning_rate: float = 1.0) -> Variable:
    """lr * d_model^-0.5 * min(step^-0.5, warmup_steps^-1.5 * step), with the step counted
    from 1 (Paddle 1.8's noam counter begins at 1).

    Args:
        d_model (int): the model width.
        warmup_steps (int): steps of rising rate.
        learning_rate (float): a factor on the rate.

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.noam_decay(d_model=512, warmup_steps=4000)
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    _positive(warmup_steps, "warmup_steps", "noam_decay")

    def fn(step):
        return learning_rate * d_model ** -0.5 * min(step ** -0.5, warmup_steps ** -1.5 * step)
    return _decayed(fn, begin=1)


def cosine_decay(learning_rate: float, step_each_epoch: int, epochs: int) -> Variable:
    """lr * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1)

    Args:
        learning_rate (float): the initial rate.
        step_each_epoch (int): steps per epoch.
        epochs (int): epochs of the half cosine.

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.cosine_decay(0.1, step_each_epoch=100, epochs=10)
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    _positive(step_each_epoch, "step_each_epoch", "cosine_decay")

    def fn(step):
        epoch = math.floor(step / step_each_epoch)
        return learning_rate * 0.5 * (math.cos(epoch * math.pi / epochs) + 1)
    return _decayed(fn)


def linear_lr_warmup(learning_rate: float | Variable, warmup_steps: int, start_lr: float,
                     end_lr: float) -> Variable:
    """start_lr -> end_lr linearly over warmup_steps, then `learning_rate` (a float or the
    Variable of another decay of this module).

    Args:
        learning_rate (float or Variable): the rate after the warm-up (another decay's
            Variable continues that decay).
        warmup_steps (int): steps of the warm-up.
        start_lr (float): the first rate.
        end_lr (float): the rate the warm-up reaches.

    Returns:
        Variable: the persistable float32 (1,) learning rate, for an optimizer.

    Example:
        >>> lr = fluid.layers.linear_lr_warmup(0.1, warmup_steps=100, start_lr=0.0, end_lr=0.1)
        >>> lr.shape, lr.persistable
        ((1,), True)
    """
    _positive(warmup_steps, "warmup_steps", "linear_lr_warmup")
    if isinstance(learning_rate, Variable):
        after = getattr(learning_rate, "_lr_fn", None)
        if after is None:
            raise TypeError(f"linear_lr_warmup: learning_rate {learning_rate.name} must be a "
                            f"float or a Variable made by a fluid.layers decay function")
    elif isinstance(learning_rate, numbers.Number):
        def after(step):
            return float(learning_rate)
    else:
        raise TypeError(f"linear_lr_warmup: learning_rate must be a float or a decay's "
                        f"Variable, got {type(learning_rate).__name__}")

    def fn(step):
        if step < warmup_steps:
            return start_lr + (end_lr - start_lr) * step / warmup_steps
        return after(step)
    return _decayed(fn)
