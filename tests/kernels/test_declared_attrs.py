"""An attribute or input an op does not implement is refused, never ignored (issue 20,
item 6), and the two Paddle features that were ignored are implemented: scale's
ScaleTensor and softmax_with_cross_entropy's use_softmax=False. References: numpy math
and finite differences."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels.registry import run_op
from numbaflow.utils import unique_name

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.mark.parametrize("op, inputs, attrs, named", [
    ("concat", {"X": [np.ones((2, 2))] * 2, "AxisTensor": np.array([1])}, {}, "'AxisTensor'"),
    ("adam", {}, {"use_global_beta_pow": True}, "'use_global_beta_pow'"),
    ("relu", {"X": np.ones(2)}, {"alpha": 0.1}, "'alpha'"),
])
def test_undeclared_inputs_and_attributes_are_refused_by_name(op, inputs, attrs, named):
    with pytest.raises(ValueError, match=f"{op}: .*{named} is not implemented"):
        run_op(op, inputs, attrs)


def test_ops_of_a_program_are_checked_the_same_way():
    block = static.Program().global_block()
    x = block.create_var("x", [2, 2], "float32")
    with pytest.raises(ValueError, match="relu: unknown attribute 'alpha'"):
        block.append_op("relu", {"X": [x]}, {"Out": [x]}, {"alpha": 0.1})
    with pytest.raises(ValueError, match="concat: unknown input slot 'AxisTensor'"):
        block.append_op("concat", {"X": [x, x], "AxisTensor": [x]}, {"Out": [x]})


def hard_case(rng):
    p = rng.uniform(0.1, 1.0, (4, 3))
    return p, np.array([[0], [2], [1], [-100]])


def test_softmax_with_cross_entropy_use_softmax_false_reads_probabilities():
    rng = np.random.default_rng(0)
    p, lab = hard_case(rng)
    got = run_op("softmax_with_cross_entropy", {"Logits": p, "Label": lab},
                 {"use_softmax": False})
    want = np.array([-np.log(p[0, 0]), -np.log(p[1, 2]), -np.log(p[2, 1]), 0.0])
    np.testing.assert_allclose(got["Loss"].ravel(), want, rtol=1e-12)
    np.testing.assert_array_equal(got["Softmax"], p)
    soft = rng.dirichlet(np.ones(3), 4)
    got = run_op("softmax_with_cross_entropy", {"Logits": p, "Label": soft},
                 {"use_softmax": False, "soft_label": True})
    np.testing.assert_allclose(got["Loss"].ravel(), -(soft * np.log(p)).sum(1), rtol=1e-12)
    with pytest.raises(ValueError, match="label 3"):
        run_op("softmax_with_cross_entropy", {"Logits": p, "Label": lab + 3},
               {"use_softmax": False})


@pytest.mark.parametrize("soft", [False, True])
def test_softmax_with_cross_entropy_use_softmax_false_gradient(soft):
    rng = np.random.default_rng(1)
    p, lab = hard_case(rng)
    if soft:
        lab = rng.dirichlet(np.ones(3), 4)
    attrs = {"use_softmax": False, "soft_label": soft}
    d = rng.normal(size=(4, 1))
    got = run_op("softmax_with_cross_entropy_grad", {"Label": lab, "Softmax": p,
                                                     "Loss@GRAD": d}, attrs)["Logits@GRAD"]

    def loss(q):
        return (run_op("softmax_with_cross_entropy", {"Logits": q, "Label": lab},
                       attrs)["Loss"] * d).sum()
    num = np.zeros_like(p)
    for idx in np.ndindex(p.shape):
        e = np.zeros_like(p)
        e[idx] = 1e-6
        num[idx] = (loss(p + e) - loss(p - e)) / 2e-6
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-9)


def test_scale_tensor_replaces_the_scale_attribute_forward_and_backward():
    x = np.arange(6.0).reshape(2, 3)
    for after in (True, False):
        got = run_op("scale", {"X": x, "ScaleTensor": np.array([2.5])},
                     {"scale": 7.0, "bias": 1.0, "bias_after_scale": after})["Out"]
        np.testing.assert_allclose(got, x * 2.5 + 1.0 if after else (x + 1.0) * 2.5)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        w = paddle.create_parameter([2, 3], "float32", name="w")
        s = static.data("s", [1], "float32")
        out = main.global_block().create_var("out", (2, 3), "float32")
        main.global_block().append_op("scale", {"X": [w], "ScaleTensor": [s]}, {"Out": [out]},
                                      {"scale": 7.0, "bias": 0.5})
        loss = paddle.sum(out * out)
        grads = paddle.static.append_backward(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    static.global_scope().set("w", x.astype("float32"))
    g, o = exe.run(main, feed={"s": np.array([3.0], "float32")},
                   fetch_list=[grads[0][1], out])
    np.testing.assert_allclose(o, x * 3.0 + 0.5, rtol=1e-6)
    np.testing.assert_allclose(g, 2 * (x * 3.0 + 0.5) * 3.0, rtol=1e-6)


def test_scale_tensor_survives_the_fusion_passes():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        w = paddle.create_parameter([3], "float32", name="w")
        s = static.data("s", [1], "float32")
        h = paddle.nn.functional.relu(x + w)
        out = main.global_block().create_var("out", (-1, 3), "float32")
        main.global_block().append_op("scale", {"X": [h], "ScaleTensor": [s]},
                                      {"Out": [out]}, {"scale": 7.0, "bias": 0.5})
        y = paddle.tanh(out)
        paddle.optimizer.SGD(0.1).minimize(paddle.mean(y))
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xs = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    w0 = static.global_scope().get("w").copy()
    bs = static.BuildStrategy()
    bs.fuse_elewise_add_act_ops = bs.enable_auto_fusion = bs.fuse_all_optimizer_ops = True
    got, = exe.run(static.CompiledProgram(main, build_strategy=bs),
                   feed={"x": xs, "s": np.array([3.0], "float32")}, fetch_list=[y])
    want = np.tanh(np.maximum(xs + w0, 0) * 3.0 + 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    grad = ((1 - want ** 2) / want.size * 3.0 * ((xs + w0) > 0)).sum(0)
    np.testing.assert_allclose(static.global_scope().get("w"), w0 - 0.1 * grad, rtol=1e-5,
                               atol=1e-7)


def adam_programs():
    """Adam's updates written the old way (adam + two `scale` ops advancing the beta powers
    after it) and as the optimizer (and Paddle) writes them: adam with
    Beta1PowOut/Beta2PowOut in place."""
    programs = []
    for scale_ops in (True, False):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), unique_name.guard():
            x = static.data("x", [None, 4], "float32")
            h = static.nn.fc(x, 3, activation="tanh")
            loss = paddle.mean(static.nn.fc(h, 1))
            paddle.optimizer.Adam(0.05).minimize(loss)
        block = main.global_block()
        adams = [op for op in block.ops if op.type == "adam"]
        assert len(adams) == 4 and all(op.output("Beta1PowOut") == op.input("Beta1Pow")
                                       for op in adams)
        if scale_ops:
            for op in adams:
                scales = [block.make_op("scale", {"X": op.inputs[src]}, {"Out": op.inputs[src]},
                                        {"scale": op.attr(beta)})
                          for src, beta in (("Beta1Pow", "beta1"), ("Beta2Pow", "beta2"))]
                block.insert_after(op, scales)
                block.set_output(op, "Beta1PowOut", None)
                block.set_output(op, "Beta2PowOut", None)
            assert [op.type for op in block.ops].count("scale") == 8
        programs.append((main, startup, loss))
    return programs


@pytest.mark.parametrize("fuse", [False, True])
def test_adam_beta_pow_outputs_update_as_the_scale_ops_do(fuse):
    (ref, ref_start, ref_loss), (main, start, loss) = adam_programs()
    feeds = [{"x": np.random.default_rng(i).normal(size=(5, 4)).astype("float32")}
             for i in range(3)]
    results, init = [], None
    for program, startup, fetch in ((ref, ref_start, ref_loss), (main, start, loss)):
        with static.scope_guard(static.Scope()):
            exe = static.Executor(paddle.CPUPlace())
            exe.run(startup)
            if init is None:
                init = ref.state_dict()
            ref.set_state_dict(init)            # both start from the same values
            if program is main and fuse:
                bs = static.BuildStrategy()
                bs.fuse_all_optimizer_ops = True
                program = static.CompiledProgram(program, build_strategy=bs)
            losses = [exe.run(program, feed=f, fetch_list=[fetch])[0] for f in feeds]
            results.append((losses, ref.state_dict()))
    (want_losses, want), (got_losses, got) = results
    # the same float32 products as the scale ops', fused or not: equal bit for bit
    np.testing.assert_array_equal(got_losses, want_losses)
    assert got["fc_0.w_0_beta1_pow_acc_0"].tolist() == pytest.approx([0.9 ** 4])
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_adam_with_one_beta_power_output_is_refused_naming_the_fix():
    (_, _, _), (main, startup, loss) = adam_programs()
    block = main.global_block()
    op = next(op for op in block.ops if op.type == "adam")
    block.set_output(op, "Beta2PowOut", None)      # Beta1PowOut alone
    exe = static.Executor(paddle.CPUPlace())
    with static.scope_guard(static.Scope()):
        exe.run(startup)
        with pytest.raises(ValueError, match="give both Beta1PowOut and Beta2PowOut, or neither"):
            exe.run(main, feed={"x": np.zeros((2, 4), "float32")}, fetch_list=[loss])
