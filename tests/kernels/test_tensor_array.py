"""Tensor arrays as run-time values (issue 29 item 6): write_to_array, read_from_array and
lod_array_length under paddle.tensor.array_* / fluid.layers.array_*, checked against
numpy: Paddle's documented examples, run-time indexes, per-step outputs collected in a
while_loop (the array lives across iterations, starts empty each run), fetching an
array (a list of numpy arrays), and the typed refusals."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static
from numbaflow.graph.serialize import program_from_dict, program_to_dict

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
T = paddle.tensor


def run(main, feed=None, fetch=()):
    return static.Executor(paddle.CPUPlace()).run(main, feed=feed or {}, fetch_list=list(fetch))


@pytest.mark.parametrize("ns", [T, fluid.layers], ids=["paddle.tensor", "fluid.layers"])
def test_paddle_doc_example_write_read_length(ns):
    """Paddle's array_write docstring: writing at 10 makes an array of 11."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        tmp = fluid.layers.fill_constant(shape=[3, 2], dtype="int64", value=5)
        i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=10)
        arr = ns.array_write(tmp, i=i)
        item = ns.array_read(arr, i=i)
        n = ns.array_length(arr)
    assert arr.is_tensor_array and arr.name
    got_item, got_n, got_arr = run(main, fetch=[item, n, arr])
    np.testing.assert_array_equal(got_item, np.full((3, 2), 5))
    assert got_n.tolist() == [11] and got_n.dtype == np.int64
    assert isinstance(got_arr, list) and len(got_arr) == 11
    assert all(a.size == 0 for a in got_arr[:10])
    np.testing.assert_array_equal(got_arr[10], np.full((3, 2), 5))


def test_run_time_index_and_initialized_list():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 2], "float32")
        j = static.data("j", [1], "int64")
        arr = T.create_array("float32", [x, x * 2.0])
        T.array_write(x * 3.0, 2, arr)
        picked = T.array_read(arr, j)
        total = T.array_read(arr, 0) + T.array_read(arr, 1)
    xv = np.arange(6, dtype="float32").reshape(3, 2)
    for k in range(3):
        got, got_total = run(main, {"x": xv, "j": np.array([k])}, [picked, total])
        np.testing.assert_allclose(got, xv * (k + 1))
        np.testing.assert_allclose(got_total, xv * 3)


def test_while_loop_collects_per_step_outputs():
    """The body writes step i's value at index i; after the loop the array holds every
    step (numpy: repeated doubling), and the next run starts from an empty array."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2, 3], "float32")
        n = static.data("n", [1], "int64")
        arr = T.create_array("float32")
        i = paddle.full([1], 0, "int64")

        def body(i, h):
            h = h * 2.0 + 1.0
            T.array_write(h, i, arr)
            return [i + 1, h]
        i, h = static.nn.while_loop(lambda i, h: i < n, body, [i, x])
        last = T.array_read(arr, i - 1)
        length = T.array_length(arr)
    xv = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    for steps in (4, 2):
        got_arr, got_last, got_len = run(main, {"x": xv, "n": np.array([steps])},
                                         [arr, last, length])
        want, h = [], xv.astype(np.float64)
        for _ in range(steps):
            h = h * 2.0 + 1.0
            want.append(h)
        assert got_len.tolist() == [steps] and len(got_arr) == steps
        for g, w in zip(got_arr, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
        np.testing.assert_allclose(got_last, want[-1], rtol=1e-6)


def test_array_as_loop_variable_read_in_the_body():
    """Paddle's spelling with the array as a loop variable; the body reads the previous
    element (a running sum: a[k] = a[k-1] + k)."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        zero = paddle.full([1], 0.0, "float32")
        arr = T.array_write(zero, 0)
        i = paddle.full([1], 1, "int64")
        ten = paddle.full([1], 5, "int64")

        def body(i, a):
            prev = T.array_read(a, i - 1)
            T.array_write(prev + paddle.cast(i, "float32"), i, a)
            return [i + 1, a]
        i, arr2 = static.nn.while_loop(lambda i, a: i < ten, body, [i, arr])
    assert arr2 is arr
    (got,) = run(main, fetch=[arr])
    assert [float(a[0]) for a in got] == [0.0, 1.0, 3.0, 6.0, 10.0]


def test_read_out_of_range_and_bad_arguments():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        arr = T.array_write(paddle.ones([2]), 1)
        j = static.data("j", [1], "int64")
        item = T.array_read(arr, j)
        with pytest.raises(TypeError, match="tensor array"):
            T.array_read(paddle.ones([2]), 0)
        with pytest.raises(TypeError, match="int64 Variable of shape"):
            T.array_write(paddle.ones([2]), paddle.ones([2]), arr)
        with pytest.raises(TypeError, match="cast x"):
            T.array_write(paddle.ones([2], "int64"), 0, arr)
    with pytest.raises(IndexError, match="index 5 is outside the array, which holds 2"):
        run(main, {"j": np.array([5])}, [item])


def test_program_round_trip_and_clone_keep_arrays():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        arr = T.array_write(paddle.full([2], 3.0), 0)
        n = T.array_length(arr)
    for copy in (program_from_dict(program_to_dict(main)), main.clone()):
        assert copy.global_block().var(arr.name).is_tensor_array
        assert run(copy, fetch=[n.name])[0].tolist() == [1]
