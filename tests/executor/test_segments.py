"""Compiled segments: once a plan is hot, runs of numba kernels execute as one generated
njit function; the numbers are those of the op-by-op run, new fed arrays are picked up
without recompiling, errors still name the op, and K iterations loop inside the segment."""
import glob
import os

import numpy as np
import pytest
from child import run_script

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.executor import plan as plan_mod
from numbaflow.executor.plan import PlanOptions
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import last_plan
from numbaflow.executor.executor import cached_plans, plain_runner

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def seed_net():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data(name="X", shape=[None, 1], dtype="float32")
        hidden = static.nn.fc(x=x, size=10)
        loss = paddle.mean(hidden)
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def mlp():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 6], "float32")
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 8, activation="relu")
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 3), y)
        paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)
    return main, startup, loss


def feeds(n, rng=None):
    rng = rng or np.random.default_rng(0)
    return [{"x": rng.standard_normal((5, 6)).astype(np.float32),
             "y": rng.integers(0, 3, (5, 1)).astype(np.int64)} for _ in range(n)]


def run_steps(main, startup, loss, batches, segments):
    exe = static.Executor()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    out = []
    for k, f in enumerate(batches):
        plan, arrays = plain_runner(exe).cache.plan_for(main, f, [loss], scope,
                                                        PlanOptions(segments=segments))
        out.append(plan.run(arrays)[0])
        if k == plan_mod.HOT_RUNS - 1:
            plan.wait_compiled()      # the later steps run the compiled segments
    return out, scope, plan


def test_hot_plan_runs_segments_with_the_op_by_op_numbers():
    main, startup, loss = mlp()
    batches = feeds(plan_mod.HOT_RUNS + 4)       # a new array object every step
    ref, ref_scope, ref_plan = run_steps(main, startup, loss, batches, segments=False)
    got, scope, plan = run_steps(main, startup, loss, batches, segments=True)
    assert ref_plan.units is None
    assert plan.units is not None
    segs = [u for u in plan.units if u.segment]
    assert segs and len(plan.units) < len(plan.ops)
    assert all(u.compiled for u in segs)
    covered = sum(len(u.ops) for u in segs)
    assert covered >= len(plan.ops) - 2, [plan.ops[u.ops[0]].type for u in plan.units
                                          if not u.segment]
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    for p in main.all_parameters():
        np.testing.assert_allclose(scope.get(p.name), ref_scope.get(p.name), rtol=1e-6)


def test_seed_step_is_one_segment_and_k_iterations_loop_inside_it():
    main, startup, loss = seed_net()
    x = np.random.default_rng(1).random((10, 1)).astype(np.float32)
    exe = static.Executor()
    s1, s2 = static.Scope(), static.Scope()
    for s in (s1, s2):
        exe.run(startup, scope=s)
    es = static.ExecutionStrategy()
    es.num_iteration_per_run = 5
    c = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, exec_strategy=es, places=[paddle.CPUPlace()])
    got, = exe.run(c, feed={"X": x}, fetch_list=[loss], scope=s1)   # op by op
    last_plan(c).wait_compiled()
    got, = exe.run(c, feed={"X": x}, fetch_list=[loss], scope=s1)   # in the segment
    units = last_plan(c).units
    assert len(units) == 1 and units[0].segment and units[0].compiled
    assert units[0].compiled_loop is not None
    assert len(units[0].ops) == len(last_plan(c).ops)
    for _ in range(10):
        want, = exe.run(main, feed={"X": x}, fetch_list=[loss], scope=s2)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(s1.get("fc_0.w_0"), s2.get("fc_0.w_0"), rtol=1e-6)


