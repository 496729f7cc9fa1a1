"""Paddle's reader decorators: `paddle.batch`, `paddle.reader.*` and `fluid.io.*`.

A *reader* is a function with no arguments that returns an iterable of samples (Paddle's
"reader creator" convention); each decorator takes readers and returns a new reader.

>>> def reader():
...     for i in range(5):
...         yield (np.full(13, i, 'float32'), np.float32(i))
>>> batches = list(paddle.batch(reader, batch_size=2)())      # [[s0, s1], [s2, s3], [s4]]
>>> [len(b) for b in paddle.batch(reader, 2, drop_last=True)()]
[2, 2]

The background decorators (`buffered`, `xmap_readers`) use daemon threads; an exception
in a thread is re-raised in the consumer (never swallowed, never a hang).
"""
from __future__ import annotations

import itertools
import queue
import random
import threading
from typing import Any, Callable, Iterable

Reader = Callable[[], Iterable[Any]]

__all__ = ["batch", "shuffle", "buffered", "compose", "chain", "map_readers", "xmap_readers",
           "firstn", "cache", "ComposeNotAligned"]


class ComposeNotAligned(ValueError):
    """Raised by a `compose(..., check_alignment=True)` reader whose readers yield
    different numbers of samples.

    Args:
        message (str): what was not aligned.

    Example:
        >>> r = paddle.reader.compose(lambda: iter([1, 2]), lambda: iter([1]))
        >>> try:
        ...     list(r())
        ... except paddle.reader.ComposeNotAligned:
        ...     print('not aligned')
        not aligned
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


def _check_reader(reader, fn):
    if not callable(reader):
        raise TypeError(f"{fn}: a reader is a function returning an iterable of samples, "
                        f"got {type(reader).__name__}; pass the function, not its result")


def _positive_int(value, what, fn):
    if isinstance(value, bool) or not isinstance(value, int) and not (
            hasattr(value, "__index__")):
        raise TypeError(f"{fn}: {what} must be an int, got {type(value).__name__}")
    if int(value) <= 0:
        raise ValueError(f"{fn}: {what} must be a positive integer, got {value}")
    return int(value)


def batch(reader: Reader, batch_size: int, drop_last: bool = False) -> Reader:
    """Group a reader's samples into lists of `batch_size` (`paddle.batch`).

    Args:
        reader (callable): a reader creator: a function returning an iterable of samples.
        batch_size (int): samples per list (> 0).
        drop_last (bool): drop the last list when it is shorter. Default False.

    Returns:
        callable: a reader of lists of samples (feed each to `fluid.DataFeeder.feed`).

    Raises:
        TypeError: reader is not callable, or batch_size not an int.
        ValueError: batch_size <= 0.

    Example:
        >>> reader = lambda: iter(range(5))
        >>> list(paddle.batch(reader, batch_size=2)())
        [[0, 1], [2, 3], [4]]
        >>> list(paddle.batch(reader, 2, drop_last=True)())
        [[0, 1], [2, 3]]
    """
    _check_reader(reader, "batch")
    batch_size = _positive_int(batch_size, "batch_size", "batch")

    def batch_reader():
        b = []
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                b = []
        if b and not drop_last:
            yield b
    return batch_reader


def shuffle(reader: Reader, buf_size: int) -> Reader:
    """Shuffle a reader's samples within consecutive windows of `buf_size` (Python's
    `random`, so `random.seed` makes it reproducible).

    Args:
        reader (callable): a reader creator.
        buf_size (int): the window size (> 0).

    Returns:
        callable: a reader of the same samples, shuffled within each window.

    Example:
        >>> r = paddle.reader.shuffle(lambda: iter(range(6)), buf_size=3)
        >>> out = list(r())
        >>> sorted(out[:3]), sorted(out[3:])
        ([0, 1, 2], [3, 4, 5])
    """
    _check_reader(reader, "shuffle")
    buf_size = _positive_int(buf_size, "buf_size", "shuffle")

    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                yield from buf
                buf = []
        if buf:
            random.shuffle(buf)
            yield from buf
    return shuffled


def chain(*readers: Reader) -> Reader:
    """Concatenate readers.

    Args:
        *readers (callable): reader creators.

    Returns:
        callable: a reader of the samples of each reader in turn.

    Example:
        >>> list(fluid.io.chain(lambda: iter([1, 2]), lambda: iter([3]))())
        [1, 2, 3]
    """
    for r in readers:
        _check_reader(r, "chain")

    def chained():
        return itertools.chain(*[r() for r in readers])
    return chained


def compose(*readers: Reader, check_alignment: bool = True) -> Reader:
    """Zip readers; each output is the flat tuple of their samples (tuples are spliced).

    Args:
        *readers (callable): reader creators.
        check_alignment (bool): raise ComposeNotAligned when the readers have different
            lengths (default); False stops at the shortest.

    Returns:
        callable: a reader of flat tuples.

    Example:
        >>> a = lambda: iter([(1, 2), (3, 4)])
        >>> b = lambda: iter(['x', 'y'])
        >>> list(fluid.io.compose(a, b)())
        [(1, 2, 'x'), (3, 4, 'y')]
    """
    for r in readers:
        _check_reader(r, "compose")

    def flat(x):
        return x if isinstance(x, tuple) else (x,)

    def composed():
        its = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*its):
                yield sum((flat(o) for o in outputs), ())
            return
        for outputs in itertools.zip_longest(*its, fillvalue=_END):
            if any(o is _END for o in outputs):
                raise ComposeNotAligned(
                    "compose: the readers yielded different numbers of samples; make them "
                    "equally long or pass check_alignment=False to stop at the shortest")
            yield sum((flat(o) for o in outputs), ())
    return composed


_END = object()


def map_readers(func: Callable[..., Any], *readers: Reader) -> Reader:
    """Apply `func` to the zipped samples of readers.

    Args:
        func (callable): called with one sample of each reader.
        *readers (callable): reader creators.

    Returns:
        callable: a reader of `func(*samples)`.

    Example:
        >>> r = fluid.io.map_readers(lambda a, b: a + b, lambda: iter([1, 2]),
        ...                          lambda: iter([10, 20]))
        >>> list(r())
        [11, 22]
    """
    if not callable(func):
        raise TypeError(f"map_readers: func must be callable, got {type(func).__name__}")
    for r in readers:
        _check_reader(r, "map_readers")

    def mapped():
        for samples in zip(*[r() for r in readers]):
            yield func(*samples)
    return mapped


def firstn(reader: Reader, n: int) -> Reader:
    """Limit a reader to its first `n` samples.

    Args:
        reader (callable): a reader creator.
        n (int): how many samples.

    Returns:
        callable: a reader of at most `n` samples.

    Example:
        >>> list(fluid.io.firstn(lambda: iter(range(10)), 3)())
        [0, 1, 2]
    """
    _check_reader(reader, "firstn")

    def first():
        return itertools.islice(reader(), int(n))
    return first


def cache(reader: Reader) -> Reader:
    """Read a reader once into memory; the returned reader replays it.

    Args:
        reader (callable): a reader creator (read now, completely).

    Returns:
        callable: a reader of the cached samples.

    Example:
        >>> r = fluid.io.cache(lambda: iter([1, 2]))
        >>> list(r()), list(r())
        ([1, 2], [1, 2])
    """
    _check_reader(reader, "cache")
    data = list(reader())

    def cached():
        return iter(data)
    return cached


class _Failure:
    """An exception raised in a background thread, carried to the consumer."""

    def __init__(self, exc):
        self.exc = exc


def _put(q, item, stop):
    """Put unless the consumer went away (`stop` set): never blocks forever."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def _get(q, threads):
    """Get, but notice producers that died without a sentinel (never blocks forever)."""
    while True:
        try:
            return q.get(timeout=0.1)
        except queue.Empty:
            if not any(t.is_alive() for t in threads):
                try:
                    return q.get_nowait()
                except queue.Empty:
                    raise RuntimeError("reader: the background thread ended without "
                                       "finishing the data") from None


