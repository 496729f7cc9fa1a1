"""paddle.batch, paddle.reader / fluid.io reader decorators and fluid.DataFeeder."""
import random
import time

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.fixture
def programs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        yield main, startup


def counting(n, tuples=True):
    def reader():
        for i in range(n):
            yield (i, -i) if tuples else i
    return reader


# ----------------------------------------------------------------------------- decorators
def test_batch_sizes_and_drop_last():
    assert paddle.batch(counting(5, False), 2)() is not None
    assert list(paddle.batch(counting(5, False), 2)()) == [[0, 1], [2, 3], [4]]
    assert list(paddle.batch(counting(5, False), 2, drop_last=True)()) == [[0, 1], [2, 3]]
    assert list(fluid.io.batch(counting(4, False), 4)()) == [[0, 1, 2, 3]]
    r = paddle.batch(counting(3, False), 2)
    assert list(r()) == list(r())            # a reader creator: every call starts over


@pytest.mark.parametrize("bad, err", [(0, ValueError), (-3, ValueError), (2.5, TypeError),
                                      (True, TypeError)])
def test_batch_bad_size(bad, err):
    with pytest.raises(err, match="batch_size"):
        paddle.batch(counting(3), bad)


def test_batch_refuses_a_generator_object():
    with pytest.raises(TypeError, match="pass the function"):
        paddle.batch(counting(3)(), 2)


def test_shuffle_is_a_permutation_within_windows():
    random.seed(7)
    out = list(paddle.reader.shuffle(counting(10, False), 4)())
    assert sorted(out[:4]) == [0, 1, 2, 3] and sorted(out[4:8]) == [4, 5, 6, 7]
    assert sorted(out[8:]) == [8, 9]
    random.seed(7)
    assert list(fluid.io.shuffle(counting(10, False), 4)()) == out    # seeded: reproducible
    random.seed(1)
    big = list(paddle.reader.shuffle(counting(200, False), 200)())
    assert sorted(big) == list(range(200)) and big != list(range(200))


def test_chain_compose_map():
    a, b = counting(3, False), counting(2, False)
    assert list(fluid.io.chain(a, b)()) == [0, 1, 2, 0, 1]
    assert list(fluid.io.compose(counting(2), counting(2, False))()) == [(0, 0, 0), (1, -1, 1)]
    with pytest.raises(fluid.io.ComposeNotAligned if hasattr(fluid.io, "ComposeNotAligned")
                       else ValueError, match="different numbers"):
        list(fluid.io.compose(a, b)())
    assert list(fluid.io.compose(a, b, check_alignment=False)()) == [(0, 0), (1, 1)]
    assert list(fluid.io.map_readers(lambda x, y: x * 10 + y, a, a)()) == [0, 11, 22]
    assert list(fluid.io.firstn(a, 2)()) == [0, 1]
    c = fluid.io.cache(a)
    assert list(c()) == list(c()) == [0, 1, 2]


def test_buffered_keeps_order_and_reraises():
    assert list(fluid.io.buffered(counting(50, False), 4)()) == list(range(50))

    def broken():
        yield 1
        raise KeyError("bad sample 2")
    it = fluid.io.buffered(broken, 2)()
    assert next(it) == 1
    with pytest.raises(KeyError, match="bad sample 2"):
        next(it)


def test_buffered_consumer_may_stop_early():
    # the producer thread must notice the consumer left (no thread stuck on a full queue)
    import threading
    before = threading.active_count()
    it = fluid.io.buffered(counting(10 ** 6, False), 2)()
    assert next(it) == 0
    it.close()
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before


@pytest.mark.parametrize("order", [True, False])
def test_xmap_readers(order):
    def slow_square(x):
        time.sleep(0.001 * (x % 3))
        return x * x
    out = list(fluid.io.xmap_readers(slow_square, counting(40, False), 4, 8, order=order)())
    expect = [i * i for i in range(40)]
    assert (out == expect) if order else (sorted(out) == expect)


def test_xmap_reraises_mapper_error():
    def mapper(x):
        if x == 5:
            raise ZeroDivisionError("sample 5")
        return x
    with pytest.raises(ZeroDivisionError, match="sample 5"):
        list(fluid.io.xmap_readers(mapper, counting(100, False), 3, 4)())