def test_iterator_feed_gives_one_step_per_item():
    main, startup, loss = mlp()
    batches = feeds(3)
    exe = static.Executor()
    s1 = static.Scope()
    exe.run(startup, scope=s1)
    es = static.ExecutionStrategy()
    es.num_iteration_per_run = 3
    c = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, exec_strategy=es, places=[paddle.CPUPlace()])
    got, = exe.run(c, feed=iter(batches), fetch_list=[loss], scope=s1)
    ref, ref_scope, _ = run_steps(main, startup, loss, batches, segments=False)
    np.testing.assert_allclose(got, ref[-1], rtol=1e-6)
    np.testing.assert_allclose(s1.get("fc_0.w_0"), ref_scope.get("fc_0.w_0"), rtol=1e-6)
    with pytest.raises(ValueError, match="ended after 1 feeds"):
        exe.run(c, feed=iter(batches[:1]), fetch_list=[loss], scope=s1)


def test_error_inside_a_segment_names_the_op_and_restores_the_parameters():
    main, startup, loss = mlp()
    batches = feeds(plan_mod.HOT_RUNS + 1)
    exe = static.Executor()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    for f in batches:
        exe.run(main, feed=f, fetch_list=[loss], scope=scope)
    plan = cached_plans(exe)[-1]
    plan.wait_compiled()
    assert plan.units is not None and any(u.compiled for u in plan.units)
    before = {p.name: scope.get(p.name).copy() for p in main.all_parameters()}
    bad = dict(batches[0], y=np.full((5, 1), 7, np.int64))
    with pytest.raises(ValueError, match=r"softmax_with_cross_entropy.*label 7"):
        exe.run(main, feed=bad, fetch_list=[loss], scope=scope)
    for k, v in before.items():
        np.testing.assert_array_equal(scope.get(k), v)


def test_segment_source_is_dumped(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBAFLOW_DUMP_DIR", str(tmp_path))
    main, startup, loss = seed_net()
    x = np.ones((3, 1), np.float32)
    exe = static.Executor()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    es = static.ExecutionStrategy()
    es.num_iteration_per_run = 2
    c = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, exec_strategy=es, places=[paddle.CPUPlace()])
    from numbaflow.kernels.codegen import cache
    monkeypatch.setattr(cache, "loaded_modules", {})        # force a (re)load, hence a dump
    exe.run(c, feed={"X": x}, fetch_list=[loss], scope=scope)
    last_plan(c).wait_compiled()
    dumped = glob.glob(os.path.join(str(tmp_path), "segment_*.py"))
    assert dumped
    text = open(dumped[0], encoding="utf-8").read()
    assert "def segment(" in text and "def segment_loop(k" in text
    assert "numbaflow.kernels.math.gemm_cpu" in text          # the matmul kernel is a callee


