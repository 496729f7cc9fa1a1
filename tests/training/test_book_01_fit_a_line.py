"""PaddlePaddle book chapter 01 (fit_a_line), fluid 1.x spelling, on synthetic data of
uci_housing's shapes (13 features -> 1 price): fc regression trained with SGD, fed by
paddle.batch + fluid.DataFeeder; the loss falls and the saved inference model reloads."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
from book_util import check_inference_roundtrip, falls, train

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

TRUE_W = np.random.default_rng(1).uniform(-1, 1, 13).astype("float32")


def housing_reader(n=200, seed=0):
    def reader():
        rng = np.random.default_rng(seed)
        for _ in range(n):
            x = rng.uniform(-1, 1, 13).astype("float32")
            yield x, np.array([x @ TRUE_W + 0.5], "float32")
    return reader


def test_fit_a_line(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        avg_loss = fluid.layers.mean(cost)
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=0.05).minimize(avg_loss)
    scope = fluid.Scope()
    reader = paddle.reader.shuffle(housing_reader(), buf_size=500)
    losses, exe = train(main, startup, [x, y], reader, 20, avg_loss, 30, scope)
    ok, ends = falls(losses, factor=0.5)
    assert ok, ends
    xs = np.stack([s[0] for s in list(housing_reader(8, seed=5)())])
    got = check_inference_roundtrip(tmp_path, exe, scope, test_program, {"x": xs}, y_predict)
    # the trained line approaches the true one
    assert np.mean((got[:, 0] - (xs @ TRUE_W + 0.5)) ** 2) < np.mean((xs @ TRUE_W + 0.5) ** 2)
