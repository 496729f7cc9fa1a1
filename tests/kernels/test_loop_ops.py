"""The small ops Paddle programs use in loops (issue 29), through their API spellings:
paddle.shape (run-time shape, int32), paddle.increment / fluid.layers.increment (in place,
a while-loop counter), paddle.logical_not, paddle.floor_divide and `//` (Python's floor,
as Paddle 2.6), paddle.sin / cos; numpy references."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def run(main, feed=None, fetch=()):
    return static.Executor(paddle.CPUPlace()).run(main, feed=feed or {}, fetch_list=list(fetch))


def test_shape_is_the_run_time_shape():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 3], "float32")
        s = paddle.shape(x)
        rows = paddle.cast(s[0], "float32")
    assert s.dtype == np.int32 and s.shape == (2,)
    for n in (2, 5):
        got, got_rows = run(main, {"x": np.ones((n, 3), "float32")}, [s, rows])
        assert got.tolist() == [n, 3] and got.dtype == np.int32
        assert float(np.asarray(got_rows).reshape(-1)[0]) == n


@pytest.mark.parametrize("spell", ["paddle", "fluid"])
def test_increment_counts_a_while_loop(spell):
    inc = paddle.increment if spell == "paddle" else fluid.layers.increment
    main = static.Program()
    with static.program_guard(main, static.Program()):
        n = static.data("n", [1], "int64")
        i = paddle.full([1], 0, "int64")
        acc = paddle.full([1], 0.0, "float32")

        def body(i, acc):
            acc = acc + paddle.cast(i, "float32")
            return [inc(i, 1), acc]      # in place: the returned Variable is i
        i, acc = static.nn.while_loop(lambda i, acc: i < n, body, [i, acc])
    got_i, got_acc = run(main, {"n": np.array([5])}, [i, acc])
    assert got_i.tolist() == [5] and got_acc.tolist() == [10.0]


def test_increment_refuses_a_tensor():
    with static.program_guard(static.Program(), static.Program()):
        with pytest.raises(ValueError, match="one element"):
            paddle.increment(paddle.ones([3]))
        with pytest.raises(NotImplementedError, match="in_place"):
            fluid.layers.increment(paddle.ones([1]), 1.0, in_place=False)


def test_logical_not_floor_divide_sin_cos():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        a = static.data("a", [4], "int64")
        b = static.data("b", [4], "int64")
        x = static.data("x", [4], "float32")
        outs = [paddle.logical_not(a > 0), paddle.floor_divide(a, b), a // b,
                paddle.floor_divide(x, 2.0), paddle.sin(x), paddle.cos(x)]
    av, bv = np.array([-7, 7, -7, 7]), np.array([2, 2, -2, -2])
    xv = np.array([-7.5, -1.0, 0.5, 3.0], "float32")
    got = run(main, {"a": av, "b": bv, "x": xv}, outs)
    np.testing.assert_array_equal(got[0], ~(av > 0))
    assert got[1].tolist() == [-4, 3, 3, -4] == got[2].tolist()   # Paddle 2.6's numbers
    np.testing.assert_array_equal(got[3], np.floor(xv / 2.0))
    np.testing.assert_allclose(got[4], np.sin(xv.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(got[5], np.cos(xv.astype(np.float64)), rtol=1e-6)


def test_floor_divide_by_integer_zero_raises():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        a = static.data("a", [2], "int64")
        out = paddle.floor_divide(a, paddle.full([2], 0, "int64"))
    with pytest.raises(ZeroDivisionError):
        run(main, {"a": np.array([1, 2])}, [out])
