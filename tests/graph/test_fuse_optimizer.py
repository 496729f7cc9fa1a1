"""fuse_all_optimizer_ops: one fused update op (and one generated kernel) per optimizer
type and dtype; training through CompiledProgram gives the unfused numbers; every group
it leaves alone is refused with a reason."""
import functools

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.kernels.optim import multi_update
from numbaflow.kernels import get_op_def, run_op
from numbaflow.kernels.registry import ConcreteOp, VarInfo, build_kernel
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs
from simulator import run_sim

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

B, D, H, C = 8, 6, 7, 3
OPTIMIZERS = {
    "sgd": lambda: paddle.optimizer.SGD(0.1),
    "momentum": lambda: paddle.optimizer.Momentum(0.1, 0.9),
    "momentum_nesterov": lambda: paddle.optimizer.Momentum(0.1, 0.8, use_nesterov=True),
    "adam_decay_clip": lambda: paddle.optimizer.Adam(
        0.05, weight_decay=0.01, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.5)),
    "adamw": lambda: paddle.optimizer.AdamW(0.05, weight_decay=0.02),
}


def mlp(opt, dtype="float32"):
    """x -> fc(relu) -> fc(relu, weight at half the learning rate) -> fc -> cross_entropy."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D], dtype)
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, H, activation="relu")
        h = static.nn.fc(h, H, activation="relu",
                         weight_attr=paddle.ParamAttr(learning_rate=0.5))
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, C), y)
        opt.minimize(loss)
    return main, startup, loss


def batches(n=3, dtype="float32"):
    rng = np.random.default_rng(0)
    return [{"x": rng.standard_normal((B, D)).astype(dtype),
             "y": rng.integers(0, C, (B, 1)).astype(np.int64)} for _ in range(n)]


def fused_options():
    bs = static.BuildStrategy()
    bs.fuse_all_optimizer_ops = True
    return bs


def train(main, startup, loss, program, feeds):
    """Losses of one run per feed from the startup state, and every persistable after."""
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    losses = [exe.run(program, feed=f, fetch_list=[loss], scope=scope)[0] for f in feeds]
    state = {v.name: scope.get(v.name) for v in main.list_vars() if v.persistable}
    return losses, state


def op_types(program):
    return [op.type for op in program.global_block().ops]


def fused_graph(main):
    g = static.Graph(main)
    changed = g.apply_pass("fuse_all_optimizer_ops")
    verify(g.program)
    return g, changed, g.applied_passes[-1]


# ---------------------------------------------------------------- the pass on real programs
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_one_fused_op_per_optimizer(name):
    main, _, _ = mlp(OPTIMIZERS[name]())
    base = name.split("_")[0]
    assert op_types(main).count(base) == 6
    g, changed, p = fused_graph(main)
    types = op_types(g.program)
    assert changed and p.refusals == []
    assert base not in types and types.count(f"fused_{base}") == 1
    fused = next(op for op in g.program.global_block().ops if op.type == f"fused_{base}")
    assert sorted(fused.input("Param")) == sorted(v.name for v in main.all_parameters())
    assert fused.output("ParamOut") == fused.input("Param")          # in place
    assert len(set(fused.input("LearningRate"))) == 2     # the shared one and fc_1.w_0's
    assert fused.role == next(op for op in main.global_block().ops if op.type == base).role
    i = types.index(fused.type)
    assert all(not t.endswith("_grad") for t in types[i + 1:])      # after every gradient
    if base in ("adam", "adamw"):    # the fused op advances the beta powers in place
        assert types[i + 1:] == []      # no beta-power `scale` op left to run after it
        for k in (1, 2):
            assert fused.output(f"Beta{k}PowOut") == fused.input(f"Beta{k}Pow")
            assert len(set(fused.input(f"Beta{k}Pow"))) == 6
        assert fused.attr("beta1") == 0.9 and fused.attr("epsilon") == 1e-8
    assert static.Graph(g.program).apply_pass("fuse_all_optimizer_ops") is False  # idempotent
    assert fused.type not in op_types(g.program.clone(for_test=True))


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_fused_training_matches_unfused(name):
    main, startup, loss = mlp(OPTIMIZERS[name]())
    feeds = batches(3)
    want_losses, want = train(main, startup, loss, main, feeds)
    compiled = static.CompiledProgram(main, build_strategy=fused_options())
    got_losses, got = train(main, startup, loss, compiled, feeds)
    (passed,) = passed_programs(compiled)
    assert f"fused_{name.split('_')[0]}" in op_types(passed)
    # (SGD: the weights' updates are folded into their gradient GEMMs first)
    assert [p.name for p in compiled.passes if p.changed] == \
        (["fuse_sgd_into_gemm"] if name == "sgd" else []) + ["fuse_all_optimizer_ops"]
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-6)
    assert got.keys() == want.keys() and len(want) > 6       # parameters and states
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=0, err_msg=k)
    assert len(set(np.ravel(want_losses))) == 3                # the steps did train


@pytest.mark.slow
def test_one_kernel_per_type_and_dtype(monkeypatch):
    """float32 and float64 parameters under one Adam: two fused ops, two kernels."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        y = static.data("y", [None, 1], "int64")
        losses = []
        for dt in ("float32", "float64"):
            x = static.data(f"x_{dt}", [None, D], dt)
            h = static.nn.fc(static.nn.fc(x, H, activation="tanh"), C)
            losses.append(paddle.cast(paddle.nn.functional.cross_entropy(h, y), "float32"))
        loss = paddle.add(*losses)
        paddle.optimizer.Adam(0.05).minimize(loss)
    rng = np.random.default_rng(1)
    feeds = [{"x_float32": rng.standard_normal((B, D)).astype("float32"),
              "x_float64": rng.standard_normal((B, D)), "y": rng.integers(0, C, (B, 1))}
             for _ in range(2)]
    want_losses, want = train(main, startup, loss, main, feeds)
    # count the fused run's kernels (the single adam ops' beta-power kernel is one too)
    monkeypatch.setattr(multi_update, "cpu_kernels", {})
    compiled = static.CompiledProgram(main, build_strategy=fused_options())
    got_losses, got = train(main, startup, loss, compiled, feeds)
    (passed,) = passed_programs(compiled)
    fused = [op for op in passed.global_block().ops if op.type == "fused_adam"]
    assert sorted(str(op.inputs["Param"][0].dtype) for op in fused) == ["float32", "float64"]
    assert all(len(op.input("Param")) == 4 for op in fused)
    kernels = multi_update.cpu_kernels
    assert sorted(spec[2][0] for spec, *_ in kernels) == ["float32", "float64"]  # Param dtype
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-6)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=0, err_msg=k)


