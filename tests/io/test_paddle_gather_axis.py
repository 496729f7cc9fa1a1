"""A Paddle 2.6.2-saved program whose gather takes its axis as the `Axis` input (written by
`paddle.gather(x, index, axis=paddle.full([1], 1, "int64"))`: a fill_constant feeding
Axis; issue 28 item 7) loads with the axis folded into the attribute and gives Paddle's
outputs (tests/fixtures/paddle/make_fixtures.py gather_axis). Without the fill_constant
it is refused: test_paddle_model_files.py::test_axis_tensor_not_made_by_a_constant_is_refused."""
import os

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

PREFIX = os.path.join(str(TESTS), "fixtures", "paddle", "gather_axis", "infer")


def test_gather_with_an_axis_input_loads_and_gives_paddles_output():
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(PREFIX, exe)
    gather, = [op for op in program.global_block().ops if op.type == "gather"]
    assert gather.attrs["axis"] == 1 and "Axis" not in gather.inputs
    d = np.load(PREFIX[:-len("infer")] + "data.npz")
    got, = exe.run(program, feed={feeds[0]: d["x"]}, fetch_list=fetches)
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got, d["out"], rtol=1e-6, atol=1e-7)

