"""paddle.optimizer.lr: learning-rate schedulers (Paddle 2.x's classes and numbers).

A scheduler is a host-side object: `scheduler()` is the current rate, `scheduler.step()`
advances it (once per epoch or per batch, as the user chooses). An optimizer given a
scheduler creates its persistable `learning_rate_N` variable and registers the scheduler
on the program; before every `Executor.run` of that program the variable is set to
`scheduler()` (as Paddle's executor does), so the next step trains with the new rate.

>>> sched = paddle.optimizer.lr.StepDecay(learning_rate=0.1, step_size=10, gamma=0.5)
>>> paddle.optimizer.SGD(learning_rate=sched).minimize(loss)
>>> for epoch in range(30):
...     exe.run(main, feed=..., fetch_list=[loss]); sched.step()
"""
import math
import numbers

import numpy as np

__all__ = ["LRScheduler", "NoamDecay", "PiecewiseDecay", "NaturalExpDecay",
           "InverseTimeDecay", "PolynomialDecay", "LinearWarmup", "ExponentialDecay",
           "MultiStepDecay", "StepDecay", "LambdaDecay", "MultiplicativeDecay",
           "CosineAnnealingDecay", "OneCycleLR", "ReduceOnPlateau"]


def _number(v, what, cls):
    if isinstance(v, bool) or not isinstance(v, numbers.Number):
        raise TypeError(f"{cls}: {what} must be a number, got {type(v).__name__}")
    return float(v)


class LRScheduler:
    """Base class: subclasses define `get_lr()` from `self.base_lr` and `self.last_epoch`.

    Constructing one calls `step()` once, so `last_epoch` starts at 0 (Paddle's rule).
    """

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        self.base_lr = _number(learning_rate, "learning_rate", type(self).__name__)
        self.last_lr = self.base_lr
        self.last_epoch = int(last_epoch)
        self.verbose = verbose
        self.step()

    def __call__(self):
        return self.last_lr

    def step(self, epoch=None):
        """Advance one epoch (or jump to `epoch`) and recompute the rate."""
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = int(epoch)
            closed = getattr(self, "_get_closed_form_lr", None)
            self.last_lr = closed() if closed is not None else self.get_lr()
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to "
                  f"{self.last_lr}.")

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items()
                if isinstance(v, (numbers.Number, list, tuple)) and not k.startswith("_")}

    def set_state_dict(self, state):
        self.__dict__.update(state)

    set_dict = set_state_dict

    # ---- binding to a program (used by the optimizers)
    def _bind(self, program, lr_var):
        """Make `program`'s runs read this scheduler's rate into `lr_var`."""
        program.add_run_hook(_SchedulerHook(self, lr_var.name, lr_var.dtype))
        program.lr_sheduler = self          # Paddle's attribute (and spelling)


class _SchedulerHook:
    """Before a run: write scheduler() into the lr variable of the run's scope when the
    scope holds another value (only then: a write makes data-parallel replicas re-sync)."""

    def __init__(self, scheduler, name, dtype):
        self.scheduler, self.name, self.dtype = scheduler, name, dtype

    def __call__(self, scope):
        if scope.find_var(self.name) is None:
            return
        value = np.array([self.scheduler()], self.dtype)
        if not np.array_equal(scope.get(self.name), value):
            scope.set(self.name, value)


class NoamDecay(LRScheduler):
    """lr * d_model^-0.5 * min(epoch^-0.5, warmup_steps^-1.5 * epoch) (epoch 0 reads 1 for
    the first term)."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        self.d_model, self.warmup_steps = float(d_model), float(warmup_steps)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        a = 1.0 if self.last_epoch == 0 else self.last_epoch ** -0.5
        b = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * self.d_model ** -0.5 * min(a, b)


def check_piecewise(boundaries, values, fn):
    """(boundaries, values) as lists, after checking them for `fn`: numbers, one value
    more than boundaries, boundaries in increasing order (unsorted ones would silently
    pick the wrong rate)."""
    boundaries, values = list(boundaries), list(values)
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"{fn}: values needs one entry more than boundaries; got "
                         f"{len(boundaries)} boundaries and {len(values)} values")
    for what, items in (("boundaries", boundaries), ("values", values)):
        bad = [x for x in items if isinstance(x, bool) or not isinstance(x, numbers.Real)]
        if bad:
            raise TypeError(f"{fn}: {what} must be numbers (step counts for "
                            f"boundaries, learning rates for values), got {bad[0]!r} of "
                            f"type {type(bad[0]).__name__} in {items!r}; e.g. "
                            f"{fn}(boundaries=[100, 200], values=[0.1, 0.01, "
                            f"0.001])")
    if any(b > a for b, a in zip(boundaries, boundaries[1:])):
        raise ValueError(f"{fn}: boundaries must be in increasing order (the "
                         f"steps at which the rate changes), got {boundaries}; sort them "
                         f"and keep values in the matching order")
    return boundaries, values


class PiecewiseDecay(LRScheduler):
    """values[i] while epoch < boundaries[i]; values[-1] after the last boundary."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        boundaries, values = check_piecewise(boundaries, values, "PiecewiseDecay")
        self.boundaries, self.values = boundaries, [float(v) for v in values]
        super().__init__(self.values[0], last_epoch, verbose)

    def get_lr(self):
        for b, v in zip(self.boundaries, self.values):
            if self.last_epoch < b:
                return v
        return self.values[-1]