# ---------------------------------------------------------------- refusals and ordering
def test_lone_and_mixed_dtype_updates_are_refused_with_a_reason():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x32 = static.data("x32", [None, D], "float32")
        x64 = static.data("x64", [None, D], "float64")
        a = paddle.mean(static.nn.fc(x32, 2))                            # w and b: float32
        b = paddle.cast(paddle.mean(static.nn.fc(x64, 2, bias_attr=False)), "float32")
        paddle.optimizer.SGD(0.1).minimize(paddle.add(a, b))
    g, changed, p = fused_graph(main)
    assert changed and op_types(g.program).count("fused_sgd") == 1
    assert op_types(g.program).count("sgd") == 1
    (what, why), = p.refusals
    assert "fc_1.w_0" in what and "float64" in why and "nothing to fuse" in why
    assert "differ in dtype" in why


def _sgd_program(ops):
    """A program of persistable p*, g* (shape [3]) and lr, with `ops` [(type, ins, outs,
    attrs)] naming variables."""
    main = static.Program()
    block = main.global_block()
    names = {n for _, i, o, _ in ops for n in list(i.values()) + list(o.values())}
    for n in sorted(names):
        block.create_var(n, [1] if n == "lr" else [3], "float32", persistable=True)
    for t, i, o, a in ops:
        block.append_op(t, {k: block.var(v) for k, v in i.items()},
                        {k: block.var(v) for k, v in o.items()}, a)
    return main


