"""The first mistakes of a newcomer from Paddle 2.x (issue 18), one row each: the error
names what was given, what was expected and the fix."""
import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.utils import unique_name
from numbaflow.utils.hints import StaticGraphOnlyError


def _net():
    paddle.seed(0)
    main, startup = static.Program(), static.Program()
    with unique_name.guard(), static.program_guard(main, startup):
        x = static.data(name="image", shape=[None, 4], dtype="float32")
        loss = paddle.mean(static.nn.fc(x, size=2))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    scope = static.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, loss


FEED = {"image": np.ones((3, 4), np.float32)}


def run_without_program(main, exe, scope, loss):
    exe.run(feed=FEED, fetch_list=[loss], scope=scope)


def fetch_by_python_name(main, exe, scope, loss):
    exe.run(main, feed=FEED, fetch_list=["loss"], scope=scope)


def fc_with_act(main, exe, scope, loss):
    with static.program_guard(static.Program(), static.Program()):
        static.nn.fc(static.data(name="x", shape=[None, 4], dtype="float32"), size=2,
                     act="relu")


def two_place_feed_to_plain_program(main, exe, scope, loss):
    exe.run(main, feed=[FEED, FEED], fetch_list=[loss], scope=scope)


def feed_of_wrong_type(main, exe, scope, loss):
    exe.run(main, feed=np.ones((3, 4), np.float32), fetch_list=[loss], scope=scope)


def list_of_arrays_feed(main, exe, scope, loss):
    # what a DataLoader with return_list=True yields
    exe.run(main, feed=[np.ones((3, 4), np.float32)], fetch_list=[loss], scope=scope)


def to_tensor(*_):
    paddle.to_tensor(np.ones(3))


def nn_conv3d_transpose(*_):
    paddle.nn.Conv3DTranspose(3, 4, 3)


def loss_backward(main, exe, scope, loss):
    loss.backward()


def var_numpy(main, exe, scope, loss):
    loss.numpy()


# (mistake, error type, what was given, what was expected, the fix)
ROWS = [
    (run_without_program, ValueError, "but no program", "has no variable 'image'",
     "exe.run(main, feed=..."),
    (fetch_by_python_name, ValueError, "no variable named 'loss'",
     "Variables the layers returned", "fetch_list=[loss]"),
    (fc_with_act, TypeError, "act='relu'", "names it activation", "activation='relu'"),
    (two_place_feed_to_plain_program, TypeError, "list of 2 dicts", "takes one dict",
     "with_data_parallel(loss_name=loss.name"),
    (feed_of_wrong_type, TypeError, "got ndarray", "feed must be a dict",
     "feed={'x': x_array}"),
    (list_of_arrays_feed, TypeError, "list of 1 arrays", "takes a dict {name: array}",
     "return_list=False"),
    (to_tensor, StaticGraphOnlyError, "numbaflow.to_tensor does not exist",
     "static-graph only", "static.data(name='x'"),
    (nn_conv3d_transpose, AttributeError, "numbaflow.nn.Conv3DTranspose is Paddle 2.6's",
     "not implemented in numbaflow yet", "the closest supported layer: Conv2DTranspose"),
    (loss_backward, StaticGraphOnlyError, "Variable.backward does not exist",
     "static-graph only", "optimizer.minimize(loss)"),
    (var_numpy, StaticGraphOnlyError, "Variable.numpy does not exist", "static-graph only",
     "fetch_list=[var]"),
]


@pytest.mark.parametrize("mistake, error, given, expected, fix", ROWS,
                         ids=[r[0].__name__ for r in ROWS])
def test_the_message_names_what_was_given_expected_and_the_fix(mistake, error, given,
                                                                expected, fix):
    with pytest.raises(error) as info:
        mistake(*_net())
    msg = str(info.value)
    for part in (given, expected, fix):
        assert part in msg, f"{part!r} not in: {msg}"
    assert "Traceback" not in msg and "AttributeError" not in msg


def test_a_one_element_list_of_feed_dicts_runs_as_paddle_runs_it():
    # Paddle's Executor takes [feed_dict] for a plain program (a 1-place DataLoader's item)
    main, exe, scope, loss = _net()
    (listed,) = exe.run(main, feed=[FEED], fetch_list=[loss], scope=scope)
    main2, exe2, scope2, loss2 = _net()
    (plain,) = exe2.run(main2, feed=FEED, fetch_list=[loss2], scope=scope2)
    np.testing.assert_array_equal(listed, plain)


def test_dygraph_names_are_attribute_errors_so_hasattr_stays_false():
    assert not hasattr(paddle, "to_tensor") and not hasattr(paddle.nn, "Conv3DTranspose")
    with pytest.raises(AttributeError, match="module 'numbaflow' has no attribute 'nope'"):
        paddle.nope
    _, _, _, loss = _net()
    assert not hasattr(loss, "backward")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        loss.nope
