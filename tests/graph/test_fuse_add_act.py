"""fuse_elewise_add_act (BuildStrategy.fuse_elewise_add_act_ops): the graph it makes for
fc + activation training and test programs, intermediates kept when something else
reads them, refusals, numbers equal to the unfused run, and the generated kernels (CPU,
simulated GPU, dumped source)."""

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.kernels import run_op
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs
from simulator import run_sim

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

PASS = "fuse_elewise_add_act"
FUSED, FUSED_GRAD = "fused_elemwise_add_activation", "fused_elemwise_add_activation_grad"
ACTS = ["relu", "tanh", "sigmoid", "gelu", "scale"]


def build(body, train=True, d=6):
    """(main, startup, loss) of `body(x) -> out`, loss = mean(out), SGD when `train`."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, d], "float32")
        loss = paddle.mean(body(x))
        if train:
            paddle.optimizer.SGD(learning_rate=0.2).minimize(loss)
    return main, startup, loss


def fc_act(act, size=5):
    def body(x):
        if act == "scale":        # scale's bias must survive fusion (Paddle drops it)
            return paddle.scale(static.nn.fc(x, size), scale=2.0, bias=1.0)
        return static.nn.fc(x, size, activation=act)
    return body


def types(program):
    return [op.type for op in program.global_block().ops]


def only(program, op_type):
    ops = [op for op in program.global_block().ops if op.type == op_type]
    assert len(ops) == 1, types(program)
    return ops[0]


def slots(op):
    return ({k: [v.name for v in vs] for k, vs in op.inputs.items()},
            {k: [v.name for v in vs] for k, vs in op.outputs.items()})


def fused_graph(main, for_test=False):
    g = static.Graph(main, for_test=for_test)
    changed = g.apply_pass(PASS)
    verify(g.program)
    return g.program, changed, g.applied_passes[-1].refusals


def run_steps(main, startup, loss, program=None, steps=3, fetch=(), d=6):
    """Losses and extra fetches of `steps` SGD runs of `program` (default `main`), from the
    same initial state every time, and the final parameters."""
    exe = static.Executor(paddle.CPUPlace())
    scope = static.Scope()
    init = static.Scope()
    exe.run(startup, scope=init)
    for v in main.list_vars():
        if v.persistable and init.get(v.name) is not None:
            scope.set(v.name, init.get(v.name).copy())
    rng = np.random.default_rng(0)
    out = [exe.run(program or main, feed={"x": rng.standard_normal((8, d)).astype("float32")},
                   fetch_list=[loss, *fetch], scope=scope) for _ in range(steps)]
    return out, {p.name: scope.get(p.name) for p in main.all_parameters()}


def assert_same(a, b):
    for xa, xb in zip(a[0], b[0]):
        for u, v in zip(xa, xb):
            np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-7)
    for k in a[1]:
        np.testing.assert_allclose(a[1][k], b[1][k], rtol=1e-5, atol=1e-7, err_msg=k)


def fused_strategy():
    bs = static.BuildStrategy()
    bs.fuse_elewise_add_act_ops = True
    return bs


# ---------------------------------------------------------------- the graphs
@pytest.mark.parametrize("act", ACTS)
def test_fc_act_training_graph_is_fused_forward_and_backward(act):
    main, _, _ = build(fc_act(act))
    program, changed, refusals = fused_graph(main)
    assert changed and refusals == []
    assert types(program) == ["mul", FUSED, "reduce_mean", "fill_constant", "reduce_mean_grad",
                              FUSED_GRAD, "mul_grad", "sgd", "sgd"]
    out = "scale_0.tmp_0" if act == "scale" else "fc_0.tmp_2"
    fwd, bwd = only(program, FUSED), only(program, FUSED_GRAD)
    assert fwd.attrs["functor_list"] == [act, "elementwise_add"]
    assert fwd.attrs["axis"] == 1                     # the fc bias's axis is inherited
    # gelu's gradient reads its input x + y: the intermediate stays for the backward
    inter = {"IntermediateOut": ["fc_0.tmp_1"]} if act == "gelu" else {}
    assert slots(fwd) == ({"X": ["fc_0.tmp_0"], "Y": ["fc_0.b_0"]}, {"Out": [out], **inter})
    assert fwd.attrs["save_intermediate_out"] == (act == "gelu")
    if act == "scale":
        assert (fwd.attrs["scale"], fwd.attrs["bias"]) == (2.0, 1.0)
        assert bwd.attrs["scale"] == 2.0
    assert bwd.attrs["functor_list"] == [f"{act}_grad", "elementwise_add_grad"]
    assert slots(bwd) == ({"Y": ["fc_0.b_0"], "Out": [out], **inter, "Out@GRAD": [out + "@GRAD"]},
                          {"X@GRAD": ["fc_0.tmp_0@GRAD"], "Y@GRAD": ["fc_0.b_0@GRAD"]})
    names = set(program.global_block().vars)
    assert "fc_0.tmp_1@GRAD" not in names and ("fc_0.tmp_1" in names) == (act == "gelu")


def test_x_plus_relu_fc_test_program():
    """x + relu(fc(x)): the fc's bias add and relu fuse ([relu, add], axis 1); the outer
    add then reads the fused op's output."""
    main, _, _ = build(lambda x: x + static.nn.fc(x, 6, activation="relu"), train=False)
    program, changed, refusals = fused_graph(main, for_test=True)
    assert changed and refusals == []
    assert types(program) == ["mul", FUSED, "elementwise_add", "reduce_mean"]
    f = only(program, FUSED)
    assert slots(f) == ({"X": ["fc_0.tmp_0"], "Y": ["fc_0.b_0"]}, {"Out": ["fc_0.tmp_2"]})
    assert (f.attrs["functor_list"], f.attrs["axis"], f.attrs["save_intermediate_out"]) == \
        (["relu", "elementwise_add"], 1, False)
    assert "fc_0.tmp_1" not in program.global_block().vars


