"""paddle.io: Dataset, IterableDataset, BatchSampler, DataLoader (+ from_generator).

References: batches are compared with numpy slices of the same data; training through a
loader is compared with training on hand-made feed dicts."""
import multiprocessing
import os
import random
import signal
import time

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static
from numbaflow.io import (BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler,
                          RemoteTraceback, SequenceSampler, TensorDataset, get_worker_info)
from child import run_script
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
N, D_IN = 23, 3
XS = np.arange(N * D_IN, dtype="float32").reshape(N, D_IN)
YS = (np.arange(N) % 4).astype("int64")


class ArrayDataset(Dataset):
    def __getitem__(self, i):
        return XS[i], YS[i]

    def __len__(self):
        return N


class FailingDataset(ArrayDataset):
    def __getitem__(self, i):
        if i == 13:
            raise KeyError(f"sample {i} is broken")
        return super().__getitem__(i)


class KillingDataset(ArrayDataset):
    def __getitem__(self, i):
        if i == 7 and get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


class SlowDataset(ArrayDataset):
    def __getitem__(self, i):
        time.sleep(3)
        return super().__getitem__(i)


class ShardedStream(IterableDataset):
    """Each worker yields every num_workers-th sample, starting at its id."""

    def __iter__(self):
        info = get_worker_info()
        wid, n = (info.id, info.num_workers) if info is not None else (0, 1)
        for i in range(wid, N, n):
            yield XS[i], YS[i]


@pytest.fixture
def xy():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, D_IN], "float32")
        y = static.data("y", [None, 1], "int64")
    return main, x, y


def expected_batches(order, bs, drop_last=False):
    out = []
    for s in range(0, len(order), bs):
        idx = order[s:s + bs]
        if len(idx) == bs or not drop_last:
            out.append((XS[idx], YS[idx].reshape(-1, 1)))
    return out


# ----------------------------------------------------------------------------- samplers
def test_batch_sampler():
    ds = ArrayDataset()
    assert list(BatchSampler(ds, batch_size=10)) == [list(range(10)), list(range(10, 20)),
                                                      [20, 21, 22]]
    assert len(BatchSampler(ds, batch_size=10)) == 3
    assert len(BatchSampler(ds, batch_size=10, drop_last=True)) == 2
    random.seed(3)
    flat = [i for b in BatchSampler(ds, shuffle=True, batch_size=5) for i in b]
    assert sorted(flat) == list(range(N)) and flat != list(range(N))
    assert list(BatchSampler(sampler=SequenceSampler(ds), batch_size=23)) == [list(range(N))]
    assert len(list(RandomSampler(ds))) == N
    with pytest.raises(ValueError, match="exactly one"):
        BatchSampler()
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(ds, batch_size=0)


# ----------------------------------------------------------------------------- DataLoader
@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("drop_last", [False, True])
def test_loader_yields_feed_dicts_in_order(xy, num_workers, drop_last):
    main, x, y = xy
    loader = DataLoader(ArrayDataset(), feed_list=[x, y], places=paddle.CPUPlace(),
                        batch_size=5, drop_last=drop_last, num_workers=num_workers,
                        return_list=False)
    got = list(loader())
    want = expected_batches(list(range(N)), 5, drop_last)
    assert len(got) == len(want) == len(loader)
    for feed, (bx, by) in zip(got, want):
        assert sorted(feed) == ["x", "y"]
        np.testing.assert_array_equal(feed["x"], bx)
        assert feed["y"].dtype == np.int64 and feed["y"].shape == by.shape   # (B,) -> (B, 1)
        np.testing.assert_array_equal(feed["y"], by)


