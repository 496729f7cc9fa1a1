"""The op scheduler: dependency order, failures, real overlap of nogil work, thread hygiene."""
import gc
import random
import threading
import time
import warnings

import numba
import numpy as np
import pytest

from numbaflow.executor import scheduler as sched_mod
from numbaflow.executor.scheduler import OpFailed, Scheduler


def run_or_fail(s, thunks, timeout=30):
    """s.run(thunks) on a helper thread, so that a scheduler bug that hangs fails the test."""
    box = []

    def target():
        try:
            s.run(thunks)
            box.append(None)
        except BaseException as e:  # noqa: BLE001
            box.append(e)
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"Scheduler.run did not return within {timeout} s"
    if box[0] is not None:
        raise box[0]


def random_dag(rng, n, p):
    """deps[i] = random subset of earlier ops (each with probability p)."""
    return [tuple(j for j in range(i) if rng.random() < p) for i in range(n)]


def checking_thunks(deps, log, lock):
    """Thunks that fail the test (via `bad`) if an op runs before its deps or twice."""
    done = set()
    bad = []

    def make(i):
        def thunk():
            with lock:
                if i in done or any(d not in done for d in deps[i]):
                    bad.append(i)
            time.sleep(0)       # let other threads interleave between check and mark
            with lock:
                done.add(i)
                log.append(i)
        return thunk
    return [make(i) for i in range(len(deps))], done, bad


@pytest.mark.parametrize("num_threads", [1, 2, 4])
def test_random_dags_respect_deps(num_threads):
    rng = random.Random(num_threads)
    for p in (0.0, 0.05, 0.3):
        deps = random_dag(rng, 50, p)
        with Scheduler(deps, num_threads) as s:
            for _ in range(20):
                log, lock = [], threading.Lock()
                thunks, _, bad = checking_thunks(deps, log, lock)
                run_or_fail(s, thunks)
                assert bad == []
                assert sorted(log) == list(range(50))
                if num_threads == 1:
                    assert log == list(range(50))


def test_checker_can_fail():
    # the dependency check above must notice an op that runs before its dep
    deps = [(), (0,)]
    log, lock = [], threading.Lock()
    thunks, _, bad = checking_thunks(deps, log, lock)
    thunks[1]()
    thunks[0]()
    assert bad == [1]


def test_empty_and_chain():
    with Scheduler([], 2) as s:
        s.run([])
    out = []
    # a chain plus one independent op keeps the pool
    with Scheduler([()] + [(i,) for i in range(30)] + [()], 4) as s:
        assert s.num_threads == 4
        s.run([lambda i=i: out.append(i) for i in range(32)])
    assert out[:31] == [i for i in out if i != 31] == list(range(31))


def test_total_order_runs_sequentially():
    # nothing can overlap (transitively 0 -> 1 -> 2 -> 3), so no pool and all numba threads
    s = Scheduler([(), (0,), (1,), (0, 2)], 4)
    assert (s.num_threads, s.requested_threads, s.pool) == (1, 4, None)
    assert s.numba_threads == numba.config.NUMBA_NUM_THREADS
    ident = []
    s.run([lambda: ident.append(threading.get_ident())] * 4)
    assert ident == [threading.get_ident()] * 4
    assert Scheduler([(), (0,), (0,)], 2).num_threads == 2   # 1 and 2 can overlap
    assert Scheduler([()], 2).num_threads == 1


def test_single_thread_program_order_on_caller():
    deps = [(), (), (0,), (), (1, 2)]
    seen = []
    s = Scheduler(deps, 1)
    s.run([lambda i=i: seen.append((i, threading.get_ident())) for i in range(5)])
    assert seen == [(i, threading.get_ident()) for i in range(5)]
    assert s.pool is None


def test_pool_uses_several_threads():
    ids = set()
    barrier = threading.Barrier(2, timeout=10)

    def op():
        ids.add(threading.get_ident())
        barrier.wait()      # only passes if two ops run at the same time
    with Scheduler([(), ()], 2) as s:
        s.run([op, op])
    assert len(ids) == 2