def buffered(reader: Reader, size: int) -> Reader:
    """Read ahead up to `size` samples in a background thread; the thread's exception is
    re-raised in the consumer, and stopping early stops the thread.

    Args:
        reader (callable): a reader creator.
        size (int): how many samples to read ahead (> 0).

    Returns:
        callable: a reader of the same samples, in order.

    Example:
        >>> list(fluid.io.buffered(lambda: iter(range(5)), size=2)())
        [0, 1, 2, 3, 4]
    """
    _check_reader(reader, "buffered")
    size = _positive_int(size, "size", "buffered")

    def buffered_reader():
        q = queue.Queue(maxsize=size)
        stop = threading.Event()

        def fill():
            try:
                for sample in reader():
                    if not _put(q, sample, stop):
                        return
                _put(q, _END, stop)
            except BaseException as e:  # carried to the consumer and re-raised there
                _put(q, _Failure(e), stop)

        t = threading.Thread(target=fill, daemon=True, name="numbaflow-buffered")
        t.start()
        try:
            while True:
                item = _get(q, [t])
                if item is _END:
                    return
                if isinstance(item, _Failure):
                    raise item.exc
                yield item
        finally:
            stop.set()
    return buffered_reader


def xmap_readers(mapper: Callable[[Any], Any], reader: Reader, process_num: int,
                 buffer_size: int, order: bool = False) -> Reader:
    """Map samples in `process_num` background threads; a mapper's exception is re-raised
    in the consumer.

    Args:
        mapper (callable): applied to each sample.
        reader (callable): a reader creator.
        process_num (int): worker threads (> 0).
        buffer_size (int): queue size (> 0).
        order (bool): keep the input order (default False: arrival order).

    Returns:
        callable: a reader of `mapper(sample)`.

    Example:
        >>> r = fluid.io.xmap_readers(lambda v: v * v, lambda: iter(range(5)), 2, 4,
        ...                           order=True)
        >>> list(r())
        [0, 1, 4, 9, 16]
    """
    if not callable(mapper):
        raise TypeError(f"xmap_readers: mapper must be callable, got {type(mapper).__name__}")
    _check_reader(reader, "xmap_readers")
    process_num = _positive_int(process_num, "process_num", "xmap_readers")
    buffer_size = _positive_int(buffer_size, "buffer_size", "xmap_readers")

    def xreader():
        in_q = queue.Queue(buffer_size)
        out_q = queue.Queue(buffer_size)
        stop = threading.Event()

        def read():
            try:
                for i, sample in enumerate(reader()):
                    if not _put(in_q, (i, sample), stop):
                        return
            except BaseException as e:
                _put(out_q, _Failure(e), stop)
            for _ in range(process_num):
                _put(in_q, _END, stop)

        def work():
            while not stop.is_set():
                try:
                    item = in_q.get(timeout=0.1)
                except queue.Empty:
                    continue
                if item is _END:
                    _put(out_q, _END, stop)
                    return
                i, sample = item
                try:
                    result = mapper(sample)
                except BaseException as e:
                    _put(out_q, _Failure(e), stop)
                    return
                if not _put(out_q, (i, result), stop):
                    return

        threads = [threading.Thread(target=read, daemon=True, name="numbaflow-xmap-read")]
        threads += [threading.Thread(target=work, daemon=True, name="numbaflow-xmap")
                    for _ in range(process_num)]
        for t in threads:
            t.start()
        finished, pending, want = 0, {}, 0
        try:
            while finished < process_num:
                item = _get(out_q, threads)
                if item is _END:
                    finished += 1
                    continue
                if isinstance(item, _Failure):
                    raise item.exc
                if not order:
                    yield item[1]
                    continue
                pending[item[0]] = item[1]
                while want in pending:
                    yield pending.pop(want)
                    want += 1
            for i in sorted(pending):  # only reached if indices were skipped (never)
                yield pending[i]
        finally:
            stop.set()
    return xreader
