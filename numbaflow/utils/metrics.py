"""Watching training: `ScalarLogger` writes scalars to TensorBoard event files (TensorBoard
and VisualDL open them), `Progress` is a hook for a training loop (a tqdm bar on a terminal,
and callbacks after every step).

    logger = ScalarLogger("runs/mlp")                 # pip install 'numbaflow[tensorboard]'
    with Progress(total=steps, callbacks=[logger]) as progress:
        for feed in loader():
            loss_v, = exe.run(main, feed=feed, fetch_list=[loss])
            progress.step(loss=float(loss_v))         # bar + logger("loss" at this step)
    logger.close()
    # then: tensorboard --logdir runs

The event files are written by tensorboardX (an optional extra: `numbaflow[tensorboard]`,
also in `numbaflow[examples]`): the format (protobuf records with CRC-32C framing) is
TensorBoard's, and a maintained writer keeps up with it instead of a copy here.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping

__all__ = ["ScalarLogger", "Progress"]


def _summary_writer():
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise ImportError("writing TensorBoard event files needs tensorboardX: pip install "
                          "'numbaflow[tensorboard]' (or pip install tensorboardX)") from None
    return SummaryWriter


class ScalarLogger:
    """Scalars (loss, accuracy, samples/s, ...) written to a TensorBoard event file in
    `logdir` (created if needed); open it with ``tensorboard --logdir <dir>`` or VisualDL.

    Also a `Progress` callback: ``logger(step, {"loss": 0.3})`` logs every scalar.

    Args:
        logdir (str): the directory of this run's event file.
        flush_secs (float): how often pending scalars reach the file (and on `close`).

    Raises:
        ImportError: tensorboardX is not installed (the message says how to install it).

    Example:
        >>> import tempfile
        >>> with paddle.utils.ScalarLogger(tempfile.mkdtemp()) as logger:
        ...     logger.add_scalar("train/loss", 0.25, step=1)
        ...     logger.add_scalars({"test/acc": 0.9, "test/loss": 0.3}, step=1)
    """

    def __init__(self, logdir: str, flush_secs: float = 10.0) -> None:
        self.logdir = str(logdir)
        self._writer = _summary_writer()(logdir=self.logdir, flush_secs=flush_secs)

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        """Log `value` under `tag` at `step`.

        Args:
            tag (str): the curve's name, e.g. 'train/loss' (TensorBoard groups by prefix).
            value (float): the scalar.
            step (int): its x position (a step or epoch number).
        """
        self._writer.add_scalar(tag, float(value), global_step=int(step))

    def add_scalars(self, scalars: Mapping[str, float], step: int) -> None:
        """Log each {tag: value} of `scalars` at `step`.

        Args:
            scalars (dict): {tag: value}.
            step (int): their x position.
        """
        for tag, value in scalars.items():
            self.add_scalar(tag, value, step)

    def __call__(self, step: int, scalars: Mapping[str, float]) -> None:
        self.add_scalars(scalars, step)

    def flush(self) -> None:
        """Write pending scalars to the file now."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self._writer.close()

    def __enter__(self) -> ScalarLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Progress:
    """A progress hook for a training loop: call `step` after each step.

    It advances a tqdm bar (showing the step's scalars) and calls every callback as
    ``callback(step, scalars)``, step counting from 1 (a `ScalarLogger` is one).

    Args:
        total (int, optional): the number of steps, for the bar's length and rate.
        desc (str): the bar's label.
        callbacks (iterable of callables): each called as ``callback(step, scalars)``.
        bar (bool, optional): show a tqdm bar; default: when tqdm is installed and stderr
            is a terminal (so logs and CI output get no bar). True without tqdm installed
            shows none.
        start (int): the step count before the first `step` (e.g. the steps of earlier
            epochs, so that callbacks see one global step).

    Example:
        >>> seen = []
        >>> with paddle.utils.Progress(total=2, callbacks=[lambda step, s: seen.append((step, s))],
        ...               bar=False) as progress:
        ...     progress.step(loss=0.5)
        ...     progress.step(loss=0.25)
        >>> seen
        [(1, {'loss': 0.5}), (2, {'loss': 0.25})]
    """

    def __init__(self, total: int | None = None, desc: str = "",
                 callbacks: Iterable[Callable[[int, Mapping[str, float]], object]] = (),
                 bar: bool | None = None, start: int = 0) -> None:
        self.count = start
        self.callbacks = list(callbacks)
        self._bar = None
        if bar is None:
            bar = sys.stderr.isatty()
        if bar:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, desc=desc, unit="step", leave=False)

    def step(self, n: int = 1, **scalars: float) -> None:
        """Count `n` steps done; show `scalars` on the bar and pass them to the callbacks.

        Args:
            n (int): steps done since the last call.
            **scalars (float): this step's values, e.g. loss=0.3.
        """
        self.count += n
        if self._bar is not None:
            self._bar.update(n)
            if scalars:
                self._bar.set_postfix({k: f"{v:.4g}" for k, v in scalars.items()},
                                      refresh=False)
        for callback in self.callbacks:
            callback(self.count, dict(scalars))

    def close(self) -> None:
        """Remove the bar (the callbacks are not closed: their owner closes them)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
