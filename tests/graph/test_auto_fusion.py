"""auto_fusion (BuildStrategy.enable_auto_fusion): which ops it fuses in canonical training
graphs, the kernels it generates, and that training with it equals training without it."""
import collections
import glob
import os

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.graph.passes import Pass, get_pass
from numbaflow.kernels.fused.fused_elementwise import parse_ops
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs
from simulator import run_sim

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.fixture(autouse=True)
def fuse_whatever_it_costs(monkeypatch):
    """These tests check the rewrite itself on small graphs, where the cost rule would
    refuse most groups (its decisions are tested in tests/graph/test_fusion_cost.py)."""
    monkeypatch.setattr(Pass, "cost_rule", False)


# ---------------------------------------------------------------- graphs
def fc_relu(opt=None):
    """fc(relu) -> mean, trained with SGD."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 6])
        h = static.nn.fc(x, 5, activation="relu")
        loss = paddle.mean(h)
        (opt or paddle.optimizer.SGD(0.1)).minimize(loss)
    return main, startup, loss


def mlp(opt):
    """3-layer MLP with softmax_with_cross_entropy."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 6])
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 8, activation="relu")
        h = static.nn.fc(h, 8, activation="relu")
        logits = static.nn.fc(h, 3)
        loss = paddle.mean(paddle.nn.functional.softmax_with_cross_entropy(logits, y))
        opt.minimize(loss)
    return main, startup, loss