@pytest.mark.parametrize("num_workers", [0, 3])
def test_shuffled_epochs_cover_every_sample_once(xy, num_workers):
    main, x, y = xy
    loader = DataLoader(TensorDataset([XS, YS]), feed_list=[x, y], batch_size=4, shuffle=True,
                        num_workers=num_workers, return_list=False)
    epochs = []
    for _ in range(2):
        xs = np.concatenate([f["x"] for f in loader])
        rows = sorted(int(r[0]) // D_IN for r in xs)
        assert rows == list(range(N))
        epochs.append(xs[:, 0].tolist())
    assert epochs[0] != epochs[1]


def test_return_list_gives_arrays_in_field_order():
    loader = DataLoader(ArrayDataset(), batch_size=8)           # Paddle's default: lists
    bx, by = next(iter(loader))
    np.testing.assert_array_equal(bx, XS[:8])
    np.testing.assert_array_equal(by, YS[:8])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iterable_dataset_sharded_by_worker_info(xy, num_workers):
    main, x, y = xy
    loader = DataLoader(ShardedStream(), feed_list=[x, y], batch_size=4,
                        num_workers=num_workers, return_list=False)
    rows = sorted(int(v) for f in loader for v in f["x"][:, 0] // D_IN)
    assert rows == list(range(N))             # every sample exactly once across workers


def test_worker_init_fn_runs_in_each_worker():
    seen = multiprocessing.get_context("fork").Queue()
    loader = DataLoader(ArrayDataset(), batch_size=4, num_workers=2,
                        worker_init_fn=lambda wid: seen.put((wid, get_worker_info().id)))
    assert len(list(loader)) == 6
    got = sorted(seen.get(timeout=5) for _ in range(2))
    assert got == [(0, 0), (1, 1)]


def test_places_give_one_batch_per_device_and_train_like_manual_feeds():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, D_IN], "float32")
        y = static.data("y", [None, 1], "int64")
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(x, 4), y)
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    places = [paddle.CPUPlace()] * 2
    loader = DataLoader(ArrayDataset(), feed_list=[x, y], places=places, batch_size=5,
                        drop_last=True, return_list=False)
    items = list(loader)
    assert len(items) == len(loader) == 2             # 4 full batches -> 2 steps of 2 devices
    odd = DataLoader(ArrayDataset(), feed_list=[x, y], places=places, batch_size=4,
                     drop_last=True, return_list=False)        # 5 batches: the 5th dropped
    assert len(list(odd)) == len(odd) == 2
    want = expected_batches(list(range(N)), 5, True)
    for step, item in enumerate(items):
        assert isinstance(item, list) and len(item) == 2
        for dev, feed in enumerate(item):
            np.testing.assert_array_equal(feed["x"], want[2 * step + dev][0])
    exe = static.Executor()
    a, b = static.Scope(), static.Scope()
    exe.run(startup, scope=a)
    for n in a.local_var_names():
        b.set(n, np.array(a.get(n)))
    def compiled():
        return static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                               places=places)
    ca, cb = compiled(), compiled()
    manual = [[{"x": want[2 * s + d][0], "y": want[2 * s + d][1]} for d in range(2)]
              for s in range(2)]
    got = [exe.run(ca, feed=f, fetch_list=[loss], scope=a)[0] for f in items]
    ref = [exe.run(cb, feed=f, fetch_list=[loss], scope=b)[0] for f in manual]
    np.testing.assert_array_equal(np.array(got), np.array(ref))
    np.testing.assert_array_equal(a.get("fc_0.w_0"), b.get("fc_0.w_0"))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_batch_size_none_takes_each_item_as_a_batch(xy, num_workers):
    main, x, y = xy

    class Batches(Dataset):
        def __getitem__(self, i):
            return XS[4 * i:4 * i + 4], YS[4 * i:4 * i + 4].reshape(-1, 1)

        def __len__(self):
            return 5
    feeds = list(DataLoader(Batches(), feed_list=[x, y], batch_size=None,
                            num_workers=num_workers, return_list=False))
    for feed, (bx, by) in zip(feeds, expected_batches(list(range(20)), 4)):
        np.testing.assert_array_equal(feed["x"], bx)
        np.testing.assert_array_equal(feed["y"], by)
    assert len(feeds) == 5