@pytest.mark.parametrize("num_threads", [1, 2, 4])
def test_failure_reported_and_dependents_not_started(num_threads):
    # 0 -> 1 -> 2 (fails) -> 3 -> 4; 5 independent
    deps = [(), (0,), (1,), (2,), (3,), ()]
    started = []

    def ok(i):
        return lambda: started.append(i)

    def boom():
        started.append(2)
        raise KeyError("no such var")
    thunks = [ok(0), ok(1), boom, ok(3), ok(4), ok(5)]
    with Scheduler(deps, num_threads) as s:
        with pytest.raises(OpFailed) as info:
            s.run(thunks)
        assert info.value.index == 2
        assert isinstance(info.value.error, KeyError)
        assert info.value.__cause__ is info.value.error
        assert 3 not in started and 4 not in started
        if num_threads == 1:
            assert started == [0, 1, 2]     # nothing launched after the failure
        # still usable
        out = []
        s.run([lambda i=i: out.append(i) for i in range(6)])
        assert sorted(out) == list(range(6))


def test_first_failure_by_program_order():
    # ops 1 and 3 fail at the same time; 1 must be reported however the threads race
    barrier = threading.Barrier(2, timeout=10)

    def fail_late(msg, delay):
        def thunk():
            barrier.wait()
            time.sleep(delay)
            raise ValueError(msg)
        return thunk
    for delay1, delay3 in ((0.05, 0.0), (0.0, 0.05)):
        barrier.reset()
        deps = [(), (0,), (), (2,), (1, 3)]
        thunks = [lambda: None, fail_late("one", delay1), lambda: None,
                  fail_late("three", delay3), lambda: pytest.fail("op 4 must not run")]
        with Scheduler(deps, 2) as s, pytest.raises(OpFailed) as info:
            s.run(thunks)
        assert info.value.index == 1 and str(info.value.error) == "one"


def test_failure_stops_launching_independent_ops():
    # with 2 threads: op 0 fails while op 1 is running; ops 2.. (independent) must not start
    started = []
    gate = threading.Event()

    def fail():
        gate.wait(10)
        raise RuntimeError("x")

    def slow():
        started.append(1)
        gate.set()
        time.sleep(0.1)     # still running when op 0 fails
    deps = [(), ()] + [(1,)] * 5
    thunks = [fail, slow] + [lambda i=i: started.append(i) for i in range(2, 7)]
    with Scheduler(deps, 2) as s, pytest.raises(OpFailed) as info:
        s.run(thunks)
    assert info.value.index == 0 and started == [1]


def burn(n):
    """A GIL-releasing busy loop of about n iterations."""
    acc = 0.0
    for i in range(n):
        acc += (i % 7) * 0.5
    return acc


burn_nogil = numba.njit(nogil=True)(burn)


@pytest.mark.slow      # timing: a loaded machine may deschedule a thread (issue 21)
def test_nogil_work_overlaps():
    # two independent chains of nogil busy kernels on 2 threads run at the same time:
    # their (wall-clock) intervals overlap. A kernel holding the GIL would block the other
    # thread for its whole duration, so no two ops could overlap by more than a few ms.
    # Measured as overlap, not speed-up, so a loaded machine cannot make it flaky.
    burn_nogil(10)
    n = 20_000_000
    t0 = time.perf_counter()
    burn_nogil(n)
    n = int(n * 0.05 / max(time.perf_counter() - t0, 1e-6))    # ~50 ms per op
    deps = [(), (), (0,), (1,), (2,), (3,)]    # chain A: 0,2,4; chain B: 1,3,5
    spans = [None] * 6

    def op(i):
        def run():
            start = time.perf_counter()
            burn_nogil(n)
            spans[i] = (start, time.perf_counter())
        return run
    with Scheduler(deps, 2) as s:
        s.run([op(i) for i in range(6)])
    overlap = max(min(spans[a][1], spans[b][1]) - max(spans[a][0], spans[b][0])
                  for a in (0, 2, 4) for b in (1, 3, 5))
    assert overlap > 0.01, spans      # generous: 50 ms ops, a GIL-holder gives ~0


@pytest.mark.slow      # timing (issue 21): generous bound, out of the core run
def test_sleep_chains_halve_wall_time():
    deps = [(), ()] + [(i,) for i in range(6)]     # two chains of 4 ops each
    thunks = [lambda: time.sleep(0.05)] * 8

    def timed(num_threads):
        with Scheduler(deps, num_threads) as s:
            t0 = time.perf_counter()
            s.run(thunks)
            return time.perf_counter() - t0
    t1, t2 = timed(1), timed(2)
    assert t1 >= 0.4
    assert t2 < 0.85 * t1, (t1, t2)     # ideal 0.5