def conv_net(opt):
    """conv2d + bias + relu -> max pool -> fc -> cross entropy."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 2, 6, 6])
        y = static.data("y", [None, 1], "int64")
        c = static.nn.conv2d(x, 3, 3, padding=1, act="relu")
        p = paddle.nn.functional.max_pool2d(c, 2)
        logits = static.nn.fc(p, 3)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        opt.minimize(loss)
    return main, startup, loss


def passed(main, protected=()):
    """(the program after auto_fusion, the pass); the IR is verified."""
    g = static.Graph(main)
    g.apply_pass("auto_fusion", protected=protected)
    verify(g.program)
    return g.program, g.applied_passes[-1]


def types(program):
    return [op.type for op in program.global_block().ops]


def sub_ops(op):
    return [t for t, _, _, _ in parse_ops(op.attr("ops"))]


def fused(program):
    return [op for op in program.global_block().ops if op.type == "fused_elementwise"]


# ---------------------------------------------------------------- what gets fused
def test_fc_relu_training_graph():
    main, _, loss = fc_relu()
    before = types(main)
    program, _ = passed(main, [loss.name])
    assert types(program) == ["fused_elementwise", "fill_constant", "reduce_mean_grad",
                              "fused_elementwise", "mul_grad", "sgd", "sgd"]
    assert len(program.global_block().ops) == len(before) - 4        # 4 ops fewer
    fwd, bwd = fused(program)
    # the matmul (epilogue: bias add + relu) and the mean (prologue) joined the group
    assert sub_ops(fwd) == ["mul", "elementwise_add", "relu", "reduce_mean"]
    assert fwd.input_arg_names == ["x", "fc_0.w_0", "fc_0.b_0"]
    # the matmul output is read by add_grad, the relu output by relu_grad; the
    # pre-activation stays in registers
    assert fwd.output_arg_names == ["fc_0.tmp_0", "fc_0.tmp_2", loss.name]
    assert not program.global_block().has_var("fc_0.tmp_1")
    assert sub_ops(bwd) == ["relu_grad", "elementwise_add_grad"]
    assert bwd.output_arg_names == ["fc_0.tmp_0@GRAD", "fc_0.b_0@GRAD"]
    assert (fwd.role, bwd.role) == ("forward", "backward")
    assert types(main) == before            # the user's program is not touched


def test_mlp_training_graph_and_refusals():
    main, _, loss = mlp(paddle.optimizer.Adam(0.01))
    n_before = len(main.global_block().ops)
    program, p = passed(main, [loss.name])
    count = collections.Counter(types(program))
    # forward: 2 x (mul + add + relu), mul + add; backward: 2 x (relu_grad + add_grad)
    assert count["fused_elementwise"] == 5
    assert [sub_ops(op) for op in fused(program)] == [
        ["mul", "elementwise_add", "relu"]] * 2 + [["mul", "elementwise_add"]] + [
        ["relu_grad", "elementwise_add_grad"]] * 2
    assert count["elementwise_add_grad"] == 1           # the last fc's, alone
    assert not {"mul", "elementwise_add", "relu", "relu_grad"} & set(count)
    assert count["adam"] == 6 and count["scale"] == 0      # adam advances its beta powers
    assert len(program.global_block().ops) == n_before - 7
    reasons = dict(p.refusals)
    # every candidate left alone says why
    assert "optimizer update" in reasons[
        "adam(fc_0.w_0, fc_0.w_0_moment1_0, fc_0.w_0_moment2_0, fc_0.w_0_beta1_pow_acc_0, "
        "fc_0.w_0_beta2_pow_acc_0)"]
    assert "different roles" in reasons["relu -> relu_grad via fc_0.tmp_2"]


def test_conv_net_training_graph():
    main, _, loss = conv_net(paddle.optimizer.SGD(0.1))
    program, _ = passed(main, [loss.name])
    conv_fwd, fc_fwd, conv_bwd = fused(program)
    assert sub_ops(conv_fwd) == ["elementwise_add", "relu"]      # bias on axis 1 of NCHW
    assert conv_fwd.input_arg_names == ["conv2d_0.tmp_0", "conv2d_0.b_0"]
    assert sub_ops(fc_fwd) == ["mul", "elementwise_add"]
    assert sub_ops(conv_bwd) == ["relu_grad", "elementwise_add_grad"]
    assert conv_bwd.output_arg_names == ["conv2d_0.tmp_0@GRAD", "conv2d_0.b_0@GRAD"]
    assert types(program)[:3] == ["conv2d", "fused_elementwise", "pool2d"]


def test_non_convex_group_is_refused():
    """relu -> (matmul) -> add with the relu output also read by the add: fusing relu and
    add would put the matmul both before and after the fused op."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [4, 4])
        w = static.data("w", [4, 4])
        a = paddle.nn.functional.relu(x)
        b = paddle.matmul(a, w)
        c = paddle.nn.functional.sigmoid(a + b)
    program, p = passed(main, [c.name])
    assert types(program) == ["relu", "fused_elementwise"]
    # the matmul still joins as the epilogue's head: relu alone is outside
    assert sub_ops(fused(program)[0]) == ["matmul_v2", "elementwise_add", "sigmoid"]
    assert any("not be convex" in r and "matmul_v2" in r for _, r in p.refusals), p.refusals
    xv, wv = np.random.default_rng(0).standard_normal((2, 4, 4)).astype("float32")
    exe = static.Executor(paddle.CPUPlace())
    want, = exe.run(main, feed={"x": xv, "w": wv}, fetch_list=[c])
    got, = exe.run(program, feed={"x": xv, "w": wv}, fetch_list=[c])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_group_is_placed_after_what_it_reads():
    """z = relu(x); q = softmax(x) between; s = tanh(z + q): the fused (relu, add, tanh)
    needs q, so the softmax moves before it."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [3, 3])
        z = paddle.nn.functional.relu(x)
        q = paddle.nn.functional.softmax(x)
        s = paddle.nn.functional.tanh(z + q)
    program, _ = passed(main, [s.name])
    assert types(program) == ["softmax", "fused_elementwise"]
    assert sub_ops(fused(program)[0]) == ["relu", "elementwise_add", "tanh"]
    xv = np.random.default_rng(1).standard_normal((3, 3)).astype("float32")
    exe = static.Executor(paddle.CPUPlace())
    want, = exe.run(main, feed={"x": xv}, fetch_list=[s])
    got, = exe.run(program, feed={"x": xv}, fetch_list=[s])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_group_made_non_convex_by_an_earlier_fusion_is_refused():
    """B = {u = 2v, r = u * gy} and A = {w = z + u, (gz, gy) = add_grad(z, u2, g), q = w * gz}
    are each convex, but once B is one op, a2 -> B -> a1 runs through A: A is refused."""
    main = static.Program()
    block = main.global_block()
    data = {n: block.create_var(n, s, "float32", is_data=True)
            for n, s in [("v", (4,)), ("z", (3, 4)), ("u2", (4,)), ("g", (3, 4))]}
    var = {n: block.create_var(n, s, "float32")
           for n, s in [("u", (4,)), ("w", (3, 4)), ("gz", (3, 4)), ("gy", (4,)),
                        ("r", (4,)), ("q", (3, 4))]}
    block.append_op("scale", {"X": data["v"]}, {"Out": var["u"]}, {"scale": 2.0})
    block.append_op("elementwise_add", {"X": data["z"], "Y": var["u"]}, {"Out": var["w"]})
    block.append_op("elementwise_add_grad", {"X": data["z"], "Y": data["u2"],
                                             "Out@GRAD": data["g"]},
                    {"X@GRAD": var["gz"], "Y@GRAD": var["gy"]})
    block.append_op("elementwise_mul", {"X": var["u"], "Y": var["gy"]}, {"Out": var["r"]})
    block.append_op("elementwise_mul", {"X": var["w"], "Y": var["gz"]}, {"Out": var["q"]})
    program, p = passed(main, ["r", "q"])
    assert types(program) == ["elementwise_add_grad", "fused_elementwise", "elementwise_add",
                              "elementwise_mul"]
    assert sub_ops(fused(program)[0]) == ["scale", "elementwise_mul"]
    assert any("no longer convex" in r for _, r in p.refusals), p.refusals
    rng = np.random.default_rng(2)
    feed = {n: rng.standard_normal(v.shape).astype("float32") for n, v in data.items()}
    exe = static.Executor(paddle.CPUPlace())
    want = exe.run(main, feed=feed, fetch_list=["r", "q"])
    got = exe.run(program, feed=feed, fetch_list=["r", "q"])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_mixed_float_dtypes_are_refused():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2, 3])
        y = paddle.nn.functional.relu(paddle.cast(paddle.nn.functional.relu(x), "float64"))
    program, p = passed(main, [y.name])
    assert "fused_elementwise" not in types(program)
    assert any("mixes float dtypes ['float32', 'float64']" in r for _, r in p.refusals)


def test_bad_descriptions_are_rejected_with_a_reason():
    from numbaflow.kernels import run_op
    from numbaflow.kernels.fused.fused_elementwise import make_ops
    x = np.ones((2, 3))
    reads_early = make_ops([("relu", {}, {"X": [("tmp", 0)]}, {"Out": [("out", 0)]})])
    with pytest.raises(ValueError, match="reads \\('tmp', 0\\) before any sub-op defines it"):
        run_op("fused_elementwise", {"X": [x]}, {"ops": reads_early})
    not_elementwise = make_ops([("relu", {}, {"X": [("x", 0)]}, {"Out": [("tmp", 0)]}),
                                ("transpose2", {}, {"X": [("tmp", 0)]}, {"Out": [("out", 0)]})])
    with pytest.raises(ValueError, match="not an elementwise op"):
        run_op("fused_elementwise", {"X": [x]}, {"ops": not_elementwise})
    two_shapes = make_ops([("relu", {}, {"X": [("x", 0)]}, {"Out": [("out", 0)]}),
                           ("relu", {}, {"X": [("x", 1)]}, {"Out": [("out", 1)]})])
    with pytest.raises(ValueError, match="one iteration shape"):
        run_op("fused_elementwise", {"X": [x, np.ones(3)]}, {"ops": two_shapes})


def test_protected_variables_stay_outputs():
    main, _, loss = fc_relu()
    program, _ = passed(main, [loss.name, "fc_0.tmp_1"])
    fwd = fused(program)[0]
    assert fwd.output_arg_names == ["fc_0.tmp_0", "fc_0.tmp_1", "fc_0.tmp_2", loss.name]


def test_pass_object_directly():
    main, _, loss = fc_relu()
    p = get_pass("auto_fusion", protected=[loss.name])
    program = main.clone()
    assert p.run(program) is True
    verify(program)
    assert p.run(program) is False      # nothing left to fuse


def test_fused_program_survives_serialisation():
    """The `ops` attribute is plain values: a passed program round-trips through JSON."""
    import json

    from numbaflow.graph.serialize import program_from_dict, program_to_dict
    main, startup, loss = regression(paddle.optimizer.SGD(0.1))
    program, _ = passed(main, [loss.name])
    back = program_from_dict(json.loads(json.dumps(program_to_dict(program))))
    verify(back)
    assert types(back) == types(program)
    feed = {"x": np.ones((2, 6), "float32"), "y": np.zeros((2, 1), "float32")}
    exe = static.Executor(paddle.CPUPlace())
    results = []
    for prog in (program, back):
        scope = static.Scope()
        exe.run(startup, scope=scope)
        results.append(exe.run(prog, feed=feed, fetch_list=[loss.name], scope=scope)[0])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


# ---------------------------------------------------------------- numerics
def train(build, opt, feeds, fused_run, fetch_extra=()):
    """Losses (and extra fetches) of len(feeds) steps, and the final parameters."""
    paddle.seed(3)
    with unique_name.guard():
        main, startup, loss = build(opt)
    scope = static.Scope()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup, scope=scope)
    prog = main
    if fused_run:
        bs = static.BuildStrategy()
        bs.enable_auto_fusion = True
        prog = static.CompiledProgram(main, build_strategy=bs)
    text = str(main)
    out = [exe.run(prog, feed=f, fetch_list=[loss, *fetch_extra], scope=scope) for f in feeds]
    assert str(main) == text            # the user's program is never rewritten
    params = {p.name: scope.get(p.name) for p in main.all_parameters()}
    return out, params, prog


def _batches(shape, n=3, classes=3):
    rng = np.random.default_rng(7)
    return [{"x": rng.standard_normal(shape).astype("float32"),
             "y": rng.integers(0, classes, (shape[0], 1)).astype("int64")} for _ in range(n)]


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_mlp_training_equals_unfused(opt):
    make = {"sgd": lambda: paddle.optimizer.SGD(0.2),
            "adam": lambda: paddle.optimizer.Adam(0.05)}[opt]
    feeds = _batches((8, 6))
    # fc_0.tmp_1 is an intermediate inside a fused group: fetching it keeps it an output
    want, want_p, _ = train(mlp, make(), feeds, False, ["fc_0.tmp_1"])
    got, got_p, compiled = train(mlp, make(), feeds, True, ["fc_0.tmp_1"])
    program, = passed_programs(compiled)
    assert collections.Counter(types(program))["fused_elementwise"] == 5
    assert "fc_0.tmp_1" in fused(program)[0].output_arg_names
    for (gl, gh), (wl, wh) in zip(got, want):
        np.testing.assert_allclose(gl, wl, rtol=1e-5)
        np.testing.assert_allclose(gh, wh, rtol=1e-5, atol=1e-6)
    assert not np.allclose(want[0][0], want[-1][0])        # it did train
    for n in want_p:
        np.testing.assert_allclose(got_p[n], want_p[n], rtol=1e-5, atol=1e-6, err_msg=n)


def test_conv_net_training_equals_unfused():
    feeds = _batches((2, 2, 6, 6), n=2)
    want, want_p, _ = train(conv_net, paddle.optimizer.SGD(0.1), feeds, False)
    got, got_p, compiled = train(conv_net, paddle.optimizer.SGD(0.1), feeds, True)
    assert next(p for p in compiled.passes if p.name == "auto_fusion").changed
    np.testing.assert_allclose([g[0] for g in got], [w[0] for w in want], rtol=1e-5)
    for n in want_p:
        np.testing.assert_allclose(got_p[n], want_p[n], rtol=1e-5, atol=1e-6, err_msg=n)


def regression(opt):
    """fc(x, 1) -> mse loss: mul, add, sub, square, mean are one forward op."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 6])
        y = static.data("y", [None, 1])
        loss = paddle.nn.functional.mse_loss(static.nn.fc(x, 1), y)
        opt.minimize(loss)
    return main, startup, loss


