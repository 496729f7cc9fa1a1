"""Run a fixed list of op thunks over their dependency graph, sequentially or on a thread pool.

The plan hands over, once, one tuple of dependencies per op (program order; every dependency
has a smaller index, so program order is always a valid schedule), then calls `run(thunks)`
every step. With `num_threads == 1` the caller's thread runs the thunks in program order.
Otherwise `num_threads - 1` persistent daemon workers plus the calling thread take ready ops
(lowest index first) from one lock-protected heap; the kernels are `nogil`, so the threads
really overlap. Each thread limits numba's intra-op parallelism (`numba.set_num_threads`, which
is thread-local) so that inter-op x intra-op threads do not oversubscribe the cores.

Results do not depend on the thread count: the deps (which include the plan's
write-after-read / write-after-write hazards on shared buffers) are honoured exactly.

>>> s = Scheduler([(), (0,), (0,), (1, 2)], num_threads=2)
>>> out = []
>>> s.run([lambda: out.append("a"), lambda: out.append("b"),
...        lambda: out.append("c"), lambda: out.append("d")])
>>> out[0], sorted(out[1:3]), out[3]
('a', ['b', 'c'], 'd')
>>> s.close()
"""
import heapq
import numbers
import threading
import warnings
import weakref

import numba

from . import threads

__all__ = ["OpFailed", "Scheduler", "threading_layer"]


class OpFailed(Exception):
    """A thunk raised: `.index` is the op's position in the list, `.error` the exception.

    >>> e = OpFailed(3, ValueError("bad shape"))
    >>> e.index, type(e.error).__name__
    (3, 'ValueError')
    """

    def __init__(self, index, error):
        super().__init__(f"op #{index} failed: {type(error).__name__}: {error}")
        self.index = index
        self.error = error

    def __reduce__(self):
        return OpFailed, (self.index, self.error)


def threading_layer():
    """The name of numba's CPU threading layer ('omp', 'tbb' or 'workqueue'), resolving it now.

    Resolving loads the layer's library (what the first parallel kernel call would do anyway).
    """
    from numba.np.ufunc import parallel
    parallel._launch_threads()
    return parallel.threading_layer()


def _thread_count_functions():
    """(get, set) of the calling thread's numba thread count, the fast ones if available.

    numba's public get/set_num_threads re-check the layer's initialisation under a lock and
    call the backend through ctypes' CFUNCTYPE, which releases the GIL: each call is ~1 us
    and lets any woken worker take the GIL away from the caller. The same backend entry
    points called as PYFUNCTYPE keep the GIL and take ~0.1 us; every pooled run sets and
    restores the count, so this is most of a small run's fixed cost.
    """
    import ctypes

    from numba.np.ufunc import parallel
    parallel._launch_threads()
    get = getattr(parallel, "_get_num_threads", None)
    set_ = getattr(parallel, "_set_num_threads", None)
    try:
        get = ctypes.PYFUNCTYPE(ctypes.c_int)(ctypes.cast(get, ctypes.c_void_p).value)
        set_ = ctypes.PYFUNCTYPE(None, ctypes.c_int)(ctypes.cast(set_, ctypes.c_void_p).value)
        set_(get())                     # smoke test
        return get, set_
    except Exception:  # noqa: BLE001 - numba internals changed: use the public API
        return numba.get_num_threads, numba.set_num_threads


# Layers whose parallel kernels may be entered from several threads at once. workqueue is not
# one: concurrent launches abort the process.
_THREADSAFE_LAYERS = ("omp", "tbb")


