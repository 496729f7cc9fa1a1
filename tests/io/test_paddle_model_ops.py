"""Issue 28's ops against real Paddle 2.6.2 (tests/fixtures/paddle/model_ops/, written by
make_model_ops_fixtures.py): each case's output and input gradient equal Paddle's, and a
model Paddle saved with adaptive pooling, conv2d_transpose, interpolate and conv1d loads
with `load_inference_model` and gives Paddle's output."""
import os
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = os.path.join(str(TESTS), "fixtures", "paddle")
sys.path.insert(0, HERE)
from make_model_ops_fixtures import CASES  # noqa: E402

DATA = np.load(os.path.join(HERE, "model_ops", "cases.npz"))


@pytest.mark.parametrize("cid", sorted(CASES))
def test_function_matches_paddle(cid):
    fn, shape, kw = CASES[cid]
    x, w = DATA[f"{cid}/x"], DATA[f"{cid}/w"]
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        xv = static.data("x", list(shape), "float32")
        xv.stop_gradient = False
        out = getattr(F, fn)(xv, **kw)
        wv = static.data("w", list(w.shape), "float32")
        dx, = static.gradients(paddle.sum(out * wv), [xv])
    got, gdx = static.Executor(paddle.CPUPlace()).run(main, feed={"x": x, "w": w},
                                                       fetch_list=[out, dx])
    np.testing.assert_allclose(got, DATA[f"{cid}/out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gdx, DATA[f"{cid}/dx"], rtol=1e-5, atol=1e-5)


def test_paddle_saved_model_loads_and_runs():
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(
        os.path.join(HERE, "model_ops", "infer"), exe)
    types = {op.type for op in program.global_block().ops}
    assert {"pool2d", "conv2d_transpose", "bilinear_interp_v2", "nearest_interp_v2",
            "group_norm", "instance_norm", "pad3d", "hard_swish"} <= types
    d = np.load(os.path.join(HERE, "model_ops", "data.npz"))
    got, = exe.run(program, feed={feeds[0]: d["x"]}, fetch_list=fetches)
    np.testing.assert_allclose(got, d["out"], rtol=1e-5, atol=1e-5)
