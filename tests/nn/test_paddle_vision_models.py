"""Paddle-saved models (issue 28 item 5) both ways, against real Paddle 2.6
(tests/fixtures/make_paddle_vision.py and make_numbaflow_exports.py write the fixtures):
a narrow resnet18 (resnet18's structure of paddle.vision BasicBlocks at widths 8..64;
the full one is 45 MB) and paddle.vision's mobilenet_v2(scale=0.25) (its is_test dropout
has no Mask output, as in every Paddle export) load with `load_inference_model` and give
Paddle's outputs; numbaflow's `format="paddle"` export of each, and of the conv1d /
interpolate / group_norm model of tests/fixtures/paddle/model_ops/, is the one real Paddle
read back, with outputs equal to Paddle's own."""
import os
import pathlib
import sys

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = TESTS / "fixtures" / "paddle_vision"
sys.path.insert(0, str(HERE.parent))
from make_numbaflow_exports import export  # noqa: E402
from make_paddle_vision import MODELS, READBACK  # noqa: E402


@pytest.mark.parametrize("name", sorted(MODELS))
def test_paddle_saved_model_gives_paddles_output(name):
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(str(HERE / name), exe)
    types = {op.type for op in program.global_block().ops}
    assert {"conv2d", "batch_norm", "pool2d", "matmul_v2"} <= types
    data = np.load(HERE / f"{name}.npz")
    got, = exe.run(program, feed={feeds[0]: data["x"]}, fetch_list=fetches)
    scale = np.abs(data["out"]).max()
    np.testing.assert_allclose(got, data["out"], rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("name", sorted(READBACK))
def test_paddle_reads_numbaflows_export_back_with_equal_outputs(name, tmp_path):
    paddles, data = READBACK[name]
    # the export Paddle read back (its output recorded by Paddle) is today's export
    export(paddles, os.path.join(tmp_path, "m"))
    assert (tmp_path / "m.pdmodel").read_bytes() == \
        (HERE / f"numbaflow_{name}.pdmodel").read_bytes()
    assert (tmp_path / "m.pdiparams").read_bytes() == \
        pathlib.Path(paddles + ".pdiparams").read_bytes()
    np.testing.assert_array_equal(np.load(HERE / f"numbaflow_{name}.npz")["out"],
                                  np.load(data)["out"])
