"""Background loading for the DataLoader: worker processes and a prefetch thread.

Workers are forked processes on Linux (the dataset is inherited, not pickled; they run
only dataset and collate code, never a kernel) and threads elsewhere. Every wait polls
with a short timeout and checks that the workers are alive, so a worker that dies or
hangs past `timeout` raises RuntimeError instead of blocking forever. A worker's
exception is re-raised in the main process, its traceback attached as the cause.
"""
import multiprocessing
import pickle
import queue
import random
import threading
import time
import traceback

import numpy as np

from . import dataset as _dataset

_POLL = 0.1
_DONE = "__numbaflow_worker_done__"


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a DataLoader worker: the `__cause__` of
    the exception re-raised in the main process.

    Args:
        tb (str): the worker's formatted traceback.

    Example:
        >>> class Broken(paddle.io.Dataset):
        ...     def __getitem__(self, i):
        ...         raise KeyError(i)
        ...     def __len__(self):
        ...         return 2
        >>> try:
        ...     list(paddle.io.DataLoader(Broken(), num_workers=1))
        ... except KeyError as e:
        ...     print(isinstance(e.__cause__, paddle.io.RemoteTraceback))
        True
    """

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self):
        return "\n\nTraceback in the DataLoader worker:\n" + self.tb


class _Failure:
    def __init__(self, exc, where):
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            pickle.dumps(exc)
        except Exception:
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        self.exc, self.tb, self.where = exc, tb, where

    def reraise(self):
        exc = self.exc
        raise exc from RemoteTraceback(f"({self.where})\n{self.tb}")


def _context():
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return None                          # no fork: threads (the dataset stays shared)


def _start_worker(ctx, target, args, name):
    if ctx is None:
        w = threading.Thread(target=target, args=args, daemon=True, name=name)
    else:
        w = ctx.Process(target=target, args=args, daemon=True, name=name)
    w.start()
    return w


def _setup(wid, num_workers, dataset, seed, init_fn):
    _dataset.worker_local.info = _dataset.WorkerInfo(wid, num_workers, dataset, seed + wid)
    random.seed(seed + wid)
    np.random.seed((seed + wid) % 2 ** 32)
    if init_fn is not None:
        init_fn(wid)


def _index_loop(wid, num_workers, dataset, seed, init_fn, fetch, jobs, results):
    """A map-style worker: (batch number, indices) in, (batch number, batch) out."""
    try:
        _setup(wid, num_workers, dataset, seed, init_fn)
    except BaseException as e:
        results.put((None, _Failure(e, f"worker {wid}, worker_init_fn")))
        return
    while True:
        job = jobs.get()
        if job is None:           # the consumer is closing: results are no longer read
            _abandon(results)
            break
        n, indices = job
        try:
            results.put((n, fetch(indices)))
        except BaseException as e:
            results.put((n, _Failure(e, f"worker {wid}, batch {n}")))


def _stream_loop(wid, num_workers, dataset, seed, init_fn, make_iter, results, stop):
    """A streaming worker: sends every item of `make_iter()`, then _DONE. The results
    queue is bounded (a fast worker waits for the consumer), and `stop` ends the wait."""
    def put(item):
        while not stop.is_set():
            try:
                results.put((wid, item), timeout=_POLL)
                return True
            except queue.Full:
                pass
        return False

    try:
        _setup(wid, num_workers, dataset, seed, init_fn)
        for item in make_iter():
            if not put(item):
                break
        else:
            put(_DONE)
    except BaseException as e:
        put(_Failure(e, f"worker {wid}"))
    if stop.is_set():
        _abandon(results)


def _abandon(results):
    """The consumer is gone: exit without waiting to flush what it will never read."""
    cancel = getattr(results, "cancel_join_thread", None)
    if cancel is not None:
        cancel()


class _Pool:
    """Workers, their queues, and a shutdown that never blocks for long."""

    def __init__(self, num_workers, max_results=0):
        self.ctx = _context()
        q = self.ctx.Queue if self.ctx is not None else queue.Queue
        self.new_queue = q
        self.results = q(max_results)
        self.workers, self.job_queues = [], []
        self.num_workers = num_workers
        self.seed = random.randrange(2 ** 31)

    def get(self, timeout):
        """The next result; RuntimeError if a worker died or nothing came in `timeout`."""
        start = time.monotonic()
        while True:
            try:
                return self.results.get(timeout=_POLL)
            except queue.Empty:
                pass
            dead = [w for w in self.workers if not w.is_alive()]
            if dead and self.ctx is not None:
                codes = {getattr(w, "pid", None): getattr(w, "exitcode", None) for w in dead}
                raise RuntimeError(f"DataLoader worker(s) {sorted(codes)} exited unexpectedly "
                                   f"(exit codes {list(codes.values())}; a negative code is "
                                   f"the signal that killed it, e.g. -9 for out of memory)")
            if timeout and time.monotonic() - start > timeout:
                raise RuntimeError(f"DataLoader timed out: no batch from the workers in "
                                   f"{timeout} s (timeout={timeout})")

    def close(self):
        for q in self.job_queues:
            try:
                q.put(None)
            except Exception:
                pass
        deadline = time.monotonic() + 2
        for w in self.workers:
            w.join(max(0.0, deadline - time.monotonic()))
        for w in self.workers:
            if self.ctx is not None and w.is_alive():
                w.terminate()
                w.join(1)
                if w.is_alive():
                    w.kill()
                    w.join(1)
        if self.ctx is not None:
            for q in self.job_queues + [self.results]:
                q.cancel_join_thread()       # never wait on a dead reader at exit
                q.close()


class _Running:
    """An iterator over a started pool's results that shuts the pool down when it is
    exhausted, fails, is closed, or is garbage-collected unstarted."""

    def __init__(self, pool, gen, on_close=None):
        self.pool, self.gen, self.on_close = pool, gen, on_close

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self.gen)
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.pool is not None:
            if self.on_close is not None:
                self.on_close()
            self.gen.close()
            self.pool.close()
            self.pool = None

    def __del__(self):
        try:
            self.close()
        except Exception:          # at interpreter exit the queues may already be gone
            pass


def indexed_batches(batch_indices, fetch, dataset, num_workers, prefetch, init_fn, timeout):
    """An iterator of fetch(indices) for each list of indices, in order, computed by
    `num_workers` workers (started now, in the calling thread) with up to `prefetch`
    batches in flight per worker."""
    pool = _Pool(num_workers)
    for wid in range(num_workers):
        jobs = pool.new_queue()
        pool.job_queues.append(jobs)
        pool.workers.append(_start_worker(
            pool.ctx, _index_loop, (wid, num_workers, dataset, pool.seed, init_fn, fetch,
                                    jobs, pool.results), f"numbaflow-loader-{wid}"))
    return _Running(pool, _in_order(pool, enumerate(batch_indices), num_workers * prefetch,
                                    timeout))


def _in_order(pool, source, in_flight, timeout):
    sent = received = 0
    ready = {}
    exhausted = False

    def send():
        nonlocal sent, exhausted
        try:
            n, indices = next(source)
        except StopIteration:
            exhausted = True
            return
        pool.job_queues[n % pool.num_workers].put((n, list(indices)))
        sent += 1

    while not exhausted and sent < in_flight:
        send()
    while received < sent:
        while received not in ready:
            n, item = pool.get(timeout)
            if isinstance(item, _Failure):
                item.reraise()
            ready[n] = item
        yield ready.pop(received)
        received += 1
        if not exhausted:
            send()


def streamed(make_iters, dataset, init_fn, timeout, capacity):
    """An iterator of the items of every `make_iters[i]()`, each run in its own worker
    (started now), in arrival order, until all are done; at most `capacity` items wait."""
    pool = _Pool(len(make_iters), max_results=max(1, int(capacity)))
    stop = pool.ctx.Event() if pool.ctx is not None else threading.Event()
    for wid, make_iter in enumerate(make_iters):
        pool.workers.append(_start_worker(
            pool.ctx, _stream_loop, (wid, len(make_iters), dataset, pool.seed, init_fn,
                                     make_iter, pool.results, stop),
            f"numbaflow-loader-{wid}"))
    return _Running(pool, _arrivals(pool, len(make_iters), timeout), on_close=stop.set)


def _arrivals(pool, num_workers, timeout):
    done = 0
    while done < num_workers:
        wid, item = pool.get(timeout)
        if isinstance(item, _Failure):
            item.reraise()
        if isinstance(item, str) and item == _DONE:
            done += 1
            continue
        yield item


def prefetched(iterator, capacity):
    """Run `iterator` in a background thread, `capacity` items ahead; its exception is
    re-raised here; closing the consumer stops the thread."""
    q = queue.Queue(maxsize=max(1, int(capacity)))
    stop = threading.Event()
    end = object()

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=_POLL)
                return True
            except queue.Full:
                pass
        return False

    def fill():
        try:
            for item in iterator:
                if not put(item):
                    return
            put(end)
        except BaseException as e:        # re-raised as is (same process)
            put(_ThreadFailure(e))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None and stop.is_set():
                close()

    t = threading.Thread(target=fill, daemon=True, name="numbaflow-prefetch")
    t.start()
    try:
        while True:
            try:
                item = q.get(timeout=_POLL)
            except queue.Empty:
                if not t.is_alive() and q.empty():
                    raise RuntimeError("DataLoader: the prefetch thread ended early") from None
                continue
            if item is end:
                return
            if isinstance(item, _ThreadFailure):
                raise item.exc
            yield item
    finally:
        stop.set()
        t.join(5)


class _ThreadFailure:
    def __init__(self, exc):
        self.exc = exc