class _Pool:
    """The state shared by the caller and the workers. Workers reference this, not the
    Scheduler, so that dropping the Scheduler lets its finalizer stop them."""

    def __init__(self, succ, indeg):
        self.succ = succ                # successor lists, precomputed once
        self.indeg = indeg              # in-degrees; copied into `count` at each run
        self.sources = [i for i, c in enumerate(indeg) if c == 0]
        self.lock = threading.Lock()
        # Workers and the caller wait on separate conditions (one lock) so that the end of a
        # run wakes only the caller, and new ready ops wake only as many threads as they need.
        self.cond = threading.Condition(self.lock)
        self.caller_cond = threading.Condition(self.lock)
        self.count = []
        self.ready = []                 # heap of op indices whose deps are done
        self.thunks = ()
        self.left = 0                   # ops not yet completed successfully in this run
        self.running = 0                # ops being executed right now
        self.idle = 0                   # workers waiting and not yet notified
        self.caller_waiting = False
        self.errors = []                # (index, exception) of failed ops
        self.closed = False
        self.threads = []

    def finished(self):
        return self.left == 0 or (self.errors and self.running == 0)

    def wake(self, k):
        """Wake up to k waiting threads for k ready ops (lock held), the caller first."""
        if self.caller_waiting:
            self.caller_cond.notify()
            k -= 1
        k = min(k, self.idle)
        if k > 0:
            self.idle -= k              # counted here so that the next wake skips them
            self.cond.notify(k)

    def work(self, caller):
        """Take and run ready ops until the run finishes (caller) or the pool closes (worker).
        Called and returns with the lock held; it is dropped only around a thunk and in wait."""
        lock, ready, succ = self.lock, self.ready, self.succ
        while True:
            if ready and not self.errors:
                i = heapq.heappop(ready)
                thunk = self.thunks[i]
                self.running += 1
                lock.release()
                try:
                    thunk()
                    err = None
                except BaseException as e:  # noqa: BLE001 - reported to the caller as OpFailed
                    err = e
                lock.acquire()
                self.running -= 1
                if err is not None:
                    self.errors.append((i, err))
                    ready.clear()           # stop launching; running ops finish on their own
                else:
                    self.left -= 1
                    count = self.count
                    for s in succ[i]:
                        c = count[s] - 1
                        count[s] = c
                        if c == 0:
                            heapq.heappush(ready, s)
                if self.finished():
                    if self.caller_waiting:
                        self.caller_cond.notify()
                elif len(ready) > 1:
                    self.wake(len(ready) - 1)   # this thread takes one itself
            elif caller:
                if self.finished():
                    return
                self.caller_waiting = True
                try:
                    self.caller_cond.wait()
                finally:
                    self.caller_waiting = False
            elif self.closed:
                self.cond.notify_all()      # pass the news on (see stop)
                return
            else:
                self.idle += 1
                self.cond.wait()

    def worker_main(self, numba_threads):
        numba.set_num_threads(numba_threads)
        with self.lock:
            self.work(caller=False)

    def stop(self):
        """Tell the workers to exit, without blocking: this also runs from the garbage
        collector, possibly in a worker that holds the lock. Then the flag alone suffices:
        that worker sees it before it next waits and wakes the others on its way out."""
        self.closed = True
        if self.lock.acquire(blocking=False):
            try:
                self.cond.notify_all()
            finally:
                self.lock.release()

    def join(self):
        me = threading.current_thread()
        for t in self.threads:
            if t is not me:
                t.join()


