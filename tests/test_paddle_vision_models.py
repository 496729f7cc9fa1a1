"""Paddle-saved vision models (issue 28 item 5) both ways, against real Paddle 2.6
(tests/fixtures/make_paddle_vision.py and make_numbaflow_exports.py write the fixtures):
a narrow resnet18 (resnet18's structure of paddle.vision BasicBlocks at widths 8..64;
the full one is 45 MB) and paddle.vision's mobilenet_v2(scale=0.25) load with
`load_inference_model` and give Paddle's outputs; numbaflow's `format="paddle"` export of
each is the one real Paddle read back with equal outputs."""
import os
import pathlib
import sys

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = pathlib.Path(__file__).parent / "fixtures" / "paddle_vision"
sys.path.insert(0, str(HERE.parent))
from make_numbaflow_exports import export  # noqa: E402
from make_paddle_vision import MODELS  # noqa: E402


@pytest.mark.parametrize("name", sorted(MODELS))
def test_paddle_saved_model_gives_paddles_output_and_exports_back(name, tmp_path):
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(str(HERE / name), exe)
    types = {op.type for op in program.global_block().ops}
    assert {"conv2d", "batch_norm", "pool2d", "matmul_v2"} <= types
    data = np.load(HERE / f"{name}.npz")
    got, = exe.run(program, feed={feeds[0]: data["x"]}, fetch_list=fetches)
    scale = np.abs(data["out"]).max()
    np.testing.assert_allclose(got, data["out"], rtol=1e-5, atol=1e-6 * scale)

    # the export Paddle read back (its output recorded by Paddle) is today's export
    export(name, os.path.join(tmp_path, "m"))
    assert (tmp_path / "m.pdmodel").read_bytes() == \
        (HERE / f"numbaflow_{name}.pdmodel").read_bytes()
    assert (tmp_path / "m.pdiparams").read_bytes() == (HERE / f"{name}.pdiparams").read_bytes()
    np.testing.assert_array_equal(np.load(HERE / f"numbaflow_{name}.npz")["out"], data["out"])
