"""Paddle's 3-D ops (conv3d, pool3d, max_pool3d_with_index and their gradient ops) against
real Paddle 2.6.2 (tests/fixtures/paddle_3d/, written by tests/fixtures/make_paddle_3d.py):
numbaflow's functionals give Paddle's values, masks and gradients; the program Paddle saved
with them loads with `load_inference_model` and gives Paddle's outputs; nn.Conv3D has
Paddle's parameter names, shapes and initial spread; misuse is refused when built;
paddle.flops counts a 3-D network as Paddle."""
import json
import os
import sys

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from numbaflow.utils import unique_name
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

HERE = os.path.join(str(TESTS), "fixtures")
sys.path.insert(0, HERE)
from make_paddle_3d import FETCHES, FLOPS_INPUT, build, feeds, flops_net  # noqa: E402

DATA = np.load(os.path.join(HERE, "paddle_3d", "data.npz"))
OPS = {"conv3d", "pool3d", "max_pool3d_with_index"}


def _check(got):
    for name, value in zip(FETCHES, got):
        if "mask" in name:
            np.testing.assert_array_equal(value, DATA[name], err_msg=name)
        else:
            np.testing.assert_allclose(value, DATA[name], rtol=1e-5, atol=2e-5, err_msg=name)


def test_functionals_give_paddles_values_masks_and_gradients():
    main, startup = static.Program(), static.Program()
    data = feeds()
    with static.program_guard(main, startup):
        x = static.data("x", [None, *data["x"].shape[1:]], "float32")
        x.stop_gradient = False
        fetch = build(paddle, F, {"x": x})
    types = {op.type for op in main.global_block().ops}
    with open(os.path.join(HERE, "paddle_3d", "ops.json"), encoding="utf-8") as f:
        paddles = set(json.load(f)["ops"])
    # Paddle's ops and their gradient ops (Paddle also writes adaptive_max_pool3d without
    # a mask as max_pool3d_with_index; numbaflow as pool3d, as its 2-D spelling does)
    assert OPS | {t + "_grad" for t in OPS} <= types and OPS & types <= paddles
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    _check(exe.run(main, feed=data, fetch_list=fetch))


def test_paddle_saved_program_with_3d_ops_loads_and_runs():
    exe = static.Executor(paddle.CPUPlace())
    program, feed_names, fetches = static.load_inference_model(
        os.path.join(HERE, "paddle_3d", "infer"), exe)
    types = {op.type for op in program.global_block().ops}
    assert OPS | {t + "_grad" for t in OPS} <= types           # Paddle's grad ops load too
    _check(exe.run(program, feed={k: DATA[k] for k in feed_names}, fetch_list=fetches))


def test_conv3d_layer_has_paddles_parameters_and_refuses_misuse():
    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        conv = paddle.nn.Conv3D(4, 8, (3, 2, 3), groups=2, data_format="NDHWC")
        assert conv(static.data("v", [None, 5, 6, 7, 4])).shape == (-1, 3, 5, 5, 8)
        assert [(p.name, p.shape) for p in conv.parameters()] == [
            ("conv3d_0.w_0", (8, 2, 3, 2, 3)), ("conv3d_0.b_0", (8,))]
        assert list(conv.state_dict(keys_only=True)) == ["weight", "bias"]
        with pytest.raises(ValueError, match=r"Conv3D.*channel dim 4.*4"):
            conv(static.data("w", [None, 5, 6, 7, 3]))
        x = static.data("x", [None, 3, 4, 4, 4])
        with pytest.raises(ValueError, match=r"conv3d: x x has 3 channels and weight"):
            F.conv3d(x, static.create_parameter([2, 2, 1, 1, 1], "float32"))
        with pytest.raises(ValueError, match=r"max_pool3d: x .* must be 5-D"):
            F.max_pool3d(static.data("y", [None, 3, 4, 4]), 2)
        with pytest.raises(NotImplementedError, match="divisor_override"):
            F.avg_pool3d(x, 2, divisor_override=3)
        with pytest.raises(ValueError, match=r"pool3d: output size 0 is not positive"):
            F.max_pool3d(x, 5)
    startup = static.Program()
    with static.program_guard(static.Program(), startup), unique_name.guard():
        big = paddle.nn.Conv3D(16, 32, 3)
    scope = static.Scope()
    static.Executor().run(startup, scope=scope)
    w = np.asarray(scope.find_var(big.weight.name).get_tensor())
    # Paddle's Conv3D weight: Normal(0, sqrt(2 / (kd * kh * kw * in_channels)))
    assert abs(w.std() - (2.0 / (27 * 16)) ** 0.5) < 0.005 and abs(w.mean()) < 0.005


def test_a_3d_program_saved_in_paddles_format_loads_back_with_equal_outputs(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4, 5, 6, 5], "float32")
        h = paddle.nn.Conv3D(4, 6, 3, padding="SAME", groups=2)(x)
        h = F.max_pool3d(h, 2, stride=[1, 2, 2], padding=[1, 0, 1], ceil_mode=True)
        v = F.avg_pool3d(paddle.transpose(h, [0, 2, 3, 4, 1]), 2, data_format="NDHWC",
                         exclusive=False, padding=1)
        out = [v, F.adaptive_max_pool3d(h, [2, 3, 2], return_mask=True)[1]]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    want = exe.run(main, feed={"x": DATA["x"]}, fetch_list=out)
    prefix = str(tmp_path / "m")
    static.save_inference_model(prefix, [x], out, exe, program=main, format="paddle")
    program, feeds, fetches = static.load_inference_model(prefix, exe)
    for g, w in zip(exe.run(program, feed={feeds[0]: DATA["x"]}, fetch_list=fetches), want):
        np.testing.assert_array_equal(g, w)


def test_flops_of_a_3d_network_are_paddles():
    with open(os.path.join(HERE, "paddle_3d", "ops.json"), encoding="utf-8") as f:
        want = json.load(f)["flops"]
    assert paddle.flops(flops_net(paddle), FLOPS_INPUT, print_detail=False) == want