def test_matmul_epilogue_and_reduction_prologue_training():
    rng = np.random.default_rng(4)
    feeds = [{"x": rng.standard_normal((5, 6)).astype("float32"),
              "y": rng.standard_normal((5, 1)).astype("float32")} for _ in range(3)]
    want, want_p, _ = train(regression, paddle.optimizer.SGD(0.1), feeds, False)
    got, got_p, compiled = train(regression, paddle.optimizer.SGD(0.1), feeds, True)
    program, = passed_programs(compiled)
    fwd, bwd = fused(program)
    assert sub_ops(fwd) == ["mul", "elementwise_add", "elementwise_sub", "square",
                            "reduce_mean"]
    assert sub_ops(bwd) == ["square_grad", "elementwise_sub_grad", "elementwise_add_grad"]
    np.testing.assert_allclose([g[0] for g in got], [w[0] for w in want], rtol=1e-5)
    for n in want_p:
        np.testing.assert_allclose(got_p[n], want_p[n], rtol=1e-5, atol=1e-6, err_msg=n)


def test_ops_the_executor_would_skip_are_not_fused():
    """Fetching only the prediction of a test program must not need the label: the loss
    ops (sub, square, mean) stay out of the fused op."""
    main, startup, _ = regression(paddle.optimizer.SGD(0.1))
    test = main.clone(for_test=True)
    pred = test.global_block().var("fc_0.tmp_1")
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    bs = static.BuildStrategy()
    bs.enable_auto_fusion = True
    compiled = static.CompiledProgram(test, build_strategy=bs)
    xv = np.random.default_rng(6).standard_normal((4, 6)).astype("float32")
    got, = exe.run(compiled, feed={"x": xv}, fetch_list=[pred])
    want, = exe.run(test, feed={"x": xv}, fetch_list=[pred])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    program, = passed_programs(compiled)
    assert [sub_ops(op) for op in fused(program)] == [["mul", "elementwise_add"]]
    assert any("the executor skips it" in r for _, r in compiled.passes[-1].refusals)