def _sgd(p, g):
    return ("sgd", {"Param": p, "Grad": g, "LearningRate": "lr"}, {"ParamOut": p}, {})


def _run_state(program):
    rng = np.random.default_rng(3)
    scope = static.Scope()
    names = sorted(v.name for v in program.list_vars())
    for v in sorted(program.list_vars(), key=lambda v: v.name):
        scope.set(v.name, rng.standard_normal(v.shape).astype("float32"))
    static.Executor(paddle.CPUPlace()).run(program, scope=scope)
    return {n: scope.get(n) for n in names}


def _check_same_numbers(main, fused):
    want, got = _run_state(main), _run_state(fused)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_op_reading_an_updated_parameter_moves_after_the_fused_op():
    main = _sgd_program([_sgd("p1", "g1"),
                         ("scale", {"X": "p1"}, {"Out": "t"}, {"scale": 2.0}),   # reads p1
                         ("scale", {"X": "lr"}, {"Out": "u"}, {"scale": 3.0}),   # independent
                         _sgd("p2", "g2")])
    g, changed, p = fused_graph(main)
    assert changed and p.refusals == []
    assert op_types(g.program) == ["scale", "fused_sgd", "scale"]
    assert g.program.global_block().ops[2].input("X") == ["p1"]
    _check_same_numbers(main, g.program)


def test_group_is_refused_when_a_later_update_needs_a_moved_op():
    main = _sgd_program([_sgd("p1", "g1"),
                         ("scale", {"X": "p1"}, {"Out": "g2"}, {"scale": 2.0}),
                         _sgd("p2", "g2")])
    g, changed, p = fused_graph(main)
    assert not changed and op_types(g.program) == ["sgd", "scale", "sgd"]
    (what, why), = p.refusals
    assert "2 sgd ops" in what and "depends on the scale op" in why


def test_two_updates_of_one_parameter_stay_sequential():
    main = _sgd_program([_sgd("p1", "g1"), _sgd("p1", "g3"), _sgd("p2", "g2")])
    g, changed, p = fused_graph(main)
    assert changed and op_types(g.program) == ["fused_sgd", "sgd"]
    assert g.program.global_block().ops[0].input("Param") == ["p1", "p2"]
    (what, why), = p.refusals
    assert "['p1']" in what and "must stay sequential" in why
    _check_same_numbers(main, g.program)


def test_different_attributes_are_not_fused():
    def mom(p, g, mu):
        v = "v" + p[1]
        return ("momentum", {"Param": p, "Grad": g, "Velocity": v, "LearningRate": "lr"},
                {"ParamOut": p, "VelocityOut": v}, {"mu": mu})
    main = _sgd_program([mom("p1", "g1", 0.9), mom("p2", "g2", 0.8), mom("p3", "g3", 0.9)])
    g, changed, p = fused_graph(main)
    assert changed and op_types(g.program) == ["momentum", "fused_momentum"]
    assert len(p.refusals) == 1 and "'mu': 0.8" in p.refusals[0][1]
    _check_same_numbers(main, g.program)


# ---------------------------------------------------------------- the fused kernels
def _adam_inputs(shapes, dtype, rng):
    return {"Param": [rng.standard_normal(s).astype(dtype) for s in shapes],
            "Grad": [rng.standard_normal(s).astype(dtype) for s in shapes],
            "LearningRate": [np.array([0.01 * (i + 1)], "float32") for i in range(len(shapes))],
            "Moment1": [rng.standard_normal(s).astype(dtype) for s in shapes],
            "Moment2": [rng.uniform(0, 1, s).astype(dtype) for s in shapes],
            "Beta1Pow": [np.array([0.9 ** (i + 1)], dtype) for i in range(len(shapes))],
            "Beta2Pow": [np.array([0.999 ** (i + 1)], dtype) for i in range(len(shapes))]}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_kernel_is_one_native_call_equal_to_the_single_ops(dtype):
    ins = _adam_inputs([(3, 4), (5,), (1,), (0,), (2, 1, 3)], dtype, np.random.default_rng(4))
    thunk, outs = build_kernel("fused_adam", ins)
    assert isinstance(thunk, functools.partial)
    assert type(thunk.func).__name__ == "CPUDispatcher"        # one njit call for all five
    thunk()
    for i in range(5):
        want = run_op("adam", {k: v[i] for k, v in ins.items()})
        for slot in outs:       # Beta1PowOut/Beta2PowOut too: advanced in the same call
            np.testing.assert_array_equal(outs[slot][i], want[slot], err_msg=f"{slot}[{i}]")


