"""Issue 32's two small mistakes: a second minimize of one loss warns (it doubles every
update, Paddle says nothing) and a fetch of another program's Variable says so."""
import warnings

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def _net():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data('x', [None, 3])
        loss = paddle.mean(static.nn.fc(x, 1))
    return main, startup, loss


def test_second_minimize_of_one_loss_warns_and_says_how_to_mean_it():
    main, startup, loss = _net()
    with static.program_guard(main, startup):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            paddle.optimizer.SGD(0.1).minimize(loss)       # the first: silent
        with pytest.warns(paddle.optimizer.MinimizeTwiceWarning,
                          match="update the parameters twice") as w:
            paddle.optimizer.SGD(0.1).minimize(loss)
    assert w[0].filename == __file__        # points at the user's line
    assert "simplefilter('ignore'" in str(w[0].message)
    updates = [op for op in main.global_block().ops if op.type == "sgd"]
    assert len(updates) == 4                # still Paddle's behaviour: both applied


def test_minimize_of_two_losses_is_silent():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data('x', [None, 3])
        a = paddle.mean(static.nn.fc(x, 1))
        b = paddle.mean(static.nn.fc(x, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            paddle.optimizer.SGD(0.1).minimize(a)
            paddle.optimizer.SGD(0.1).minimize(b)


def test_fetch_of_another_programs_variable_says_so():
    main, startup, loss = _net()
    other, other_startup = static.Program(), static.Program()
    with static.program_guard(other, other_startup):
        x = static.data('x', [None, 3])
        paddle.mean(x * 2.0)
    exe = static.Executor(paddle.CPUPlace())
    with pytest.raises(ValueError, match="belongs to another program") as e:
        exe.run(other, feed={'x': np.ones((2, 3), 'float32')}, fetch_list=[loss])
    assert "@GRAD" not in str(e.value)
    # the usual pattern stays: main's Variable fetched from its clone (same name)
    exe.run(startup)
    test = main.clone(for_test=True)
    (v,) = exe.run(test, feed={'x': np.ones((2, 3), 'float32')}, fetch_list=[loss])
    assert np.isfinite(v)