class Scheduler:
    """Runs a fixed list of thunks respecting dependencies, on `num_threads` workers.

    deps: one tuple per op (program order) of the indices of the ops that must finish first,
    all smaller than the op's own index. num_threads: 1 runs the ops in program order on the
    caller's thread (no pool); n > 1 keeps n - 1 daemon worker threads that, with the caller,
    run ready ops concurrently (lowest index first). numba_threads: the intra-op thread count
    (numba.set_num_threads) of each thread; default NUMBA_NUM_THREADS // num_threads, at
    least 1. A graph with no two independent ops (a total order) runs with num_threads=1.
    If numba's threading layer is not thread-safe (workqueue), concurrent parallel
    kernels would crash, so the scheduler warns and runs with num_threads=1.
    `num_threads` / `numba_threads` are the effective values, `requested_threads` the given one.

    >>> s = Scheduler([(), (), (0, 1)], num_threads=2)
    >>> log = []
    >>> s.run([lambda: log.append(0), lambda: log.append(1), lambda: log.append(2)])
    >>> log[-1]
    2
    >>> s.run([lambda: None, lambda: 1 / 0, lambda: None])
    Traceback (most recent call last):
    ...
    numbaflow.executor.scheduler.OpFailed: op #1 failed: ZeroDivisionError: division by zero
    >>> s.close()
    """

    def __init__(self, deps, num_threads, numba_threads=None):
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"Scheduler num_threads must be an int >= 1, got {num_threads!r}")
        max_numba = numba.config.NUMBA_NUM_THREADS
        if numba_threads is not None and not (isinstance(numba_threads, int)
                                              and 1 <= numba_threads <= max_numba):
            raise ValueError(f"Scheduler numba_threads must be an int in [1, NUMBA_NUM_THREADS="
                             f"{max_numba}], got {numba_threads!r}")
        n = len(deps)
        succ = [[] for _ in range(n)]
        indeg = [0] * n
        level = [0] * n                     # longest dependency path ending at the op
        for i, ds in enumerate(deps):
            for d in set(ds):
                if not (isinstance(d, numbers.Integral) and 0 <= d < i):
                    raise ValueError(f"Scheduler deps[{i}] must hold op indices in [0, {i}) "
                                     f"(program order), got {d!r} in {tuple(ds)!r}")
                d = int(d)
                succ[d].append(i)
                indeg[i] += 1
                level[i] = max(level[i], level[d] + 1)
        self.requested_threads = num_threads
        # A total order (every op at its own level) has nothing to overlap: a pool would only
        # add overhead and take intra-op threads away, so such graphs run sequentially.
        if all(lv == i for i, lv in enumerate(level)):
            num_threads = 1
        if num_threads > 1:
            layer = threading_layer()
            if layer not in _THREADSAFE_LAYERS:
                warnings.warn(f"numba threading layer {layer!r} is not thread-safe; running ops "
                              f"with num_threads=1 instead of {num_threads}. Set "
                              f"NUMBA_THREADING_LAYER='threadsafe' (omp or tbb) to run ops "
                              f"concurrently.", RuntimeWarning, stacklevel=2)
                num_threads = 1
        self.num_threads = num_threads
        self.num_ops = n
        self._explicit_numba = numba_threads is not None
        # the workers share the process's thread budget (OMP_NUM_THREADS or the cores)
        self.numba_threads = numba_threads or threads.share(num_threads)
        self._guard = threading.Lock()      # one run at a time
        # also one thread under a smaller budget (OMP_NUM_THREADS=1): numba's default is all
        self._set_numba = num_threads > 1 or self._explicit_numba or \
            self.numba_threads != max_numba
        if self._set_numba:
            self._get_nt, self._set_nt = _thread_count_functions()
        self.pool = None
        self._finalizer = None
        if num_threads > 1:
            pool = _Pool([tuple(s) for s in succ], indeg)
            for k in range(num_threads - 1):
                t = threading.Thread(target=pool.worker_main, args=(self.numba_threads,),
                                     name=f"numbaflow-scheduler-{k}", daemon=True)
                pool.threads.append(t)
                t.start()
            self.pool = pool
            # also runs at interpreter exit (weakref.finalize registers with atexit)
            self._finalizer = weakref.finalize(self, pool.stop)

    def run(self, thunks):
        """Execute `thunks` (one zero-argument callable per op) and return when all are done.

        If thunks raise, no further op is started, running ones are awaited, and the failure
        of the lowest index is raised as `OpFailed(index, error)`; the scheduler stays usable.
        """
        if len(thunks) != self.num_ops:
            raise ValueError(f"Scheduler.run expected {self.num_ops} thunks (one per dep "
                             f"entry), got {len(thunks)}")
        if not self._guard.acquire(blocking=False):
            raise RuntimeError("Scheduler.run is already running in another thread; use one "
                               "Scheduler per thread")
        try:
            threads.one_thread_blas()     # concurrent ops: numba's threads are the pool
            set_numba = self._set_numba
            if set_numba:
                prev = self._get_nt()
                self._set_nt(self.numba_threads)
            try:
                if self.pool is None:
                    if self.num_threads > 1:
                        raise RuntimeError("Scheduler.run after close()")
                    self._run_sequential(thunks)
                else:
                    self._run_pool(thunks)
            finally:
                if set_numba:
                    self._set_nt(prev)
        finally:
            self._guard.release()

    @staticmethod
    def _run_sequential(thunks):
        i = 0
        try:
            for i, thunk in enumerate(thunks):
                thunk()
        except Exception as e:              # KeyboardInterrupt / SystemExit pass through
            raise OpFailed(i, e) from e

    def _run_pool(self, thunks):
        pool = self.pool
        with pool.lock:
            if pool.closed:
                raise RuntimeError("Scheduler.run after close()")
            # a previous run interrupted in the caller may still have ops in flight
            while pool.running:
                pool.caller_waiting = True
                try:
                    pool.caller_cond.wait()
                finally:
                    pool.caller_waiting = False
            pool.thunks = thunks
            pool.count = list(pool.indeg)
            pool.errors = []
            pool.left = len(thunks)
            ready = pool.ready
            ready[:] = pool.sources         # ascending: already a heap
            if len(ready) > 1:
                pool.wake(len(ready) - 1)
            try:
                pool.work(caller=True)
            except BaseException:
                # interrupted while waiting: stop launching, let running ops drain
                pool.errors.append((-1, None))
                ready.clear()
                raise
            finally:
                pool.thunks = ()            # do not keep the step's arrays alive
            errors = pool.errors
        if errors:
            i, err = min(errors, key=lambda e: e[0])
            if not isinstance(err, Exception):
                raise err
            raise OpFailed(i, err) from err

    def close(self):
        """Stop and join the worker threads; idempotent. Later `run` calls raise RuntimeError
        (for num_threads > 1)."""
        if self.pool is not None:
            self._finalizer()               # runs pool.stop once, then becomes a no-op
            self.pool.join()
            self.pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"Scheduler(num_ops={self.num_ops}, num_threads={self.num_threads}, "
                f"numba_threads={self.numba_threads})")