# ----------------------------------------------------------------------------- errors, no hangs
@pytest.mark.parametrize("num_workers", [0, 2])
def test_worker_error_is_reraised_with_its_traceback(num_workers):
    loader = DataLoader(FailingDataset(), batch_size=4, num_workers=num_workers)
    it = iter(loader)
    next(it)
    next(it)
    with pytest.raises(KeyError, match="sample 13 is broken") as info:
        list(it)
    if num_workers:
        cause = info.value.__cause__
        assert isinstance(cause, RemoteTraceback)
        assert "__getitem__" in cause.tb and "sample 13 is broken" in cause.tb


@pytest.mark.slow
def test_killed_worker_raises_instead_of_hanging():
    loader = DataLoader(KillingDataset(), batch_size=4, num_workers=2)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)
    assert time.monotonic() - t0 < 20


@pytest.mark.slow
def test_timeout_bounds_the_wait_for_a_batch():
    loader = DataLoader(SlowDataset(), batch_size=2, num_workers=1, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out"):
        next(iter(loader))
    assert time.monotonic() - t0 < 10


def test_leaving_early_stops_the_workers():
    loader = DataLoader(ArrayDataset(), batch_size=1, num_workers=2)
    it = iter(loader)
    next(it)
    it.close()
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def test_loader_argument_errors(xy):
    main, x, y = xy
    with pytest.raises(ValueError, match="feed_list"):
        DataLoader(ArrayDataset(), return_list=False)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ArrayDataset(), num_workers=-1)
    with pytest.raises(ValueError, match="not both"):
        DataLoader(ArrayDataset(), batch_sampler=BatchSampler(ArrayDataset()), batch_size=4)
    loader = DataLoader(ArrayDataset(), feed_list=[x], batch_size=2, return_list=False)
    with pytest.raises(ValueError, match="2 fields but feed_list has 1"):
        next(iter(loader))


# ----------------------------------------------------------------------------- from_generator
def sample_reader():
    for i in range(N):
        yield XS[i], YS[i]


@pytest.mark.parametrize("kind", ["sample", "sample_list", "batch"])
@pytest.mark.parametrize("use_multiprocess", [False, True])
def test_from_generator_three_sources(xy, kind, use_multiprocess):
    main, x, y = xy
    loader = DataLoader.from_generator(feed_list=[x, y], capacity=4,
                                       use_multiprocess=use_multiprocess)
    place = paddle.CPUPlace()
    if kind == "sample":
        loader.set_sample_generator(sample_reader, batch_size=5, drop_last=True, places=place)
    elif kind == "sample_list":
        loader.set_sample_list_generator(paddle.batch(sample_reader, 5, drop_last=True),
                                         places=place)
    else:
        def batches():
            for s in range(0, N - 4, 5):
                yield XS[s:s + 5], YS[s:s + 5].reshape(-1, 1)
        loader.set_batch_generator(batches, places=place)
    got = list(loader())
    want = expected_batches(list(range(N)), 5, drop_last=True)
    assert len(got) == len(want)
    for feed, (bx, by) in zip(got, want):
        np.testing.assert_array_equal(feed["x"], bx)
        np.testing.assert_array_equal(feed["y"], by)


def test_from_generator_errors(xy):
    main, x, y = xy
    with pytest.raises(ValueError, match="iterable=False"):
        DataLoader.from_generator(feed_list=[x, y], iterable=False)
    loader = DataLoader.from_generator(feed_list=[x, y])
    with pytest.raises(RuntimeError, match="set_sample_generator"):
        iter(loader)
    with pytest.raises(TypeError, match="pass the function"):
        loader.set_sample_list_generator(sample_reader())

    def broken():
        yield XS[0], YS[0]
        raise OSError("disk gone")
    loader.set_sample_generator(broken, batch_size=1)
    with pytest.raises(OSError, match="disk gone"):
        list(loader())