# ----------------------------------------------------------------------------- DataFeeder
def test_data_feeder_stacks_casts_and_reshapes(programs):
    x = fluid.layers.data(name="x", shape=[2, 3], dtype="float32")      # (-1, 2, 3)
    y = fluid.layers.data(name="y", shape=[1], dtype="int64")           # (-1, 1)
    feeder = fluid.DataFeeder(feed_list=[x, "y"], place=fluid.CPUPlace())
    samples = [(np.arange(6) + 10 * i, i) for i in range(4)]            # flat x, scalar y
    feed = feeder.feed(samples)
    expect_x = np.stack([np.arange(6) + 10 * i for i in range(4)]).reshape(4, 2, 3)
    assert feed["x"].dtype == np.float32 and feed["x"].shape == (4, 2, 3)
    np.testing.assert_array_equal(feed["x"], expect_x.astype("float32"))
    assert feed["y"].dtype == np.int64 and feed["y"].shape == (4, 1)
    np.testing.assert_array_equal(feed["y"][:, 0], np.arange(4))


def test_data_feeder_errors(programs):
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    feeder = fluid.DataFeeder([x, y], fluid.CPUPlace())
    with pytest.raises(ValueError, match="sample #1 has 1 field; expected a tuple of 2"):
        feeder.feed([(np.zeros(3), 1.0), (np.zeros(3),)])
    with pytest.raises(ValueError, match="'x' is declared with shape"):
        feeder.feed([(np.zeros(4), 1.0)])
    with pytest.raises(ValueError, match="empty"):
        feeder.feed([])
    with pytest.raises(ValueError, match="no variable 'z'"):
        fluid.DataFeeder(["z"], fluid.CPUPlace())
    with pytest.raises(TypeError, match="list of Variables"):
        fluid.DataFeeder(x, fluid.CPUPlace())


def test_feed_parallel_splits_evenly(programs):
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    feeder = fluid.DataFeeder([x], fluid.CPUPlace())
    samples = [(np.full(2, i),) for i in range(5)]
    parts = feeder.feed_parallel(samples, num_places=2)
    assert [p["x"].shape[0] for p in parts] == [3, 2]
    np.testing.assert_array_equal(np.concatenate([p["x"] for p in parts])[:, 0], np.arange(5))
    dec = feeder.decorate_reader(paddle.batch(lambda: iter(samples), 4), multi_devices=True,
                                 num_places=2)
    assert [[p["x"].shape[0] for p in b] for b in dec()] == [[2, 2]]   # the batch of 1 dropped


def test_fit_a_line_fed_by_batch_and_feeder_matches_direct_feed():
    """paddle.batch + DataFeeder train exactly as hand-stacked numpy feeds do."""
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(40, 13)).astype("float32")
    ys = (xs @ rng.normal(size=(13, 1)) + 0.5).astype("float32")

    def reader():
        for i in range(len(xs)):
            yield xs[i], ys[i]

    def train(use_feeder):
        paddle.seed(11)                                           # same initial parameters
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.layers.data(name="x", shape=[13], dtype="float32")
            y = fluid.layers.data(name="y", shape=[1], dtype="float32")
            pred = fluid.layers.fc(input=x, size=1)
            loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
            fluid.optimizer.SGD(learning_rate=0.05).minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.Scope()
        losses = []
        with fluid.scope_guard(scope):
            exe.run(startup)
            start = {p.name: np.array(scope.find_var(p.name).get_tensor())
                     for p in main.all_parameters()}
            feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace(), program=main)
            for _ in range(3):
                if use_feeder:
                    feeds = [feeder.feed(mb) for mb in paddle.batch(reader, 8)()]
                else:
                    feeds = [{"x": xs[i:i + 8], "y": ys[i:i + 8]} for i in range(0, 40, 8)]
                for f in feeds:
                    losses.append(float(np.asarray(
                        exe.run(main, feed=f, fetch_list=[loss])[0]).reshape(-1)[0]))
        return start, losses

    start_a, a = train(True)
    start_b, b = train(False)
    for k in start_a:
        np.testing.assert_array_equal(start_a[k], start_b[k])    # same seeded initial state
    np.testing.assert_array_equal(a, b)
    assert a[-1] < 0.5 * a[0]
