"""paddle.Model: train, evaluate and predict a Layer without writing the loop
(Paddle's high-level API, static mode).

`Model(net, inputs, labels)` builds, in the program that holds the net's parameters,
the forward pass (cloned for `predict`), the loss and the metrics' graph part (cloned
for `evaluate`), then the optimizer's update (`fit`). Batches come from a
`paddle.io.Dataset` (or a DataLoader) as [inputs..., labels...].
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import static
from ..io import DataLoader
from ..static.ema import InputSpec
from .callbacks import config_callbacks


def _as_list(x):
    return [] if x is None else list(x) if isinstance(x, (list, tuple)) else [x]


class Model:
    """A Layer with its training loop (Paddle's paddle.Model).

    Args:
        network (paddle.nn.Layer): the model.
        inputs (InputSpec or list): the inputs' specs (needed in static mode).
        labels (InputSpec or list, optional): the labels' specs (for loss and metrics).

    Example:
        >>> net = paddle.nn.Sequential(paddle.nn.Linear(4, 3))
        >>> model = paddle.Model(net, static.InputSpec([None, 4], 'float32', 'x'),
        ...                      static.InputSpec([None, 1], 'int64', 'y'))
        >>> model.prepare(paddle.optimizer.SGD(0.1, parameters=model.parameters()),
        ...               paddle.nn.CrossEntropyLoss(), paddle.metric.Accuracy())
        >>> x = np.ones((2, 4), 'float32'); y = np.zeros((2, 1), 'int64')
        >>> len(model.train_batch([x], [y]))
        2
    """

    def __init__(self, network: Any, inputs: Any = None, labels: Any = None) -> None:
        self.network = network
        self._inputs = [s if isinstance(s, InputSpec) else InputSpec(*s) for s in _as_list(inputs)]
        self._labels = [s if isinstance(s, InputSpec) else InputSpec(*s) for s in _as_list(labels)]
        if not self._inputs:
            raise ValueError("paddle.Model: static mode needs inputs=[static.InputSpec(shape, "
                             "dtype, name), ...] (one per input of the network's forward)")
        params = network.parameters()
        self._main = params[0].block.program if params else static.default_main_program()
        self._startup = static.default_startup_program()
        self._exe = static.Executor()
        self._optimizer = self._loss = None
        self._metrics = []
        self._prepared = False
        self.stop_training = False

    def parameters(self, *args: Any, **kwargs: Any) -> list:
        """The network's parameters.

        Args:
            *args, **kwargs: as Layer.parameters.

        Returns:
            list of Parameter.
        """
        return self.network.parameters(*args, **kwargs)

    def prepare(self, optimizer: Any = None, loss: Any = None, metrics: Any = None,
                amp_configs: Any = None) -> None:
        """Build the programs (forward, loss, the metrics' compute, the optimizer's
        minimize), then run the startup program (initial parameters).

        Args:
            optimizer (Optimizer, optional): built with parameters=model.parameters().
            loss (callable, optional): (outputs..., labels...) -> loss Variable, e.g.
                paddle.nn.CrossEntropyLoss().
            metrics (Metric or list, optional): paddle.metric classes.
            amp_configs: accepted for Paddle's signature, ignored.
        """
        if self._prepared:
            raise RuntimeError("Model.prepare: already prepared; make a new Model (a second "
                               "prepare would add a second update to the same program)")
        self._optimizer, self._loss = optimizer, loss
        self._metrics = _as_list(metrics)
        main = self._main
        with static.program_guard(main, self._startup):
            ins = [static.data(s.name or f"input_{i}", s.shape, s.dtype)
                   for i, s in enumerate(self._inputs)]
            labs = [static.data(s.name or f"label_{i}", s.shape, s.dtype)
                    for i, s in enumerate(self._labels)]
            self._feed_names = [v.name for v in ins + labs]
            outs = _as_list(self.network(*ins))
            self._outputs = outs
            self._predict_prog = main.clone(for_test=True)
            self._loss_vars = _as_list(loss(*(outs + labs))) if loss is not None else []
            self._metric_vars = []
            for m in self._metrics:
                got = _as_list(m.compute(*(outs + labs)))
                self._metric_vars.append(got)
            self._eval_prog = main.clone(for_test=True)
            if optimizer is not None and self._loss_vars:
                total = self._loss_vars[0] if len(self._loss_vars) == 1 else \
                    sum(self._loss_vars[1:], self._loss_vars[0])
                optimizer.minimize(total)
        self._exe.run(self._startup)
        self._prepared = True

    # ---------------------------------------------------------------- one batch
    def _run(self, prog, inputs, labels, with_metrics=True):
        if not self._prepared:
            raise RuntimeError("Model: call prepare(optimizer, loss, metrics) first")
        arrays = _as_list(inputs) + _as_list(labels)
        feed = dict(zip(self._feed_names, arrays))
        fetch = list(self._loss_vars) + [v for vs in self._metric_vars for v in vs]
        got = self._exe.run(prog, feed=feed, fetch_list=fetch)
        losses, rest = got[:len(self._loss_vars)], got[len(self._loss_vars):]
        metrics = []
        for m, vs in zip(self._metrics, self._metric_vars):
            metrics.append(m.update(*rest[:len(vs)]))
            rest = rest[len(vs):]
        return ([np.asarray(v) for v in losses], metrics) if metrics else \
            [np.asarray(v) for v in losses]

    def train_batch(self, inputs: Any, labels: Any = None, update: bool = True) -> Any:
        """One training step.

        Args:
            inputs (list of ndarray): one per input spec.
            labels (list of ndarray, optional): one per label spec.
            update (bool): accepted for Paddle's signature (always updates).

        Returns:
            list or tuple: the losses ([loss]), or (losses, metric values) with metrics.
        """
        return self._run(self._main, inputs, labels)

    def eval_batch(self, inputs: Any, labels: Any = None) -> Any:
        """One evaluation step (no update; dropout off, batch norm's running stats).

        Args:
            inputs (list of ndarray): one per input spec.
            labels (list of ndarray, optional): one per label spec.

        Returns:
            list or tuple: as train_batch.
        """
        return self._run(self._eval_prog, inputs, labels)

    def predict_batch(self, inputs: Any) -> list:
        """The network's outputs for one batch of inputs.

        Args:
            inputs (list of ndarray): one per input spec.

        Returns:
            list of ndarray: one per output.
        """
        if not self._prepared:
            raise RuntimeError("Model: call prepare() first")
        feed = dict(zip(self._feed_names, _as_list(inputs)))
        return self._exe.run(self._predict_prog, feed=feed, fetch_list=self._outputs)

    # ---------------------------------------------------------------- loops
    def _loader(self, data, batch_size, shuffle, drop_last, num_workers):
        if data is None or isinstance(data, DataLoader):
            return data
        return DataLoader(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                          num_workers=num_workers, return_list=True)

    def _logs(self, losses_metrics):
        logs = {}
        losses, metrics = losses_metrics if isinstance(losses_metrics, tuple) else \
            (losses_metrics, [])
        if losses:
            logs["loss"] = [float(np.mean(v)) for v in losses]
        for m in self._metrics:
            names, values = _as_list(m.name()), _as_list(m.accumulate())
            logs.update(zip(names, values))
        return logs

    def fit(self, train_data: Any = None, eval_data: Any = None, batch_size: int = 1,
            epochs: int = 1, eval_freq: int = 1, log_freq: int = 10, save_dir: str | None = None,
            save_freq: int = 1, verbose: int = 2, drop_last: bool = False, shuffle: bool = True,
            num_workers: int = 0, callbacks: Any = None, accumulate_grad_batches: int = 1,
            num_iters: int | None = None) -> None:
        """Train over train_data.

        Args:
            train_data (Dataset or DataLoader): samples [inputs..., labels...].
            eval_data (Dataset or DataLoader, optional): evaluated every eval_freq epochs.
            batch_size (int): for a Dataset.
            epochs (int): passes over train_data.
            eval_freq (int): epochs between evaluations.
            log_freq (int): steps between progress lines (verbose=2).
            save_dir (str, optional): save_dir/<epoch> every save_freq epochs, and
                save_dir/final at the end (Model.save).
            save_freq (int): epochs between saves.
            verbose (int): 0 silent, 1 per epoch, 2 every log_freq steps.
            drop_last, shuffle, num_workers: for the DataLoader of a Dataset.
            callbacks (list of Callback, optional): called around epochs and batches.
            accumulate_grad_batches (int): accepted, ignored (one update per batch).
            num_iters (int, optional): stop after this many steps in all.
        """
        loader = self._loader(train_data, batch_size, shuffle, drop_last, num_workers)
        n = len(loader) if hasattr(loader, "__len__") else None
        cbks = config_callbacks(callbacks, self, {"epochs": epochs, "steps": n,
                                                  "verbose": verbose, "save_dir": save_dir,
                                                  "metrics": self._metric_names()},
                                log_freq, verbose, save_freq, save_dir)
        self.stop_training = False
        cbks.on_train_begin()
        it = 0
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch)
            for m in self._metrics:
                m.reset()
            logs = {}
            for step, batch in enumerate(loader):
                cbks.on_train_batch_begin(step)
                k = len(self._inputs)
                logs = self._logs(self.train_batch(batch[:k], batch[k:]))
                logs["step"] = step
                cbks.on_train_batch_end(step, logs)
                it += 1
                if num_iters is not None and it >= num_iters:
                    self.stop_training = True
                    break
            if eval_data is not None and (epoch + 1) % eval_freq == 0:
                self._evaluate(self._loader(eval_data, batch_size, False, False, num_workers),
                               cbks, None)
            cbks.on_epoch_end(epoch, logs)
            if self.stop_training:
                break
        cbks.on_train_end(logs)

    def _metric_names(self):
        return ["loss"] + [n for m in self._metrics for n in _as_list(m.name())]

    def evaluate(self, eval_data: Any, batch_size: int = 1, log_freq: int = 10,
                 verbose: int = 2, num_workers: int = 0, callbacks: Any = None,
                 num_iters: int | None = None) -> dict:
        """The loss and the metrics over eval_data.

        Args:
            eval_data (Dataset or DataLoader): samples [inputs..., labels...].
            batch_size (int): for a Dataset.
            log_freq, verbose: as fit.
            num_workers (int): for the DataLoader of a Dataset.
            callbacks (list of Callback, optional): their on_eval_* are called.
            num_iters (int, optional): at most this many batches.

        Returns:
            dict: {'loss': [mean of the batches' losses], <metric name>: value, ...}.
        """
        loader = self._loader(eval_data, batch_size, False, False, num_workers)
        cbks = config_callbacks(callbacks, self, {"verbose": verbose}, log_freq, verbose)
        return self._evaluate(loader, cbks, num_iters)

    def _evaluate(self, loader, cbks, num_iters):
        for m in self._metrics:
            m.reset()
        cbks.on_eval_begin()
        losses, k = [], len(self._inputs)
        for step, batch in enumerate(loader):
            out = self.eval_batch(batch[:k], batch[k:])
            batch_losses = out[0] if isinstance(out, tuple) else out
            losses.append([float(np.mean(v)) for v in batch_losses])
            if num_iters is not None and step + 1 >= num_iters:
                break
        logs = {}
        if losses:
            logs["loss"] = [float(v) for v in np.mean(np.array(losses), axis=0)]
        for m in self._metrics:
            logs.update(zip(_as_list(m.name()), _as_list(m.accumulate())))
        cbks.on_eval_end(logs)
        return logs

    def predict(self, test_data: Any, batch_size: int = 1, num_workers: int = 0,
                stack_outputs: bool = False, verbose: int = 1, callbacks: Any = None) -> list:
        """The network's outputs over test_data.

        Args:
            test_data (Dataset or DataLoader): samples [inputs..., (labels ignored)].
            batch_size (int): for a Dataset.
            num_workers (int): for the DataLoader of a Dataset.
            stack_outputs (bool): one array per output instead of a list of batches.
            verbose, callbacks: accepted for Paddle's signature.

        Returns:
            list: one entry per output (a list of batch arrays, or one array).
        """
        loader = self._loader(test_data, batch_size, False, False, num_workers)
        k = len(self._inputs)
        outputs = [[] for _ in self._outputs]
        for batch in loader:
            batch = batch if isinstance(batch, (list, tuple)) else [batch]
            for i, v in enumerate(self.predict_batch(batch[:k])):
                outputs[i].append(np.asarray(v))
        if stack_outputs:
            outputs = [np.concatenate(o, axis=0) for o in outputs]
        return outputs

    # ---------------------------------------------------------------- state
    def save(self, path: str, training: bool = True) -> None:
        """Save the model.

        Args:
            path (str): the path prefix.
            training (bool): True: the parameters and optimizer state (path.pdparams,
                path.pdopt); False: an inference model (static.save_inference_model:
                numbaflow's path.nfmodel, path.nfparams).
        """
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if training:
            static.save(self._main, path)
        else:
            ins = [self._predict_prog.global_block().var(n)
                   for n in self._feed_names[:len(self._inputs)]]
            static.save_inference_model(path, ins, self._outputs, self._exe,
                                        program=self._predict_prog)

    def load(self, path: str, skip_mismatch: bool = False, reset_optimizer: bool = False) -> None:
        """Load what save(path) wrote.

        Args:
            path (str): the path prefix.
            skip_mismatch (bool): accepted, ignored (a mismatch raises).
            reset_optimizer (bool): load the parameters only.
        """
        if reset_optimizer or not os.path.exists(path + ".pdopt"):
            static.load(self._main, path, self._exe, var_list=self.parameters())
        else:
            static.load(self._main, path, self._exe)

    def summary(self, input_size: Any = None, dtype: Any = None) -> dict:
        """Print the parameters with their shapes and counts.

        Args:
            input_size, dtype: accepted for Paddle's signature (the specs are known).

        Returns:
            dict: {'total_params': int, 'trainable_params': int}.
        """
        total = trainable = 0
        print(f"{'Parameter':<40}{'Shape':<20}{'Count':>10}")
        for p in self.parameters():
            n = int(np.prod(p.shape))
            total += n
            trainable += n if p.trainable else 0
            print(f"{p.name:<40}{str(tuple(p.shape)):<20}{n:>10}")
        print(f"Total params: {total}  Trainable params: {trainable}")
        return {"total_params": total, "trainable_params": trainable}