def test_softmax_prologue_in_an_inference_program():
    """mul + bias add + softmax: the add's output exists only in the op's scratch."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 5])
        prob = paddle.nn.functional.softmax(static.nn.fc(x, 4) * 3.0)
    program, _ = passed(main, [prob.name])
    assert types(program) == ["fused_elementwise"]
    assert sub_ops(fused(program)[0]) == ["mul", "elementwise_add", "scale", "softmax"]
    assert fused(program)[0].output_arg_names == [prob.name]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = np.random.default_rng(5).standard_normal((3, 5)).astype("float32")
    want, = exe.run(main, feed={"x": xv}, fetch_list=[prob])
    got, = exe.run(program, feed={"x": xv}, fetch_list=[prob])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)


# ---------------------------------------------------------------- generated source
def _dumped_fused_kernels(monkeypatch, tmp_path, run):
    """Run `run()` with NUMBAFLOW_DUMP_DIR set and empty in-process kernel caches (so
    every kernel is loaded, hence dumped); return {file name: source}."""
    from numbaflow.kernels.codegen import cache, cpu
    monkeypatch.setenv("NUMBAFLOW_DUMP_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "loaded_modules", {})
    monkeypatch.setattr(cpu, "compiled_kernels", {})
    run()
    return {os.path.basename(f): open(f, encoding="utf-8").read() for f in glob.glob(str(tmp_path / "*.py"))}


def _numpy_chain(sub_ops, xs):
    """An independent numpy evaluation of a fused op's description, for the op types the
    fc + relu training graph fuses: {(kind, index): value}, the fused op's slots."""
    vals = {("x", i): x.astype(np.float64) for i, x in enumerate(xs)}
    for t, _, ins, outs in sub_ops:
        a = {slot: vals[refs[0]] for slot, refs in ins.items()}
        if t == "mul":
            res = {"Out": a["X"] @ a["Y"]}
        elif t == "elementwise_add":
            res = {"Out": a["X"] + a["Y"]}
        elif t == "relu":
            res = {"Out": np.maximum(a["X"], 0)}
        elif t == "reduce_mean":
            res = {"Out": np.mean(a["X"])}
        elif t == "relu_grad":
            res = {"X@GRAD": np.where(a["Out"] > 0, a["Out@GRAD"], 0)}
        elif t == "elementwise_add_grad":
            res = {"X@GRAD": a["Out@GRAD"], "Y@GRAD": a["Out@GRAD"].sum(axis=0)}
        else:
            raise AssertionError(f"no numpy reference for {t}")
        for slot, refs in outs.items():
            vals[refs[0]] = res[slot]
    return vals


