"""Paddle's XShape in training programs (tests/fixtures/paddle_shape_grads/, written by
tests/fixtures/make_paddle_shape_grads.py with real Paddle 2.6.2): reshape2_grad, squeeze2_grad,
unsqueeze2_grad, flatten_contiguous_range_grad and transpose2_grad read XShape, where
numbaflow's gradient ops read X (transpose2's gradient is a transpose2). A Paddle-saved
program with all five loads and gives Paddle's values and gradient; numbaflow's own
program, written with format="paddle", ran in Paddle with the same values (readback.npz);
and the same program built with numbaflow computes them too."""
import os
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.formats import paddle_xshape
from numbaflow.graph.serialize import FileFormatError
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = os.path.join(str(TESTS), "fixtures")
sys.path.insert(0, HERE)
from make_paddle_shape_grads import FETCHES, build, feed  # noqa: E402

DIR = os.path.join(HERE, "paddle_shape_grads")
DATA = np.load(os.path.join(DIR, "data.npz"))


def _check(got, want, rtol=1e-6):
    for name, value in zip(FETCHES, got):
        np.testing.assert_allclose(value, want[name], rtol=rtol, atol=1e-6, err_msg=name)


def test_paddle_saved_gradient_program_with_xshape_loads_with_paddles_values():
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(os.path.join(DIR, "paddle"), exe)
    types = [op.type for op in program.global_block().ops]
    for t in ("reshape2_grad", "squeeze2_grad", "unsqueeze2_grad",
              "flatten_contiguous_range_grad"):
        assert t in types
    assert "transpose2_grad" not in types and types.count("transpose2") == 2
    _check(exe.run(program, feed={feeds[0]: DATA["x"]}, fetch_list=fetches), DATA)


def test_numbaflows_export_of_it_ran_in_paddle_with_the_same_values():
    """readback.npz: real Paddle ran numbaflow's format="paddle" file (step 3 of the fixture
    script); here: that file declares an XShape for every forward op and its grad op reads
    it, and it loads back in numbaflow too."""
    _check([np.load(os.path.join(DIR, "readback.npz"))[k] for k in FETCHES], DATA)
    from numbaflow.formats.paddle_model import parse_program_desc
    with open(os.path.join(DIR, "numbaflow.pdmodel"), "rb") as f:
        ops = parse_program_desc(f.read(), "numbaflow.pdmodel").blocks[0].ops
    slots = {op.type: ({v.parameter for v in op.inputs}, {v.parameter for v in op.outputs})
             for op in ops}
    for t in ("reshape2", "squeeze2", "unsqueeze2", "flatten_contiguous_range", "transpose2"):
        assert "XShape" in slots[t][1], t
    for t in ("reshape2_grad", "squeeze2_grad", "unsqueeze2_grad",
              "flatten_contiguous_range_grad"):
        assert slots[t][0] == {"XShape", "Out@GRAD"}, t
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(      # (the same parameters)
        DIR, exe, model_filename="numbaflow.pdmodel", params_filename="paddle.pdiparams")
    _check(exe.run(program, feed={feeds[0]: DATA["x"]}, fetch_list=fetches), DATA)


def test_numbaflow_builds_the_same_program_with_paddles_values():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3, 1, 4], "float32")
        x.stop_gradient = False
        fetch = build(paddle, x)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    np.testing.assert_array_equal(DATA["x"], feed())
    _check(exe.run(main, feed={"x": DATA["x"]}, fetch_list=fetch), DATA)


def test_an_xshape_with_no_known_input_is_refused_by_name():
    from numbaflow.formats import paddle_proto as pp
    op = pp.ProgramDesc().blocks.add().ops.add(type="reshape2_grad")
    op.inputs.add(parameter="XShape", arguments=["lost.xshape"])
    op.inputs.add(parameter="Out@GRAD", arguments=["y@GRAD"])
    op.outputs.add(parameter="X@GRAD", arguments=["gone@GRAD"])
    with pytest.raises(FileFormatError, match="lost.xshape.*gone@GRAD"):
        paddle_xshape.from_paddle(op, {}, static.Program().global_block(), "op 3")
