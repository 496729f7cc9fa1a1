"""The IR: names, listing, clone(for_test), verify, unique_name.guard, operator overloads."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.graph.verify import IRError
from numbaflow.utils import unique_name


def build_seed(opt=None):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data(name="X", shape=[None, 1], dtype="float32")
        hidden = static.nn.fc(x=x, size=10)
        loss = paddle.mean(hidden)
        (opt or paddle.optimizer.SGD(learning_rate=0.01)).minimize(loss)
    return main, startup, x, hidden, loss


def test_seed_names_and_op_list_match_paddle():
    main, startup, x, hidden, loss = build_seed()
    names = set(main.global_block().vars)
    assert {"fc_0.w_0", "fc_0.b_0", "fc_0.tmp_0", "fc_0.tmp_1", "mean_0.tmp_0",
            "learning_rate_0", "fc_0.w_0@GRAD", "mean_0.tmp_0@GRAD"} <= names
    assert hidden.name == "fc_0.tmp_1" and loss.name == "mean_0.tmp_0"
    assert [op.type for op in main.global_block().ops] == [
        "mul", "elementwise_add", "reduce_mean", "fill_constant", "reduce_mean_grad",
        "elementwise_add_grad", "mul_grad", "sgd", "sgd"]
    assert loss.shape == () and hidden.shape == (-1, 10)
    w = main.global_block().var("fc_0.w_0")
    assert isinstance(w, static.Parameter) and w.persistable and w.shape == (1, 10)
    text = str(main)
    for t in ("mul(", "elementwise_add(", "reduce_mean(", "fill_constant(", "_grad(", "sgd("):
        assert t in text
    assert "fc_0.w_0" in text and "X@GRAD" in text
    verify(main)
    verify(startup)
    assert [op.type for op in startup.global_block().ops] == [
        "uniform_random", "fill_constant", "fill_constant"]


def test_fc_with_activation_names_tmp2():
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [None, 4])
        y = static.nn.fc(x, 3, activation="relu")
        z = static.nn.fc(y, 2)
    assert y.name == "fc_0.tmp_2" and z.name == "fc_1.tmp_1"
    assert "fc_1.w_0" in main.global_block().vars


def test_unique_name_guard_gives_fresh_names():
    with unique_name.guard():
        a = unique_name.generate("fc")
    with unique_name.guard():
        b = unique_name.generate("fc")
    assert a == b == "fc_0"


def test_clone_for_test_keeps_forward_only():
    main, startup, *_ = build_seed(paddle.optimizer.Adam(0.01))
    test = main.clone(for_test=True)
    types = [op.type for op in test.global_block().ops]
    assert types == ["mul", "elementwise_add", "reduce_mean"]
    names = set(test.global_block().vars)
    assert not any("@GRAD" in n for n in names)
    assert not any("moment" in n or "beta" in n or n.startswith("learning_rate") for n in names)
    assert {"fc_0.w_0", "fc_0.b_0", "X"} <= names
    verify(test)
    # the clone is independent: mutating it leaves the original alone
    n_before = len(main.global_block().ops)
    test.global_block().remove_ops(test.global_block().ops[:1])
    assert len(main.global_block().ops) == n_before


def test_clone_for_test_sets_is_test_on_ops_that_have_it():
    # dropout/batch_norm carry `is_test`; the mechanism is exercised on an op given one
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [None, 3])
        paddle.nn.functional.relu(x)
    main.global_block().ops[0].attrs["is_test"] = False
    test = main.clone(for_test=True)
    assert test.global_block().ops[0].attrs["is_test"] is True
    assert main.global_block().ops[0].attrs["is_test"] is False
    assert main.clone().global_block().ops[0].attrs["is_test"] is False   # only for_test sets it


def test_verify_catches_broken_invariants():
    main, *_ = build_seed()
    block = main.global_block()
    op = block.ops[1]
    op.attrs["bogus"] = 1
    with pytest.raises(IRError, match="attrs"):
        verify(main)
    del op.attrs["bogus"]
    # a stale shape is caught by re-running inference
    tmp = block.var("fc_0.tmp_1")
    tmp.shape = (-1, 11)
    with pytest.raises(IRError, match="inference"):
        verify(main)
    tmp.shape = (-1, 10)
    # two producers of one temporary
    first = block.ops[0]
    block.insert_before(None, block.make_op(first.type, first.inputs, first.outputs, first.attrs))
    with pytest.raises(IRError, match="produced twice"):
        verify(main)


def test_variable_operator_overloads_build_expected_ops():
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [None, 3])
        y = static.data("y", [None, 3])
        outs = [x + y, x - y, x * y, x / y, x @ paddle.transpose(y, [1, 0]), -x, x * 2.0,
                1.0 + x, x ** 2]
    types = [op.type for op in main.global_block().ops]
    for t in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
              "matmul_v2", "scale", "pow"):
        assert t in types
    exe = static.Executor(paddle.CPUPlace())
    xv = np.random.rand(2, 3).astype("float32") + 0.5
    yv = np.random.rand(2, 3).astype("float32") + 0.5
    got = exe.run(main, feed={"x": xv, "y": yv}, fetch_list=outs, scope=static.Scope())
    want = [xv + yv, xv - yv, xv * yv, xv / yv, xv @ yv.T, -xv, xv * 2, 1 + xv, xv ** 2]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_append_op_rejects_unknown_slots_and_attrs():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2, 3])
    block = main.global_block()
    out = block.create_var("o", (), "float32")
    with pytest.raises(ValueError, match="unknown attribute 'axs'"):
        block.append_op("softmax", {"X": x}, {"Out": out}, {"axs": 1})
    with pytest.raises(ValueError, match="unknown input slot"):
        block.append_op("relu", {"Input": x}, {"Out": out})
    with pytest.raises(ValueError, match="unknown op type"):
        block.append_op("rleu", {"X": x}, {"Out": out})


def test_shape_inference_errors_name_the_variables():
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        a = static.data("a", [None, 3])
        b = static.data("b", [None, 4])
        with pytest.raises(ValueError, match=r"a.*b|cannot broadcast"):
            paddle.add(a, b)
        w = static.data("w", [5, 2])
        with pytest.raises(ValueError, match="inner dimensions"):
            paddle.matmul(a, w)