def test_generated_kernels_compute_their_chain_in_one_loop(monkeypatch, tmp_path):
    """The kernels auto_fusion generates for fc + relu training give numpy's results for
    their op chain, each makes one pass over the elements (one loop), and the source run
    is the on-disk cache entry."""
    from numbaflow import config
    from numbaflow.kernels import run_op
    main, startup, loss = fc_relu()
    program, _ = passed(main, [loss.name])
    ops = fused(program)
    assert [sub_ops(op) for op in ops] == [["mul", "elementwise_add", "relu", "reduce_mean"],
                                           ["relu_grad", "elementwise_add_grad"]]
    block, rng = program.global_block(), np.random.default_rng(0)

    def run_all():
        for op in ops:
            xs = [rng.standard_normal([4 if d < 0 else d for d in block.var(n).shape])
                  .astype("float32") for n in op.input("X")]
            got = run_op("fused_elementwise", {"X": xs}, {"ops": op.attr("ops")})["Out"]
            want = _numpy_chain(parse_ops(op.attr("ops")), xs)
            assert len(got) == len(op.output("Out"))
            for i, g in enumerate(got):
                np.testing.assert_allclose(g, want["out", i], rtol=1e-5, atol=1e-6,
                                           err_msg=f"{sub_ops(op)} output {i}")
    sources = _dumped_fused_kernels(monkeypatch, tmp_path, run_all)
    assert len(sources) == 2, sorted(sources)        # one kernel per fused op
    for name, src in sources.items():
        assert src.count("for jj in range(") == 1, src       # one pass over the elements
        digest = name.rsplit("_", 1)[1][:-3]
        with open(os.path.join(config.kernel_cache_dir(), f"nfk_{digest}.py")) as f:
            assert f.read() == src


# ---------------------------------------------------------------- GPU (CUDA simulator)

@pytest.mark.gpu
@pytest.mark.slow
def test_fused_training_on_simulated_gpu_matches_cpu():
    assert "ok" in run_sim("auto_fusion", timeout=300).stdout
