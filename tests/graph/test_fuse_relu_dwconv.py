"""fuse_relu_depthwise_conv (BuildStrategy.fuse_relu_depthwise_conv): relu -> depthwise
conv becomes the conv with `fuse_relu_before_depthwise_conv`, forward-only and forward +
backward, refused (with the reason) when the relu's output is needed elsewhere; the
numbers equal the unfused run on CPU and on the simulated GPU (Paddle: GPU only)."""

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.nn.functional_conv import static_conv2d
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs
from simulator import run_sim

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

PASS = "fuse_relu_depthwise_conv"
ATTR = "fuse_relu_before_depthwise_conv"
SHAPE = (2, 3, 5, 5)


def build(train=True, extra=None):
    """conv (bias, relu) -> depthwise conv (multiplier 2, bias) -> mean(h * h)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, *SHAPE[1:]], "float32")
        h = static_conv2d(x, 3, 3, padding=1, act="relu")
        out = static_conv2d(h, 6, 3, padding=1, groups=3)
        loss = paddle.mean(out * out)
        if extra is not None:
            loss = loss + paddle.mean(extra(h))
        if train:
            paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def types(program):
    return [op.type for op in program.global_block().ops]


def op(program, op_type):
    return next(o for o in program.global_block().ops if o.type == op_type)


def fused_graph(main, for_test=False, protected=()):
    g = static.Graph(main, for_test=for_test)
    changed = g.apply_pass(PASS, protected=protected)
    verify(g.program)
    return g.program, changed, g.applied_passes[-1].refusals


def test_forward_only_form():
    main, _, _ = build(train=False)
    program, changed, refusals = fused_graph(main, for_test=True)
    assert changed and refusals == []
    assert types(program) == ["conv2d", "elementwise_add", "depthwise_conv2d", "elementwise_add",
                              "elementwise_mul", "reduce_mean"]
    conv = op(program, "depthwise_conv2d")
    assert conv.attrs[ATTR] is True and conv.input("Input") == ["conv2d_0.tmp_1"]
    assert "conv2d_0.tmp_2" not in program.global_block().vars      # the relu output


def test_forward_and_backward_form():
    main, _, _ = build()
    assert {"relu", "relu_grad"} <= set(types(main))
    program, changed, refusals = fused_graph(main)
    assert changed and refusals == []
    assert "relu" not in types(program) and "relu_grad" not in types(program)
    conv, grad = op(program, "depthwise_conv2d"), op(program, "depthwise_conv2d_grad")
    assert conv.attrs[ATTR] and grad.attrs[ATTR]
    assert conv.input("Input") == grad.input("Input") == ["conv2d_0.tmp_1"]
    assert grad.output("Input@GRAD") == ["conv2d_0.tmp_1@GRAD"]
    names = set(program.global_block().vars)
    assert not names & {"conv2d_0.tmp_2", "conv2d_0.tmp_2@GRAD"}


def run_steps(main, startup, loss, program=None, steps=3):
    exe = static.Executor(paddle.CPUPlace())
    init, scope = static.Scope(), static.Scope()
    exe.run(startup, scope=init)
    for v in main.list_vars():
        if v.persistable and init.get(v.name) is not None:
            scope.set(v.name, init.get(v.name).copy())
    rng = np.random.default_rng(0)
    losses = [exe.run(program or main, feed={"x": rng.standard_normal(SHAPE).astype("float32")},
                      fetch_list=[loss], scope=scope)[0] for _ in range(steps)]
    return losses, {p.name: scope.get(p.name) for p in main.all_parameters()}


def test_three_sgd_steps_equal_the_unfused_run_and_the_program_is_untouched():
    main, startup, loss = build()
    before = (main.version, str(main))
    bs = static.BuildStrategy()
    bs.fuse_relu_depthwise_conv = True
    bs.fuse_conv_bias = False           # this pass alone (the first conv's bias stays)
    bs.recompute_elementwise = False
    compiled = static.CompiledProgram(main, build_strategy=bs)
    (la, pa), (lb, pb) = run_steps(main, startup, loss), run_steps(main, startup, loss, compiled)
    np.testing.assert_allclose(lb, la, rtol=1e-5)
    for k in pa:
        np.testing.assert_allclose(pb[k], pa[k], rtol=1e-5, atol=1e-7, err_msg=k)
    assert (main.version, str(main)) == before
    program, = passed_programs(compiled)
    assert "relu" not in types(program) and op(program, "depthwise_conv2d").attrs[ATTR]
    assert [p.name for p in compiled.passes if p.changed] == [PASS]


def test_refused_when_the_relu_output_is_needed_elsewhere():
    main, _, _ = build(extra=lambda h: h)           # h = relu(...) is read by a second mean
    program, changed, refusals = fused_graph(main)
    assert not changed and types(program) == types(main)
    assert refusals and all("conv2d_0.tmp_2" in what for what, _ in refusals)
    assert "other readers" in refusals[0][1]
    main, _, _ = build()
    program, changed, refusals = fused_graph(main, protected={"conv2d_0.tmp_2"})
    assert not changed and refusals == [("relu(conv2d_0.tmp_2) -> depthwise_conv2d",
                                         "conv2d_0.tmp_2 is fed or fetched")]


@pytest.mark.gpu
@pytest.mark.slow
def test_fused_on_simulated_gpu_equals_unfused_cpu():
    assert run_sim("relu_depthwise_conv", timeout=300).stdout.strip().endswith("ok")