def test_fluid_fit_a_line_through_from_generator_matches_manual_feeds():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(32, 13)).astype("float32")
    ys = (xs @ rng.normal(size=(13, 1))).astype("float32")

    def train(use_loader):
        paddle.seed(5)
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data(name="x", shape=[None, 13], dtype="float32")
            y = fluid.data(name="y", shape=[None, 1], dtype="float32")
            loss = fluid.layers.mean(fluid.layers.square_error_cost(
                input=fluid.layers.fc(input=x, size=1), label=y))
            fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            if use_loader:
                loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2)
                loader.set_sample_list_generator(
                    paddle.batch(lambda: zip(xs, ys), batch_size=8), places=fluid.CPUPlace())
                feeds = [f for _ in range(3) for f in loader()]
            else:
                feeds = [{"x": xs[s:s + 8], "y": ys[s:s + 8]} for _ in range(3)
                         for s in range(0, 32, 8)]
            return [float(np.asarray(exe.run(main, feed=f, fetch_list=[loss])[0]).ravel()[0])
                    for f in feeds]
    a, b = train(True), train(False)
    assert a == b and a[-1] < 0.5 * a[0]


# ----------------------------------------------------------------------------- prefetch measure
class SpinBatches(Dataset):
    """Item i is a whole batch whose making costs `ms` of CPU in the loader."""

    def __init__(self, n, ms):
        self.n, self.ms = n, ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < self.ms / 1e3:
            pass
        rng = np.random.default_rng(i)
        return rng.standard_normal((64, 64)).astype("float32"), rng.integers(0, 10, (64, 1))


@pytest.mark.slow
def test_prefetch_keeps_the_executor_busy(record_property):
    """Issue 10 item 3's measure: a 2 ms/batch loader (one worker process, prefetching)
    behind a ~2-3 ms/step model reaches >= 0.8 of the step rate of pre-loaded data. The
    model runs on one thread (its own core; the loader worker has the other of a 2-core
    machine: a CPU-bound loader and a model on both cores would just share them), in a
    subprocess so its BLAS takes that setting. The ratio is reported always, asserted
    only with NUMBAFLOW_STRICT_TIMING=1 (a quiet machine with >= 2 free cores; measured
    0.93 there)."""
    out = run_script("prefetch_rate", TESTS, TESTS / "io", timeout=600, NUMBA_NUM_THREADS="1",
                     OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    step_ms, ratio = (float(v) for v in out.stdout.split()[-2:])
    record_property("prefetch_ratio", round(ratio, 3))
    print(f"\nstep {step_ms:.2f} ms; loader/pre-loaded step rate = {ratio:.2f}")
    assert step_ms > 0 and ratio > 0
    if os.environ.get("NUMBAFLOW_STRICT_TIMING") == "1":
        assert ratio >= 0.8


def test_thread_workers_where_fork_is_missing(xy, monkeypatch):
    """Without fork (not Linux) the workers are threads: same batches, same errors, and
    get_worker_info stays None in the main thread."""
    from numbaflow.io import _workers
    monkeypatch.setattr(_workers, "_context", lambda: None)
    main, x, y = xy
    loader = DataLoader(ArrayDataset(), feed_list=[x, y], batch_size=5, num_workers=2,
                        return_list=False)
    got = list(loader)
    for feed, (bx, _) in zip(got, expected_batches(list(range(N)), 5)):
        np.testing.assert_array_equal(feed["x"], bx)
    rows = sorted(int(v) for f in DataLoader(ShardedStream(), feed_list=[x, y], batch_size=4,
                                             num_workers=2, return_list=False)
                  for v in f["x"][:, 0] // D_IN)
    assert rows == list(range(N))
    assert get_worker_info() is None
    with pytest.raises(KeyError, match="sample 13"):
        list(DataLoader(FailingDataset(), batch_size=4, num_workers=2))


class EndlessStream(IterableDataset):
    def __iter__(self):
        i = 0
        while True:
            yield XS[i % N], YS[i % N]
            i += 1


@pytest.mark.parametrize("num_workers", [0, 2])
def test_endless_stream_is_read_only_as_far_as_consumed(num_workers):
    """A fast IterableDataset waits for the consumer (bounded queues), and leaving stops it."""
    import itertools
    loader = DataLoader(EndlessStream(), batch_size=4, num_workers=num_workers)
    it = iter(loader)
    batches = list(itertools.islice(it, 5))
    assert [b[0].shape for b in batches] == [(4, D_IN)] * 5
    it.close()
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []
