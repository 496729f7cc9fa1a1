"""`static.nn.cond` whose branches give an output different shapes or dtypes (Paddle's
select_input of any shapes; three of Paddle 2.6.2's documented examples do it, run in
tests/graph/test_paddle_examples.py): the output holds the taken branch's array, with its
shape and dtype, decided when the program runs; `case` / `switch_case` pass it through
their nested conds; an op reading it, or a gradient through it, is refused naming the fix.
References: the branches' values written out in numpy."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph.serialize import program_from_dict, program_to_dict

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def _build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [1], "float32")
        out = static.nn.cond(x < 1.0, lambda: paddle.full([1, 2], 7, "int32"),
                             lambda: paddle.reshape(paddle.tile(x, [3]), [3, 1]) * 2.0)
    return main, x, out


def test_each_run_gives_the_taken_branchs_shape_dtype_and_values():
    main, x, out = _build()
    assert out.runtime_shape and out.dtype == np.int32 and out.shape == (-1, -1)   # Paddle's
    exe = static.Executor(paddle.CPUPlace())
    for v in (0.5, 4.0, 0.25, 5.0):      # both ways, each twice, on one cached plan
        got, = exe.run(main, feed={"x": np.array([v], "float32")}, fetch_list=[out])
        want = np.full((1, 2), 7, np.int32) if v < 1.0 else np.full((3, 1), 2 * v, np.float32)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_switch_case_of_three_shapes_through_nested_conds():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        i = static.data("i", [1], "int64")
        out = static.nn.switch_case(i, {0: lambda: paddle.full([2], 1.0),
                                        1: lambda: paddle.full([2, 2], 2, "int64")},
                                    default=lambda: paddle.full([3], True, "bool"))
    exe = static.Executor(paddle.CPUPlace())
    wants = {0: np.full(2, 1.0, np.float32), 1: np.full((2, 2), 2, np.int64),
             5: np.full(3, True)}
    for k, want in wants.items():
        got, = exe.run(main, feed={"i": np.array([k])}, fetch_list=[out])
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_an_op_reading_it_is_refused_naming_the_fix():
    main, x, out = _build()
    with static.program_guard(main):
        total = paddle.sum(paddle.cast(out, "float32"))
    with pytest.raises(ValueError, match="different shapes.*static-shape.*cast, pad or reshape"):
        static.Executor(paddle.CPUPlace()).run(main, feed={"x": np.array([0.5], "float32")},
                                               fetch_list=[total])


def test_a_gradient_through_it_is_refused():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [2], "float32")
        x.stop_gradient = False
        out = static.nn.cond(paddle.mean(x) > 0.0, lambda: x * 2.0, lambda: x[:1] * 3.0)
        with pytest.raises(ValueError, match="no gradient flows through"):
            static.gradients(out, [x])


def test_the_mark_survives_clone_and_numbaflows_program_format():
    main, x, out = _build()
    for copy in (main.clone(), program_from_dict(program_to_dict(main))):
        y = copy.global_block().var(out.name)
        assert y.runtime_shape
        got, = static.Executor(paddle.CPUPlace()).run(
            copy, feed={"x": np.array([3.0], "float32")}, fetch_list=[y])
        np.testing.assert_array_equal(got, np.full((3, 1), 6.0, np.float32))