def test_numba_threads_per_thread_and_restored():
    seen = []
    lock = threading.Lock()

    def op():
        with lock:
            seen.append(numba.get_num_threads())
    before = numba.get_num_threads()
    with Scheduler([()] * 8, 2, numba_threads=1) as s:
        for _ in range(5):
            s.run([op] * 8)
    assert set(seen) == {1}
    assert numba.get_num_threads() == before
    s = Scheduler([(), ()], 2)
    assert s.numba_threads == max(1, numba.config.NUMBA_NUM_THREADS // 2)
    s.close()


@numba.njit(parallel=True)
def par_square_sum(x, out):
    for i in numba.prange(x.shape[0]):
        out[i] = x[i] * x[i] + 1.0


def test_parallel_kernels_called_concurrently():
    # two threads entering one parallel=True kernel at once need a thread-safe layer
    nt = numba.config.NUMBA_NUM_THREADS
    xs = [np.arange(200_000, dtype=np.float64) * (k + 1) for k in range(8)]
    outs = [np.zeros_like(x) for x in xs]
    par_square_sum(xs[0], outs[0])
    with Scheduler([()] * 8, 2, numba_threads=nt) as s:
        if s.num_threads == 1:
            pytest.skip("threading layer is not thread-safe here")
        for _ in range(10):
            for o in outs:
                o[:] = 0
            s.run([lambda x=x, o=o: par_square_sum(x, o) for x, o in zip(xs, outs)])
            for x, o in zip(xs, outs):
                np.testing.assert_array_equal(o, x * x + 1.0)


def test_workqueue_layer_falls_back_to_one_thread(monkeypatch):
    monkeypatch.setattr(sched_mod, "threading_layer", lambda: "workqueue")
    with pytest.warns(RuntimeWarning, match="workqueue"):
        s = Scheduler([(), ()], 4)
    assert s.num_threads == 1 and s.pool is None
    out = []
    s.run([lambda: out.append(0), lambda: out.append(1)])
    assert out == [0, 1]
    monkeypatch.setattr(sched_mod, "threading_layer", lambda: "omp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Scheduler([(), ()], 4) as s:
            assert s.num_threads == 4


def test_close_idempotent_and_joins():
    s = Scheduler([(), ()], 3)
    threads = list(s.pool.threads)
    assert len(threads) == 2 and all(t.daemon and t.is_alive() for t in threads)
    s.close()
    s.close()
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(RuntimeError, match="close"):
        s.run([lambda: None, lambda: None])
    Scheduler([()], 1).close()


def test_garbage_collection_stops_workers():
    s = Scheduler([(), ()], 3)
    s.run([lambda: None, lambda: None])
    threads = list(s.pool.threads)
    del s
    gc.collect()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"deps\[1\]"):
        Scheduler([(), (1,)], 1)
    with pytest.raises(ValueError, match=r"deps\[2\]"):
        Scheduler([(), (), (5,)], 2)
    with pytest.raises(ValueError, match="num_threads"):
        Scheduler([()], 0)
    with pytest.raises(ValueError, match="numba_threads"):
        Scheduler([()], 2, numba_threads=numba.config.NUMBA_NUM_THREADS + 1)
    with Scheduler([(), (0, 0)], 2) as s:        # duplicate deps count once
        with pytest.raises(ValueError, match="expected 2 thunks"):
            s.run([lambda: None])
        out = []
        s.run([lambda: out.append(0), lambda: out.append(1)])
        assert out == [0, 1]


def test_reference_cycle_collected_stops_workers():
    s = Scheduler([(), ()], 2)
    s.myself = s                # only the cyclic collector can free it
    threads = list(s.pool.threads)
    del s
    gc.collect()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)


@pytest.mark.parametrize("num_threads", [1, 2])
def test_base_exceptions_pass_through(num_threads):
    def interrupt():
        raise KeyboardInterrupt
    with Scheduler([(), (), (0,)], num_threads) as s:
        with pytest.raises(KeyboardInterrupt):
            s.run([lambda: None, interrupt, lambda: None])
        out = []
        s.run([lambda i=i: out.append(i) for i in range(3)])
        assert sorted(out) == [0, 1, 2]