def tanh_net():
    """A net of its own (tanh, three layers, scale): its segments are new to this test
    session, so they compile cold."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data(name="x", shape=[None, 12], dtype="float32")
        h = static.nn.fc(x, 24, activation="tanh")
        h = static.nn.fc(h, 24, activation="tanh")
        out = paddle.scale(static.nn.fc(h, 3), scale=0.5)
        loss = paddle.mean(out * out)
        paddle.optimizer.SGD(learning_rate=0.05).minimize(loss)
    return main, startup, loss


def test_background_compile_swaps_in_mid_training_with_bit_identical_numbers():
    main, startup, loss = tanh_net()
    rng = np.random.default_rng(3)
    batches = [{"x": rng.standard_normal((6, 12)).astype(np.float32)} for _ in range(60)]
    exe = static.Executor()
    ref_scope, scope = static.Scope(), static.Scope()
    exe.run(startup, scope=ref_scope)
    for k in ref_scope.local_var_names():
        scope.set(k, ref_scope.get(k))
    modes = []
    for f in batches:
        ref_plan, arrays = plain_runner(exe).cache.plan_for(main, f, [loss], ref_scope,
                                                            PlanOptions(segments=False))
        want = ref_plan.run(arrays)[0]
        plan, arrays = plain_runner(exe).cache.plan_for(main, f, [loss], scope,
                                                        PlanOptions(segments=True))
        got = plan.run(arrays)[0]         # never waits: op by op until pieces are ready
        modes.append(sum(u.compiled for u in plan.units or []))
        np.testing.assert_array_equal(got, want)
    plan.wait_compiled()
    plan.run(arrays)
    ref_plan.run(arrays)
    for p in main.all_parameters():
        np.testing.assert_array_equal(scope.get(p.name), ref_scope.get(p.name))
    assert modes[0] == 0 and all(u.compiled for u in plan.units if u.segment)


def test_a_program_changed_while_its_compile_is_in_flight_never_uses_the_stale_segment():
    main, startup, loss = tanh_net()
    rng = np.random.default_rng(4)
    f = {"x": rng.standard_normal((6, 12)).astype(np.float32)}
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    test_prog = main.clone(for_test=True)
    for _ in range(plan_mod.HOT_RUNS):
        exe.run(test_prog, feed=f, fetch_list=[loss], scope=scope)
    old_plan = cached_plans(exe)[-1]
    assert old_plan.compiling is not None or old_plan.units is not None   # started
    scale_op = next(op for op in test_prog.global_block().ops if op.type == "scale")
    scale_op._set_attr("scale", 2.0)
    for _ in range(plan_mod.HOT_RUNS + 4):
        got, = exe.run(test_prog, feed=f, fetch_list=[loss], scope=scope)
    new_plan = cached_plans(exe)[-1]
    assert new_plan is not old_plan
    new_plan.wait_compiled()
    got, = exe.run(test_prog, feed=f, fetch_list=[loss], scope=scope)
    old_plan.wait_compiled()
    # the reference: numpy with the new scale
    h = f["x"]
    for i in range(3):
        h = h @ scope.get(f"fc_{i}.w_0") + scope.get(f"fc_{i}.b_0")
        if i < 2:
            h = np.tanh(h)
    np.testing.assert_allclose(got, np.mean((2.0 * h) ** 2), rtol=1e-5)


@pytest.mark.slow
def test_exit_during_a_background_compile_is_clean(tmp_path):
    """A process that ends while its segments compile in the background exits at once
    with status 0: the compile stops after its current piece (no LLVM torn down under it)."""
    import time
    t0 = time.perf_counter()
    out = run_script("exit_while_compiling", NUMBAFLOW_CACHE_DIR=str(tmp_path))
    assert "exiting" in out.stdout and "Assertion" not in out.stderr, out.stderr[-2000:]
    assert time.perf_counter() - t0 < 240


@pytest.mark.slow
def test_a_fork_during_a_background_compile_can_compile(tmp_path):
    """A process forked while segments compile in the background (a DataLoader worker)
    can still compile numba code: the fork waits for numba's compiler lock."""
    out = run_script("fork_while_compiling", NUMBAFLOW_CACHE_DIR=str(tmp_path))
    assert "forked children compiled" in out.stdout, out.stderr[-2000:]


def test_a_failed_segment_compile_is_said_once_and_the_plan_runs_op_by_op(monkeypatch, caplog):
    """A second angle on swallowed compile errors (issue 21): a background compile that
    fails logs one WARNING naming the error, and the plan keeps its per-op steps with the
    op-by-op numbers (no segment ever takes over)."""
    import logging

    from numbaflow.executor import segments

    def broken(self, with_loop=False):
        if self.segment:
            raise RuntimeError("planted compile failure")
    monkeypatch.setattr(segments.Unit, "compile", broken)
    main, startup, loss = mlp()
    batches = feeds(plan_mod.HOT_RUNS + 3)
    ref, ref_scope, _ = run_steps(main, startup, loss, batches, segments=False)
    with caplog.at_level(logging.WARNING, logger="numbaflow"):
        got, scope, plan = run_steps(main, startup, loss, batches, segments=True)
    failed = [r for r in caplog.records if "planted compile failure" in r.getMessage()]
    assert len(failed) == 1 and failed[0].levelno == logging.WARNING, caplog.text
    assert plan.units is not None and not any(u.compiled for u in plan.units)
    np.testing.assert_array_equal(got, ref)
    for p in main.all_parameters():
        np.testing.assert_array_equal(scope.get(p.name), ref_scope.get(p.name))