@pytest.mark.parametrize("act_first", [False, True])
def test_act_then_add_fuses_with_the_act_output_in_either_slot(act_first):
    """fc(x) + tanh(x W) (or tanh(x W) + fc(x)): [elementwise_add, tanh], X = the other
    operand, Y = the activation's input; trained: the backward fuses too."""
    def body(x):
        t = paddle.nn.functional.tanh(static.nn.fc(x, 6, bias_attr=False))
        h = static.nn.fc(x, 6)
        return t + h if act_first else h + t
    main, startup, loss = build(body)
    program, _, refusals = fused_graph(main, for_test=True)
    f = only(program, FUSED)
    assert f.attrs["functor_list"] == ["elementwise_add", "tanh"]
    assert slots(f) == ({"X": ["fc_1.tmp_1"], "Y": ["fc_0.tmp_0"]},
                        {"Out": ["elementwise_add_0.tmp_0"]})
    program, _, refusals = fused_graph(main)
    assert refusals == []
    g = only(program, FUSED_GRAD)
    assert g.attrs["functor_list"] == ["elementwise_add_grad", "tanh_grad"]
    assert slots(g)[1] == {"X@GRAD": ["fc_1.tmp_1@GRAD"], "Y@GRAD": ["fc_0.tmp_0@GRAD"]}
    assert "tanh_grad" not in types(program) and "tanh" not in types(program)
    assert_same(run_steps(main, startup, loss),
                run_steps(main, startup, loss, static.CompiledProgram(main, fused_strategy())))


def test_intermediate_read_elsewhere_becomes_an_output():
    """mean(relu(h) * 2 + h), h = fc(x): h is read by relu and by the outer add, so the
    fused op writes it (IntermediateOut); its gradient sums two contributions, so that
    backward stays unfused, with the reason recorded."""
    def body(x):
        h = static.nn.fc(x, 6)
        return paddle.nn.functional.relu(h) * 2.0 + h
    main, startup, loss = build(body)
    program, _, refusals = fused_graph(main)
    first = next(op for op in program.global_block().ops if op.type == FUSED)
    assert slots(first)[1] == {"Out": ["relu_0.tmp_0"], "IntermediateOut": ["fc_0.tmp_1"]}
    assert first.attrs["save_intermediate_out"] is True
    assert any("sum" in reason and "fc_0.tmp_1@GRAD" in reason for _, reason in refusals)
    assert_same(run_steps(main, startup, loss),
                run_steps(main, startup, loss, static.CompiledProgram(main, fused_strategy())))


def test_fetched_intermediate_is_kept_and_correct():
    main, startup, loss = build(fc_act("relu"))
    pre = main.global_block().var("fc_0.tmp_1")
    compiled = static.CompiledProgram(main, fused_strategy())
    got = run_steps(main, startup, loss, compiled, fetch=[pre])
    assert_same(run_steps(main, startup, loss, fetch=[pre]), got)
    program, = passed_programs(compiled)
    f = only(program, FUSED)
    assert slots(f)[1] == {"Out": ["fc_0.tmp_2"], "IntermediateOut": ["fc_0.tmp_1"]}
    assert FUSED_GRAD in types(program)


@pytest.mark.parametrize("act", ACTS)
def test_three_sgd_steps_equal_the_unfused_run(act):
    main, startup, loss = build(fc_act(act))
    before = (main.version, str(main))
    compiled = static.CompiledProgram(main, fused_strategy())
    assert_same(run_steps(main, startup, loss), run_steps(main, startup, loss, compiled))
    assert (main.version, str(main)) == before          # the user's program is untouched
    program, = passed_programs(compiled)
    assert FUSED in types(program) and FUSED_GRAD in types(program)
    # (fuse_softmax_mask, on by default, runs too and finds nothing here)
    assert [p.name for p in compiled.passes if p.changed] == [PASS]


