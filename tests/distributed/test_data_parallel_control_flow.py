"""Data parallelism over programs with control flow (issue 29 item 4): a model with a
`cond` (each branch taken in turn) and a `while_loop` whose gradient is taken trains on 2
CPU places (threads) as on one device with the whole batch: the same parameters after
each step, per-place losses averaging to the single-device loss. (Each place keeps its
own record of the loop's iterations for `while_grad`; they were shared, and the places
overwrote each other's.)"""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def model(threshold):
    """fc -> cond on the mean of the fc weight (the same on every place: a cond on batch
    statistics would decide per place) -> a 3-step while_loop -> squared loss."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3], "float32")
        h = static.nn.fc(x, 4)
        w = main.global_block().var("fc_0.w_0")
        y = static.nn.cond(paddle.mean(w) > threshold, lambda: h * 2.0,
                           lambda: paddle.exp(h * 0.5))
        z, _ = static.nn.while_loop(lambda z, n: n < 3,
                                    lambda z, n: [paddle.tanh(z) * 0.9 + 0.5, n + 1],
                                    [y, paddle.full([1], 0, "int64")])
        loss = paddle.mean(z * z)
        paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("threshold", [
    -100.0, pytest.param(100.0, marks=pytest.mark.slow)], ids=["true_branch", "false_branch"])
def test_cond_and_while_train_on_two_places_as_on_one(threshold):
    main, startup, loss = model(threshold)
    exe = static.Executor(paddle.CPUPlace())
    one, two = static.Scope(), static.Scope()
    exe.run(startup, scope=one)
    for n in one.local_var_names():
        two.set(n, one.get(n))
    compiled = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=[paddle.CPUPlace()] * 2)
    rng = np.random.default_rng(0)
    for _ in range(3):
        feed = {"x": rng.normal(size=(6, 3)).astype("float32")}
        single, = exe.run(main, feed=feed, fetch_list=[loss], scope=one)
        per_place, = exe.run(compiled, feed=feed, fetch_list=[loss], scope=two)
        assert per_place.shape == (2,)
        np.testing.assert_allclose(per_place.mean(), single, rtol=1e-5)
        for p in main.all_parameters():
            np.testing.assert_allclose(two.get(p.name), one.get(p.name), rtol=1e-5,
                                       atol=1e-7, err_msg=p.name)
