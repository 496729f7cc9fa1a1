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

The event files hold TensorBoard's records (protobuf events with CRC-32C framing), built
with tensorboardX's protobufs (an optional extra: `numbaflow[tensorboard]`, also in
`numbaflow[examples]`) but written here, synchronously, without tensorboardX's writer
thread: a thread that died on a full disk left its queue to fill, and `add_scalar` then
blocked training forever. Logging never stops training: the first failed write (a full
disk, an unwritable directory) cuts the file back to its last whole record, logs one
warning and drops the scalars that follow.
"""
from __future__ import annotations

import itertools
import numbers
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Mapping

from .log import get_logger as _get_logger

__all__ = ["ScalarLogger", "Progress"]

_write = os.write                 # the one system call that writes events (tests fail it)
_file_numbers = itertools.count()


def _event_protos():
    try:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.record_writer import masked_crc32c
        from tensorboardX.summary import scalar
    except ImportError:
        raise ImportError("writing TensorBoard event files needs tensorboardX: pip install "
                          "'numbaflow[tensorboard]' (or pip install tensorboardX)") from None
    return Event, scalar, masked_crc32c


class ScalarLogger:
    """Scalars (loss, accuracy, samples/s, ...) written to a TensorBoard event file in
    `logdir` (created if needed); open it with ``tensorboard --logdir <dir>`` or VisualDL.

    Also a `Progress` callback: ``logger(step, {"loss": 0.3})`` logs every scalar.
    A write that fails (full disk, unwritable `logdir`) never stops training: one warning
    on the "numbaflow" logger, the file keeps its whole records, later scalars are dropped.

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
        self.logdir = os.fspath(logdir) if isinstance(logdir, os.PathLike) else str(logdir)
        self._event, self._scalar, self._crc = _event_protos()
        self._flush_secs = float(flush_secs)
        self._pending, self._written, self._fd = bytearray(), 0, None
        self._failed = self._closed = False
        self._last_flush = time.monotonic()
        host = "".join(c for c in socket.gethostname() if c.isalnum() or c in "-_.")
        self.path = os.path.join(self.logdir, f"events.out.tfevents.{int(time.time())}.{host}"
                                              f".{os.getpid()}.{next(_file_numbers)}")
        try:
            os.makedirs(self.logdir, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                               getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0), 0o666)
        except OSError as e:
            self._fail(e)
        self._append(self._event(wall_time=time.time(), file_version="brain.Event:2"))
        self._flush()

    def _fail(self, error):
        """The first failure: say so once, keep the file's whole records, drop the rest."""
        if self._failed:
            return
        self._failed = True
        self._pending = bytearray()
        _get_logger().warning(
            "ScalarLogger: cannot write TensorBoard events under %r (%s); training goes on "
            "and further scalars of this logger are dropped (free space or choose a writable "
            "logdir, then start a new ScalarLogger)", self.logdir, error)
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, self._written)      # no torn last record
            except OSError:
                pass

    def _append(self, event):
        if self._failed:
            return
        data = event.SerializeToString()
        header = len(data).to_bytes(8, "little")
        self._pending += header + self._crc(header).to_bytes(4, "little") + data + \
            self._crc(data).to_bytes(4, "little")

    def _flush(self, sync=False):
        if self._failed or self._fd is None:
            return
        try:
            view = memoryview(bytes(self._pending))
            while view:
                n = _write(self._fd, view)
                view = view[n:]
                self._written += n
            if sync:
                os.fsync(self._fd)
        except OSError as e:
            self._written -= len(self._pending) - len(view)   # the torn part is cut off
            self._written = max(self._written, 0)
            self._fail(e)
            return
        self._pending = bytearray()
        self._last_flush = time.monotonic()

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        """Log `value` under `tag` at `step`.

        Args:
            tag (str): the curve's name, e.g. 'train/loss' (TensorBoard groups by prefix).
            value (float): the scalar (a Python or numpy number, or a one-element array).
            step (int): its x position (a step or epoch number).
        """
        if not isinstance(tag, str):
            raise TypeError(f"ScalarLogger.add_scalar: tag must be a str (the curve's name), "
                            f"got {type(tag).__name__} {tag!r}")
        if isinstance(value, (str, bytes)) or not (
                isinstance(value, numbers.Real) or getattr(value, "size", 0) == 1):
            raise TypeError(f"ScalarLogger.add_scalar: the value of {tag!r} must be a number "
                            f"(float, int, numpy scalar or one-element array), got "
                            f"{type(value).__name__} {value!r}; pass float(...) of it")
        if self._failed or self._closed:
            return
        event = self._event(wall_time=time.time(), step=int(step),
                            summary=self._scalar(tag, float(value)))
        self._append(event)
        if time.monotonic() - self._last_flush >= self._flush_secs:
            self._flush()

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
        self._flush(sync=True)

    def close(self) -> None:
        """Flush and close the event file."""
        if self._closed:
            return
        self._flush(sync=True)
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

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
        self.bar = None
        if bar is None:
            bar = sys.stderr.isatty()
        if bar:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=desc, unit="step", leave=False)

    def step(self, n: int = 1, **scalars: float) -> None:
        """Count `n` steps done; show `scalars` on the bar and pass them to the callbacks.

        Args:
            n (int): steps done since the last call.
            **scalars (float): this step's values, e.g. loss=0.3.
        """
        self.count += n
        if self.bar is not None:
            self.bar.update(n)
            if scalars:
                self.bar.set_postfix({k: f"{v:.4g}" for k, v in scalars.items()},
                                      refresh=False)
        for callback in self.callbacks:
            callback(self.count, dict(scalars))

    def close(self) -> None:
        """Remove the bar (the callbacks are not closed: their owner closes them)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