def test_refusals_say_why():
    # exp is not one of the fusable activations; nothing else changes
    main, _, _ = build(lambda x: static.nn.fc(x, 5, activation="exp"))
    program, changed, refusals = fused_graph(main)
    assert not changed and types(program) == types(main)
    assert refusals == [("elementwise_add(fc_0.tmp_1) -> exp",
                         "exp is not a fusable activation (relu, tanh, sigmoid, gelu, scale)")]
    # act(y) of a broadcast y that other ops read cannot be written over the add's shape
    def body(x):
        b = static.data("b", [6], "float32")
        r = paddle.nn.functional.relu(b)
        return x + r + r
    main, _, _ = build(body, train=False)
    program, changed, refusals = fused_graph(main)
    assert types(program) == types(main)
    assert any("relu" in what and "smaller than" in reason for what, reason in refusals)


def test_nothing_to_fuse_leaves_the_graph_alone():
    main, _, _ = build(lambda x: static.nn.fc(x, 5))
    program, changed, refusals = fused_graph(main)
    assert not changed and refusals == [] and types(program) == types(main)


# ---------------------------------------------------------------- the ops
def test_op_errors_name_the_fix():
    x, y = np.ones((2, 3)), np.ones((3,))
    with pytest.raises(ValueError, match="functor_list .*'exp'.* not supported"):
        run_op(FUSED, {"X": x, "Y": y}, {"functor_list": ["exp", "elementwise_add"]})
    # act(Y) of a broadcast Y cannot be IntermediateOut (run_op makes every output)
    with pytest.raises(ValueError, match="IntermediateOut = relu\\(Y\\) has Y's shape"):
        run_op(FUSED, {"X": x, "Y": y}, {"functor_list": ["elementwise_add", "relu"]})
    with pytest.raises(ValueError, match="save_intermediate_out"):
        run_op(FUSED_GRAD, {"Y": y, "Out": x, "IntermediateOut": x, "Out@GRAD": x},
               {"functor_list": ["relu_grad", "elementwise_add_grad"],
                "save_intermediate_out": False})


def test_act_of_broadcast_y_without_intermediate():
    """x + sigmoid(b) with b broadcast on axis 1: Out only; its gradient sums dY down."""
    from numbaflow.testing.op_test import run_single_op
    rng = np.random.default_rng(3)
    x, b = rng.standard_normal((2, 3, 4)), rng.standard_normal(3)
    a = {"functor_list": ["elementwise_add", "sigmoid"], "axis": 1}
    got = run_single_op(FUSED, {"X": x, "Y": b}, a)["Out"]
    s = 1 / (1 + np.exp(-b))
    np.testing.assert_allclose(got, x + s[None, :, None], rtol=1e-12)
    d = rng.standard_normal(x.shape)
    g = run_op(FUSED_GRAD, {"X": x, "Y": b, "Out": got, "Out@GRAD": d},
               dict(a, functor_list=["elementwise_add_grad", "sigmoid_grad"],
                    save_intermediate_out=False))
    np.testing.assert_allclose(g["X@GRAD"], d, rtol=1e-12)
    np.testing.assert_allclose(g["Y@GRAD"], d.sum(axis=(0, 2)) * s * (1 - s), rtol=1e-10)
    np.testing.assert_allclose(g["IntermediateOut@GRAD"], d.sum(axis=(0, 2)), rtol=1e-12)


def test_generated_kernel_source_is_dumped(tmp_path, monkeypatch):
    """The fused kernels come from the elementwise template (one generated function) and
    are dumped under NUMBAFLOW_DUMP_DIR; an odd scale makes the source new to this process."""
    monkeypatch.setenv("NUMBAFLOW_DUMP_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal(4)
    a = {"functor_list": ["scale", "elementwise_add"], "scale": 1.2345678901, "bias": 0.75}
    out = run_op(FUSED, {"X": x, "Y": y}, a)
    np.testing.assert_allclose(out["Out"], (x + y) * 1.2345678901 + 0.75, rtol=1e-12)
    run_op(FUSED_GRAD, {"Y": y, "Out": out["Out"], "Out@GRAD": x},
           dict(a, functor_list=["scale_grad", "elementwise_add_grad"],
                save_intermediate_out=False))
    sources = [p.read_text(encoding="utf-8") for p in tmp_path.glob("elementwise_*.py")]
    assert sum("1.2345678901" in s for s in sources) == 2, sources
    fwd = next(s for s in sources if "0.75" in s)
    assert "def kernel(" in fwd and " + " in fwd and fwd.count("@njit") == 1


@pytest.mark.gpu
@pytest.mark.slow
def test_fused_kernels_on_simulated_gpu_match_cpu():
    assert "checked 50" in run_sim("fused_add_act", timeout=300).stdout
