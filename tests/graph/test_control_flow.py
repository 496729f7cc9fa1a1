"""Control flow (issue 29): blocks in the IR, `static.nn.cond`, `while_loop`, `case`,
`switch_case` as Paddle lowers them (conditional_block + select_input, while), and
gradients through cond. References: numpy written from the maths, finite differences,
Paddle 2.6.2's documented examples (their printed numbers), an SGD loop in numpy."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph.serialize import program_from_dict, program_to_dict
from numbaflow.graph.verify import verify

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.fixture
def prog():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        yield main, startup


def run(main, feed=None, fetch=(), startup=None):
    exe = static.Executor(paddle.CPUPlace())
    if startup is not None:
        exe.run(startup)
    return exe.run(main, feed=feed or {}, fetch_list=list(fetch))


# ---------------------------------------------------------------- blocks in the IR
def test_blocks_parents_and_lookup_through_enclosing_blocks(prog):
    main, _ = prog
    x = static.data("x", [2], "float32")
    seen = {}

    def true_fn():
        seen["block"] = main.current_block()
        return x * 2.0
    static.nn.cond(paddle.mean(x) > 0.0, true_fn, lambda: x * 3.0)
    assert main.num_blocks == 3 and [b.idx for b in main.blocks] == [0, 1, 2]
    assert [main.block(i).parent_idx for i in range(3)] == [-1, 0, 0]
    assert main.current_block() is main.global_block()       # restored after building
    inner = seen["block"]
    assert inner is main.block(1) and inner.parent_block is main.global_block()
    assert inner.var("x") is x and not inner.has_var("x")   # found in the parent
    with pytest.raises(ValueError, match="'nope' is not in block 1 or its enclosing"):
        inner.var("nope")
    with pytest.raises(IndexError, match="block 3 does not exist"):
        main.block(3)
    cond_ops = [op for op in main.global_block().ops if op.type == "conditional_block"]
    assert [op.attrs["sub_block"] for op in cond_ops] == [main.block(1), main.block(2)]
    assert verify(main)


def test_create_block_and_rollback(prog):
    main, _ = prog
    b1 = main._create_block()
    b2 = main._create_block()
    assert (b1.parent_idx, b2.parent_idx, main.current_block()) == (0, 1, b2)
    main._rollback()
    assert main.current_block() is b1
    main._rollback()
    assert main.current_block() is main.global_block()


def _cond_program():
    x = static.data("x", [None, 3], "float32")
    s = static.data("s", [1], "float32")
    y = static.nn.cond(s > 0.0, lambda: paddle.nn.functional.relu(x) * 2.0,
                       lambda: paddle.exp(x) - 1.0)
    return x, s, y


def _cond_ref(xv, sv):
    return np.maximum(xv, 0) * 2.0 if sv > 0 else np.exp(xv) - 1.0


def test_clone_for_test_and_serialization_keep_sub_blocks(prog):
    main, _ = prog
    x, s, y = _cond_program()
    xv = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    copies = [main.clone(), main.clone(for_test=True), program_from_dict(program_to_dict(main))]
    for copy in copies:
        assert copy.num_blocks == 3 and verify(copy)
        subs = [op.attrs["sub_block"] for op in copy.global_block().ops
                if op.type == "conditional_block"]
        assert all(b.program is copy for b in subs)     # the copy's blocks, not the original's
        for sv in (1.0, -1.0):
            got, = run(copy, {"x": xv, "s": np.array([sv], "float32")}, [y.name])
            np.testing.assert_allclose(got, _cond_ref(xv, sv), rtol=1e-5, atol=1e-6)
    assert "sub_block = block[1]" in str(main) and "// block 2 (parent 0)" in str(main)


# ---------------------------------------------------------------- cond
def test_cond_runs_only_the_taken_branch_with_numpy_reference(prog):
    main, _ = prog
    x, s, y = _cond_program()
    rng = np.random.default_rng(1)
    for batch, sv in ((4, 1.0), (4, -2.0), (7, 3.0)):      # a new batch size: a new plan
        xv = rng.normal(size=(batch, 3)).astype("float32")
        got, = run(main, {"x": xv, "s": np.array([sv], "float32")}, [y])
        np.testing.assert_allclose(got, _cond_ref(xv, sv), rtol=1e-5, atol=1e-6)


def test_cond_with_nested_structures_and_nested_cond(prog):
    main, _ = prog
    a = static.data("a", [1], "float32")
    b = static.data("b", [1], "float32")

    def inner():
        return static.nn.cond(b > 0.0, lambda: (a + b, [a * b]), lambda: (a - b, [a / b]))
    out = static.nn.cond(a > 0.0, inner, lambda: (a * 0.0, [b * 0.0]))
    assert isinstance(out, tuple) and isinstance(out[1], list)
    for av, bv in ((2.0, 3.0), (2.0, -4.0), (-1.0, 5.0)):
        got = run(main, {"a": np.array([av], "float32"), "b": np.array([bv], "float32")},
                  [out[0], out[1][0]])
        if av <= 0:
            want = (0.0, 0.0)
        else:
            want = (av + bv, av * bv) if bv > 0 else (av - bv, av / bv)
        np.testing.assert_allclose([g[0] for g in got], want, rtol=1e-6)
    assert main.num_blocks == 5 and main.block(3).parent_idx == 1 and verify(main)


def test_cond_errors_name_both_branches(prog):
    x = static.data("x", [2], "float32")
    p = paddle.mean(x) > 0.0
    with pytest.raises(ValueError, match=r"true_fn returned .*Variable.*false_fn .*tuple"):
        static.nn.cond(p, lambda: x, lambda: (x, x))
    # (outputs of different shapes are run-time values: tests/graph/test_cond_runtime_shapes.py)
    with pytest.raises(TypeError, match="pred must be a bool Variable holding one element"):
        static.nn.cond(x, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="true_fn must return Variables"):
        static.nn.cond(p, lambda: 3, lambda: 4)


def test_cond_returning_none_and_outer_variables(prog):
    main, _ = prog
    x = static.data("x", [2], "float32")
    assert static.nn.cond(paddle.mean(x) > 0.0, lambda: None, lambda: None) is None
    y = static.nn.cond(paddle.mean(x) > 0.0, lambda: x, lambda: -x)   # a branch returns x
    for xv in ([1.0, 2.0], [-1.0, -2.0]):
        got, = run(main, {"x": np.array(xv, "float32")}, [y])
        np.testing.assert_array_equal(got, np.abs(xv))


# ---------------------------------------------------------------- Paddle's documented examples
def test_paddle_doc_example_while_loop(prog):
    main, _ = prog

    def cond(i, ten):
        return i < ten

    def body(i, ten):
        i = i + 1
        return [i, ten]
    i = paddle.full(shape=[1], fill_value=0, dtype='int64')     # loop counter
    ten = paddle.full(shape=[1], fill_value=10, dtype='int64')  # loop length
    i, ten = paddle.static.nn.while_loop(cond, body, [i, ten])
    exe = paddle.static.Executor(paddle.CPUPlace())
    res = exe.run(main, feed={}, fetch_list=[i])
    np.testing.assert_array_equal(res[0], [10])     # Paddle prints [array([10])]


def test_paddle_doc_example_cond_same_shapes(prog):
    """Paddle's cond example with both branches giving one shape and dtype (Paddle's own
    example, with different shapes per branch: tests/graph/test_cond_runtime_shapes.py)."""
    main, _ = prog

    def true_func():
        return paddle.full(shape=[1, 2], dtype='int32', fill_value=1), \
            paddle.full(shape=[2, 3], dtype='bool', fill_value=True)

    def false_func():
        return paddle.full(shape=[1, 2], dtype='int32', fill_value=3), \
            paddle.full(shape=[2, 3], dtype='bool', fill_value=False)
    x = paddle.full(shape=[1], dtype='float32', fill_value=0.1)
    y = paddle.full(shape=[1], dtype='float32', fill_value=0.23)
    pred = paddle.less_than(x=x, y=y, name=None)
    ret = paddle.static.nn.cond(pred, true_func, false_func)
    r0, r1 = run(main, fetch=list(ret))
    np.testing.assert_array_equal(r0, [[1, 1]])
    np.testing.assert_array_equal(r1, [[True] * 3] * 2)


def test_paddle_doc_example_case(prog):
    """Paddle's case example with fn_2/fn_3 given fn_1's shape and dtype."""
    main, _ = prog

    def fn_1():
        return paddle.full(shape=[1, 2], dtype='float32', fill_value=1)

    def fn_2():
        return paddle.full(shape=[1, 2], dtype='float32', fill_value=2)

    def fn_3():
        return paddle.full(shape=[1, 2], dtype='float32', fill_value=3)
    x = paddle.full(shape=[1], dtype='float32', fill_value=0.3)
    y = paddle.full(shape=[1], dtype='float32', fill_value=0.1)
    z = paddle.full(shape=[1], dtype='float32', fill_value=0.2)
    pred_1 = paddle.less_than(z, x)  # true: 0.2 < 0.3
    pred_2 = paddle.less_than(x, y)  # false: 0.3 < 0.1
    pred_3 = paddle.equal(x, y)      # false: 0.3 == 0.1
    out_1 = paddle.static.nn.case(pred_fn_pairs=[(pred_1, fn_1), (pred_2, fn_2)], default=fn_3)
    out_2 = paddle.static.nn.case(pred_fn_pairs=[(pred_2, fn_2), (pred_3, fn_3)])
    res_1, res_2 = run(main, fetch=[out_1, out_2])
    np.testing.assert_array_equal(res_1, [[1., 1.]])    # fn_1: pred_1 holds
    np.testing.assert_array_equal(res_2, [[3., 3.]])    # fn_3: the last pair is the default


def test_paddle_doc_example_switch_case(prog):
    main, _ = prog

    def fn_1():
        return paddle.full(shape=[2, 2], dtype='int32', fill_value=1)

    def fn_2():
        return paddle.full(shape=[2, 2], dtype='int32', fill_value=2)

    def fn_3():
        return paddle.full(shape=[2, 2], dtype='int32', fill_value=3)
    index_1 = paddle.full(shape=[1], dtype='int32', fill_value=1)
    index_2 = paddle.full(shape=[1], dtype='int32', fill_value=2)
    out_1 = paddle.static.nn.switch_case(branch_index=index_1, branch_fns={1: fn_1, 2: fn_2},
                                         default=fn_3)
    out_2 = paddle.static.nn.switch_case(branch_index=index_2, branch_fns=[(1, fn_1), (2, fn_2)],
                                         default=fn_3)
    # default None and no index matches: fn_3, the function of the largest index (7)
    out_3 = paddle.static.nn.switch_case(branch_index=index_2,
                                         branch_fns=[(0, fn_1), (4, fn_2), (7, fn_3)])
    res_1, res_2, res_3 = run(main, fetch=[out_1, out_2, out_3])
    np.testing.assert_array_equal(res_1, np.full((2, 2), 1))
    np.testing.assert_array_equal(res_2, np.full((2, 2), 2))
    np.testing.assert_array_equal(res_3, np.full((2, 2), 3))


def test_switch_case_and_case_argument_errors(prog):
    i = paddle.full([1], 0, "int64")
    with pytest.raises(ValueError, match="branch indexes must be unique"):
        static.nn.switch_case(i, [(1, lambda: i), (1, lambda: i)])
    with pytest.raises(TypeError, match="branch_index must be an int32/int64"):
        static.nn.switch_case(paddle.full([1], 0.5), [lambda: i])
    with pytest.raises(TypeError, match=r"\(pred, callable\) pair"):
        static.nn.case([(i < 1, 3)])


def test_inference_model_with_cond_and_while_round_trips(prog, tmp_path):
    """numbaflow's own model files and Paddle's ProgramDesc keep the sub-blocks."""
    main, startup = prog
    x = static.data("x", [None, 3], "float32")
    h = static.nn.fc(x, 4)
    y = static.nn.cond(paddle.mean(x) > 0, lambda: h * 2.0, lambda: paddle.exp(h))
    n = paddle.full([1], 0, "int64")
    z, n = static.nn.while_loop(lambda z, n: n < 3, lambda z, n: [z * 0.5 + 1.0, n + 1], [y, n])
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = np.random.default_rng(0).normal(size=(2, 3)).astype("float32")
    want, = exe.run(main, feed={"x": xv}, fetch_list=[z])
    static.save_inference_model(str(tmp_path / "m"), [x], [z], exe, program=main)
    loaded, feeds, fetches = static.load_inference_model(str(tmp_path / "m"), exe)
    got, = exe.run(loaded, feed={feeds[0]: xv}, fetch_list=fetches)
    np.testing.assert_array_equal(got, want)
    assert loaded.num_blocks == main.num_blocks and verify(loaded)
    # Paddle's ProgramDesc keeps them too (tests/io/test_paddle_control_flow_models.py)
    static.save_inference_model(str(tmp_path / "p"), [x], [z], exe, program=main,
                                format="paddle")
    loaded, feeds, fetches = static.load_inference_model(str(tmp_path / "p"), exe)
    got, = exe.run(loaded, feed={feeds[0]: xv}, fetch_list=fetches)
    np.testing.assert_array_equal(got, want)
    assert loaded.num_blocks == main.num_blocks       # ONNX: tests/io/test_onnx_control_flow.py
