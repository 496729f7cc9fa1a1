"""A while_loop body that returns a loop variable as it came, read by no op of the body
(found by dynamic_decode with a decoder whose next inputs are its inputs): the loop runs
and the variable keeps its value (it used to fail: the body's plan had nothing holding it)."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def test_loop_variable_returned_untouched_keeps_its_value():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        i, x, kept = static.nn.while_loop(
            lambda i, x, kept: i < 3, lambda i, x, kept: [i + 1, x * 2.0, kept],
            [paddle.full([1], 0, "int64"), paddle.full([2], 1.0), paddle.full([2], 7.0)])
    got = static.Executor(paddle.CPUPlace()).run(main, fetch_list=[i, x, kept])
    np.testing.assert_array_equal(got[0], [3])
    np.testing.assert_array_equal(got[1], [8.0, 8.0])
    np.testing.assert_array_equal(got[2], [7.0, 7.0])