class NaturalExpDecay(LRScheduler):
    """lr * exp(-gamma * epoch)"""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """lr / (1 + gamma * epoch)"""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """(lr - end_lr) * (1 - epoch / decay_steps)^power + end_lr; with `cycle` the decay
    restarts every decay_steps (decay_steps grows to the next multiple)."""

    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False,
                 last_epoch=-1, verbose=False):
        if int(decay_steps) <= 0:
            raise ValueError(f"PolynomialDecay: decay_steps must be > 0, got {decay_steps}")
        self.decay_steps, self.end_lr = int(decay_steps), float(end_lr)
        self.power, self.cycle = float(power), bool(cycle)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            div = math.ceil(epoch / steps) if epoch else 1
            steps = steps * div
        else:
            epoch = min(epoch, steps)
        return (self.base_lr - self.end_lr) * (1 - epoch / steps) ** self.power + self.end_lr


class LinearWarmup(LRScheduler):
    """start_lr -> end_lr linearly over warmup_steps, then `learning_rate` (a float, or a
    scheduler stepped from 0 at the end of the warm-up)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1,
                 verbose=False):
        if not isinstance(learning_rate, (numbers.Number, LRScheduler)):
            raise TypeError(f"LinearWarmup: learning_rate must be a float or an LRScheduler, "
                            f"got {type(learning_rate).__name__}")
        self.learning_rate = learning_rate
        self.warmup_steps, self.start_lr, self.end_lr = int(warmup_steps), float(start_lr), \
            float(end_lr)
        if self.warmup_steps <= 0:
            raise ValueError(f"LinearWarmup: warmup_steps must be > 0, got {warmup_steps}")
        super().__init__(start_lr, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps + \
                self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)


class ExponentialDecay(LRScheduler):
    """lr * gamma^epoch"""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** self.last_epoch


class MultiStepDecay(LRScheduler):
    """lr * gamma^(number of milestones <= epoch)"""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        if list(milestones) != sorted(milestones):
            raise ValueError(f"MultiStepDecay: milestones must increase, got {milestones}")
        if float(gamma) >= 1.0:
            raise ValueError(f"MultiStepDecay: gamma must be < 1.0, got {gamma}")
        self.milestones, self.gamma = list(milestones), float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        for i, m in enumerate(self.milestones):
            if self.last_epoch < m:
                return self.base_lr * self.gamma ** i
        return self.base_lr * self.gamma ** len(self.milestones)


class StepDecay(LRScheduler):
    """lr * gamma^(epoch // step_size)"""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepDecay: step_size must be a positive int, got {step_size!r}")
        if float(gamma) >= 1.0:
            raise ValueError(f"StepDecay: gamma must be < 1.0, got {gamma}")
        self.step_size, self.gamma = step_size, float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class LambdaDecay(LRScheduler):
    """lr * lr_lambda(epoch)"""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("LambdaDecay: lr_lambda must be a function of the epoch")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiplicativeDecay(LRScheduler):
    """last_lr * lr_lambda(epoch) for epoch > 0 (the base rate at epoch 0)."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("MultiplicativeDecay: lr_lambda must be a function of the epoch")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch > 0:
            return self.last_lr * self.lr_lambda(self.last_epoch)
        return self.base_lr


class CosineAnnealingDecay(LRScheduler):
    """Cosine annealing from lr to eta_min over T_max epochs (Paddle's recursive form; the
    closed form when step() is given an epoch)."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        if not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingDecay: T_max must be a positive int, got {T_max!r}")
        self.T_max, self.eta_min = T_max, float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        e, T = self.last_epoch, self.T_max
        if e == 0:
            return self.base_lr
        if (e - 1 - T) % (2 * T) == 0:
            return self.last_lr + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / T)) / 2
        return (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * \
            (self.last_lr - self.eta_min) + self.eta_min

    def _get_closed_form_lr(self):
        return self.eta_min + (self.base_lr - self.eta_min) * \
            (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class OneCycleLR(LRScheduler):
    """The one-cycle policy (Paddle's formulas): from max_learning_rate / divide_factor up
    to max_learning_rate over phase_pct of total_steps, then down to end_learning_rate
    (three_phase: back to the initial rate first), by cosine or linear annealing."""

    def __init__(self, max_learning_rate, total_steps, divide_factor=25.0,
                 end_learning_rate=0.0001, phase_pct=0.3, anneal_strategy="cos",
                 three_phase=False, last_epoch=-1, verbose=False):
        peak = _number(max_learning_rate, "max_learning_rate", "OneCycleLR")
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"OneCycleLR: total_steps must be a positive int, got "
                             f"{total_steps!r}")
        if not 0.0 <= float(phase_pct) <= (0.5 if three_phase else 1.0):
            raise ValueError(f"OneCycleLR: phase_pct must be in [0, "
                             f"{0.5 if three_phase else 1}], got {phase_pct}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = total_steps, anneal_strategy
        initial = peak / _number(divide_factor, "divide_factor", "OneCycleLR")
        low = _number(end_learning_rate, "end_learning_rate", "OneCycleLR")
        up = phase_pct * total_steps - 1
        if three_phase:
            ends = [0, up, 2 * phase_pct * total_steps - 2, total_steps - 1]
            self._lrs = [initial, peak, initial, low]
        else:
            ends = [0, up, total_steps - 1]
            self._lrs = [initial, peak, low]
        self._ends = ends
        super().__init__(initial, last_epoch, verbose)

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: step {step} is past total_steps "
                             f"{self.total_steps}")
        for i in range(len(self._lrs) - 1):
            start, end = self._ends[i], self._ends[i + 1]
            if step <= end or i == len(self._lrs) - 2:
                pct = (step - start) / (end - start) if end != start else 1.0
                a, b = self._lrs[i], self._lrs[i + 1]
                if self.anneal_strategy == "cos":
                    return b + (a - b) / 2.0 * (math.cos(math.pi * pct) + 1)
                return (b - a) * pct + a
        return self._lrs[-1]


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by `factor` when the metric given to `step(metrics)` has not
    improved for more than `patience` steps (Paddle's rule, with threshold, cooldown and
    min_lr)."""

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceOnPlateau: mode must be 'min' or 'max' and threshold_mode "
                             f"'rel' or 'abs', got {mode!r}, {threshold_mode!r}")
        if not 0.0 < factor < 1.0:
            raise ValueError(f"ReduceOnPlateau: factor must be in (0, 1), got {factor}")
        self.mode, self.factor, self.patience = mode, float(factor), int(patience)
        self.threshold, self.threshold_mode = float(threshold), threshold_mode
        self.cooldown, self.min_lr, self.epsilon = int(cooldown), float(min_lr), float(epsilon)
        self.cooldown_counter, self.best, self.num_bad_epochs = 0, None, 0
        self.base_lr = self.last_lr = _number(learning_rate, "learning_rate",
                                              "ReduceOnPlateau")
        self.last_epoch, self.verbose = 0, verbose

    def step(self, metrics, epoch=None):
        """Record this epoch's metric (a number or a one-element array)."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        m = np.asarray(metrics, dtype=np.float64)
        if m.size != 1:
            raise ValueError(f"ReduceOnPlateau: metrics must have one element, got shape "
                             f"{m.shape}; reduce it first (e.g. paddle.mean)")
        m = float(m.reshape(-1)[0])
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(m, self.best):
            self.best, self.num_bad_epochs = m, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print(f"Epoch {self.last_epoch}: ReduceOnPlateau set learning rate to "
                          f"{self.last_lr}.")

    def _is_better(self, current, best):
        margin = best * self.threshold if self.threshold_mode == "rel" else self.threshold
        return current < best - margin if self.mode == "min" else current > best + margin
