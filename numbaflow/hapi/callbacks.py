"""paddle.callbacks: what `Model.fit` calls around epochs and batches (Paddle's hapi
callbacks, the common ones): ProgBarLogger, ModelCheckpoint, EarlyStopping,
LRScheduler and VisualDL (TensorBoard event files through utils.ScalarLogger).

>>> cb = paddle.callbacks.EarlyStopping(monitor='loss', patience=1)
>>> cb.monitor, cb.patience
('loss', 1)
"""
import numbers
import os

import numpy as np


class Callback:
    """The base: override the `on_*` methods; `self.model` and `self.params` (epochs,
    steps, verbose, metrics) are set before training."""

    def __init__(self):
        self.model, self.params = None, {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_eval_begin(self, logs=None): pass
    def on_eval_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, step, logs=None): pass
    def on_train_batch_end(self, step, logs=None): pass
    def on_eval_batch_begin(self, step, logs=None): pass
    def on_eval_batch_end(self, step, logs=None): pass
    def on_predict_batch_begin(self, step, logs=None): pass
    def on_predict_batch_end(self, step, logs=None): pass


def _fmt(logs):
    parts = []
    for k, v in logs.items():
        if k in ("step", "batch_size"):
            continue
        v = v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v
        if isinstance(v, numbers.Number) or isinstance(v, np.ndarray) and v.size == 1:
            parts.append(f"{k}: {float(v):.4f}")
        elif isinstance(v, (list, tuple)):
            parts.append(f"{k}: " + " ".join(f"{float(x):.4f}" for x in v))
    return " - ".join(parts)


class ProgBarLogger(Callback):
    """Print the epoch, and every `log_freq` steps the losses and metrics (verbose 0:
    nothing, 1: the epoch's last step, 2: every log_freq steps)."""

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        self.log_freq, self.verbose = log_freq, verbose

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        if self.verbose:
            print(f"Epoch {epoch + 1}/{self.params.get('epochs')}")

    def on_train_batch_end(self, step, logs=None):
        steps = self.params.get("steps")
        if self.verbose == 2 and (step + 1) % self.log_freq == 0 or \
                self.verbose and steps is not None and step + 1 == steps:
            print(f"step {step + 1}/{steps if steps is not None else '?'} - {_fmt(logs or {})}")

    def on_eval_end(self, logs=None):
        if self.verbose:
            print(f"Eval: {_fmt(logs or {})}")


class ModelCheckpoint(Callback):
    """Save the training state to `save_dir/<epoch>` every `save_freq` epochs and to
    `save_dir/final` at the end (Model.save(path): path.pdparams and path.pdopt)."""

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        self.save_freq, self.save_dir = save_freq, save_dir

    def on_epoch_end(self, epoch, logs=None):
        if self.save_dir and (epoch + 1) % self.save_freq == 0:
            self.model.save(os.path.join(self.save_dir, str(epoch)))

    def on_train_end(self, logs=None):
        if self.save_dir:
            self.model.save(os.path.join(self.save_dir, "final"))


class EarlyStopping(Callback):
    """Stop `fit` when the monitored eval value (default 'loss') has not improved by
    min_delta for `patience` evaluations; with save_best_model, `save_dir/best_model`
    holds the best state."""

    def __init__(self, monitor="loss", mode="auto", patience=0, verbose=1, min_delta=0,
                 baseline=None, save_best_model=True):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got {mode!r}")
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.min_delta, self.baseline, self.save_best_model = abs(min_delta), baseline, \
            save_best_model
        self.better = np.greater if mode == "max" or mode == "auto" and "acc" in monitor \
            else np.less
        self.wait, self.stopped_epoch, self.epoch = 0, 0, 0
        self.best = baseline if baseline is not None else \
            (-np.inf if self.better is np.greater else np.inf)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_eval_end(self, logs=None):
        if not logs or self.monitor not in logs:
            return
        value = logs[self.monitor]
        value = float(value[0] if isinstance(value, (list, tuple)) else value)
        delta = self.min_delta if self.better is np.greater else -self.min_delta
        if self.better(value - delta, self.best):
            self.best, self.wait = value, 0
            save_dir = self.params.get("save_dir")
            if self.save_best_model and save_dir:
                self.model.save(os.path.join(save_dir, "best_model"))
        else:
            self.wait += 1
            if self.wait > self.patience:
                self.model.stop_training = True
                if self.verbose:
                    print(f"Epoch {self.epoch + 1}: early stopping "
                          f"({self.monitor} has not improved for {self.wait} evaluations)")


class LRScheduler(Callback):
    """Step the optimizer's learning-rate scheduler after each batch (by_step) or
    epoch (by_epoch)."""

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step == by_epoch:
            raise ValueError("LRScheduler: exactly one of by_step and by_epoch must be True")
        self.by_step, self.by_epoch = by_step, by_epoch

    def _step(self):
        sched = getattr(getattr(self.model, "_optimizer", None), "_learning_rate", None)
        if hasattr(sched, "step"):
            sched.step()

    def on_train_batch_end(self, step, logs=None):
        if self.by_step:
            self._step()

    def on_epoch_end(self, epoch, logs=None):
        if self.by_epoch:
            self._step()


class VisualDL(Callback):
    """Write train/<name> per batch and eval/<name> per evaluation to TensorBoard event
    files in `log_dir` (VisualDL and TensorBoard read them)."""

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir, self.logger, self.step = log_dir, None, 0

    def _write(self, prefix, logs):
        if self.logger is None:
            from ..utils import ScalarLogger
            self.logger = ScalarLogger(self.log_dir)
        scalars = {}
        for k, v in (logs or {}).items():
            v = v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v
            if isinstance(v, numbers.Number) and k not in ("step", "batch_size"):
                scalars[f"{prefix}/{k}"] = float(v)
        if scalars:
            self.logger.add_scalars(scalars, step=self.step)

    def on_train_batch_end(self, step, logs=None):
        self.step += 1
        self._write("train", logs)

    def on_eval_end(self, logs=None):
        self._write("eval", logs)

    def on_train_end(self, logs=None):
        if self.logger is not None:
            self.logger.close()


class CallbackList:
    """The callbacks of one fit/evaluate/predict, called in order."""

    def __init__(self, callbacks, model, params):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            cb.set_model(model)
            cb.set_params(params)

    def __getattr__(self, name):
        def call(*args, **kwargs):
            for cb in self.callbacks:
                getattr(cb, name)(*args, **kwargs)
        return call


def config_callbacks(callbacks, model, params, log_freq=1, verbose=2, save_freq=1,
                     save_dir=None):
    """The user's callbacks, plus a ProgBarLogger and (with save_dir) a ModelCheckpoint
    unless given."""
    cbks = list(callbacks or [])
    if not any(isinstance(c, ProgBarLogger) for c in cbks):
        cbks.insert(0, ProgBarLogger(log_freq, verbose))
    if save_dir and not any(isinstance(c, ModelCheckpoint) for c in cbks):
        cbks.append(ModelCheckpoint(save_freq, save_dir))
    return CallbackList(cbks, model, params)


__all__ = ["Callback", "ProgBarLogger", "ModelCheckpoint", "EarlyStopping", "LRScheduler",
           "VisualDL"]