def test_in_place_fused_update_stores_through_the_inputs_and_equals_the_single_ops():
    """ParamOut is Param (as in a program): the kernel variant storing through the input
    slices (vectorized; two slices of one buffer would send it to LLVM's scalar loop)
    gives the single ops' numbers, beta powers advanced in place after the update."""
    ins = _adam_inputs([(3, 4), (5,), (1,), (70,)], "float32", np.random.default_rng(7))
    want = [run_op("adamw", {k: v[i] for k, v in ins.items()}) for i in range(4)]
    fused = {k: [a.copy() for a in v] for k, v in ins.items()}
    pairs = {"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2",
             "Beta1PowOut": "Beta1Pow", "Beta2PowOut": "Beta2Pow"}
    opdef = get_op_def("fused_adamw")
    infos = {k: [VarInfo(a.shape, a.dtype) for a in v] for k, v in fused.items()}
    cop = ConcreteOp("fused_adamw", dict(opdef.attrs), infos,
                     {out: infos[src] for out, src in pairs.items()})
    thunk = opdef.cpu(cop)(fused, {out: fused[src] for out, src in pairs.items()})
    thunk()
    (aliased,) = [key[2] for key, fn in multi_update.cpu_kernels.items() if fn is thunk.func]
    assert aliased == (0, 3, 4)         # ParamOut, Moment1Out, Moment2Out through their inputs
    for i in range(4):
        for out, src in pairs.items():
            np.testing.assert_array_equal(fused[src][i], want[i][out], err_msg=f"{out}[{i}]")


def test_fused_kernel_parallel_blocks():
    """Above PARALLEL_MIN_SIZE the tasks are blocks of parameters, run in prange."""
    rng = np.random.default_rng(5)
    shapes = [(1 << 19,), (3,), (multi_update.BLOCK * 3 + 7,), (1 << 19,)]
    ins = {"Param": [rng.standard_normal(s).astype("float32") for s in shapes],
           "Grad": [rng.standard_normal(s).astype("float32") for s in shapes],
           "LearningRate": [np.array([0.5], "float32")] * len(shapes)}
    got = run_op("fused_sgd", ins)["ParamOut"]
    for i in range(len(shapes)):
        want = run_op("sgd", {k: v[i] for k, v in ins.items()})["ParamOut"]
        np.testing.assert_array_equal(got[i], want)


def test_fused_op_checks_its_slots():
    ins = _adam_inputs([(3,), (4,)], "float32", np.random.default_rng(6))
    with pytest.raises(ValueError, match="Grad has 1 entries but Param has 2"):
        run_op("fused_adam", dict(ins, Grad=ins["Grad"][:1]))
    with pytest.raises(ValueError, match=r"Moment1\[1\] .*shaped like each parameter"):
        run_op("fused_adam", dict(ins, Moment1=[ins["Moment1"][0], np.zeros(1, "float32")]))
    with pytest.raises(ValueError, match="mixes dtypes"):
        run_op("fused_adam", dict(ins, Grad=[ins["Grad"][0], ins["Grad"][1].astype("f8")]))
    assert get_op_def("fused_adam").attrs == get_op_def("adam").attrs


# ---------------------------------------------------------------- GPU (simulator)

@pytest.mark.gpu
@pytest.mark.slow
def test_fused_kernels_on_simulated_gpu_match_cpu():
    # 4 fused ops x 2 dtypes x 2 launch budgets
    assert "checked 16" in run_sim("fused_optimizer").stdout
