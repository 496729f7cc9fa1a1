"""CompiledProgram's compile pipeline: every BuildStrategy / ExecutionStrategy option that
needs no second device is real (observable in the graph, the kernels or memory) and none
changes the numbers of the plain single-device run (rtol 1e-5) over 3 training steps."""
import tracemalloc

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.executor.plan import HOT_RUNS
from numbaflow.graph import verify
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import last_plan
from numbaflow.executor.executor import cached_plans, plain_runner, runners

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

B, D, H, C = 16, 12, 16, 5


def mlp(layers=2, act="relu", opt=None, width=H):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D], "float32")
        y = static.data("y", [None, 1], "int64")
        h = x
        for _ in range(layers):
            h = static.nn.fc(h, width, activation=act)
        logits = static.nn.fc(h, C)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        (opt or paddle.optimizer.SGD(learning_rate=0.1)).minimize(loss)
    return main, startup, loss


def batches(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((B, D)).astype(np.float32),
             "y": rng.integers(0, C, (B, 1)).astype(np.int64)} for _ in range(n)]


def train(main, startup, loss, program=None, steps=3, fetch_extra=()):
    """Losses (and extra fetches) of `steps` runs of `program` (default: main) from the
    startup state, plus the final parameters."""
    exe = static.Executor(paddle.CPUPlace())
    scope = static.Scope()
    exe.run(startup, scope=scope)
    out = []
    for feed in batches(steps):
        out.append(exe.run(program or main, feed=feed, fetch_list=[loss, *fetch_extra],
                           scope=scope))
    params = {p.name: scope.get(p.name) for p in main.all_parameters()}
    return out, params


def assert_same_training(a, b, rtol=1e-5):
    (fa, pa), (fb, pb) = a, b
    for xa, xb in zip(fa, fb):
        for u, v in zip(xa, xb):
            np.testing.assert_allclose(u, v, rtol=rtol, atol=1e-7)
    assert pa.keys() == pb.keys()
    for k in pa:
        np.testing.assert_allclose(pa[k], pb[k], rtol=rtol, atol=1e-7, err_msg=k)


def compiled(main, bs_options=(), es_options=()):
    """CompiledProgram with these BuildStrategy options; an ExecutionStrategy goes through
    with_data_parallel on the one CPU place (as in Paddle)."""
    bs, es = static.BuildStrategy(), static.ExecutionStrategy()
    for k, v in dict(bs_options).items():
        setattr(bs, k, v)
    for k, v in dict(es_options).items():
        setattr(es, k, v)
    c = static.CompiledProgram(main, build_strategy=bs)
    if es_options:
        loss = next(op for op in main.global_block().ops if op.type == "fill_constant"
                    and op.output_arg_names[0].endswith("@GRAD")).output_arg_names[0]
        c.with_data_parallel(loss_name=loss[:-len("@GRAD")], exec_strategy=es,
                             places=[paddle.CPUPlace()])
    return c


OPTIONS = [
    ({"memory_optimize": False}, {}),
    ({"memory_optimize": True}, {}),
    ({"enable_inplace": False}, {}),
    ({"enable_inplace": False, "memory_optimize": False}, {}),
    ({"enable_sequential_execution": True}, {"num_threads": 2}),
    ({}, {"num_threads": 1}),
    ({}, {"num_threads": 2}),
    ({}, {"num_threads": 4}),
    ({}, {"num_iteration_per_drop_scope": 1}),
    ({"fuse_elewise_add_act_ops": True}, {}),
    ({"enable_auto_fusion": True}, {}),
    ({"fuse_all_optimizer_ops": True}, {}),
    ({"remove_unnecessary_lock": False}, {}),
    ({"fuse_elewise_add_act_ops": True, "enable_auto_fusion": True,
      "fuse_all_optimizer_ops": True, "fuse_relu_depthwise_conv": True,
      "memory_optimize": True, "enable_inplace": True}, {"num_threads": 2}),
]


@pytest.mark.parametrize("bs_options,es_options", OPTIONS,
                         ids=[",".join(f"{k}={v}" for k, v in {**a, **b}.items())
                              for a, b in OPTIONS])
def test_every_option_gives_the_unfused_numbers(bs_options, es_options):
    main, startup, loss = mlp(opt=paddle.optimizer.Adam(learning_rate=0.01))
    hidden = main.global_block().var("fc_1.tmp_2")      # an intermediate, fetched too
    reference = train(main, startup, loss, fetch_extra=[hidden])
    c = compiled(main, bs_options, es_options)
    assert_same_training(reference, train(main, startup, loss, c, fetch_extra=[hidden]))


def test_user_program_and_strategies_are_not_modified():
    main, startup, loss = mlp()
    before = (main.version, [op.type for op in main.global_block().ops],
              sorted(main.global_block().vars))
    bs, es = static.BuildStrategy(), static.ExecutionStrategy()
    bs.fuse_elewise_add_act_ops = bs.enable_auto_fusion = True
    c = static.CompiledProgram(main, build_strategy=bs)
    train(main, startup, loss, c)
    assert (main.version, [op.type for op in main.global_block().ops],
            sorted(main.global_block().vars)) == before
    assert bs.memory_optimize is None and es.num_threads == 0
    assert c.build_strategy_effective.memory_optimize is True
    assert c.exec_strategy_effective.num_threads >= 1
    verify(main)


def run_once(c_or_main, startup, loss, feed):
    exe = static.Executor(paddle.CPUPlace())
    scope = static.Scope()
    exe.run(startup, scope=scope)
    exe.run(c_or_main, feed=feed, fetch_list=[loss], scope=scope)
    return exe, scope


def test_memory_optimize_lowers_peak_bytes_on_a_6_layer_mlp():
    main, startup, loss = mlp(layers=6, width=64)
    feed = batches(1)[0]
    stats = {}
    for mo in (False, True):
        c = compiled(main, {"memory_optimize": mo, "enable_inplace": False})
        run_once(c, startup, loss, feed)
        stats[mo] = c.memory_stats()
    assert set(stats[True]) >= {"peak_bytes", "pool_bytes", "num_buffers"}
    assert stats[True]["pool_bytes"] < 0.6 * stats[False]["pool_bytes"]
    assert stats[True]["peak_bytes"] < stats[False]["peak_bytes"]
    assert stats[True]["num_buffers"] < stats[False]["num_buffers"]


def test_inplace_shares_buffers_but_never_a_fed_or_fetched_variable():
    main, startup, loss = mlp(layers=3)
    feed = batches(1)[0]
    x_before = feed["x"].copy()
    c = compiled(main, {"enable_inplace": True, "memory_optimize": False})
    exe, scope = run_once(c, startup, loss, feed)
    plan = last_plan(c)
    assert plan.assignment.inplace, "no op ran in place"
    protected = set(plan.feed_vars) | set(plan.fetch_vars)
    for _, out, inp in plan.assignment.inplace:
        assert out not in protected and inp not in protected
    np.testing.assert_array_equal(feed["x"], x_before)      # the fed array is untouched
    off = compiled(main, {"enable_inplace": False, "memory_optimize": False})
    run_once(off, startup, loss, feed)
    assert c.memory_stats()["pool_bytes"] < off.memory_stats()["pool_bytes"]


def test_fed_array_is_used_without_a_copy_and_steady_state_allocates_only_fetches():
    main, startup, loss = mlp(layers=2, width=256)
    feed = batches(1)[0]
    feed["x"] = np.random.default_rng(1).standard_normal((512, D)).astype(np.float32)
    feed["y"] = np.zeros((512, 1), np.int64)
    c = compiled(main)
    exe, scope = run_once(c, startup, loss, feed)
    plan = last_plan(c)
    x_var = main.global_block().var("x")
    assert plan.buffers[next(v for v in plan.buffers if v.name == "x")] is feed["x"]
    for _ in range(HOT_RUNS + 1):       # hot: compiled into segments before measuring
        exe.run(c, feed=feed, fetch_list=[loss], scope=scope)
    last_plan(c).wait_compiled()
    exe.run(c, feed=feed, fetch_list=[loss], scope=scope)
    # hot: segments decided on (these kernels are big: dispatch is < 1% of the run, so
    # the plan stays op by op) and compiled if they pay
    assert last_plan(c).segments_pay is not None
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(10):
        exe.run(c, feed=feed, fetch_list=[loss], scope=scope)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the temporaries alone are > 1 MB (512 x 256 floats per layer): nothing of that size
    # is allocated per run; only the fetched scalar and small Python objects
    assert peak - base < 64 * 1024, peak - base
    assert x_var.name == "x"


def test_a_new_fed_array_rebinds_only_its_readers_and_gives_the_same_numbers():
    main, startup, loss = mlp()
    feeds = batches(3)
    ref, _ = train(main, startup, loss)
    c = compiled(main)
    exe = static.Executor(paddle.CPUPlace())
    scope = static.Scope()
    exe.run(startup, scope=scope)
    got = [exe.run(c, feed={k: v.copy() for k, v in f.items()}, fetch_list=[loss],
                   scope=scope) for f in feeds]
    for a, b in zip(ref, got):
        np.testing.assert_allclose(a[0], b[0], rtol=1e-6)


def test_drop_local_exe_scopes_releases_the_pool_and_keeps_the_numbers():
    main, startup, loss = mlp()
    ref, ref_params = train(main, startup, loss)
    c = compiled(main)
    exe = static.Executor(paddle.CPUPlace())
    scope = static.Scope()
    exe.run(startup, scope=scope)
    got = []
    for feed in batches(3):
        got.append(exe.run(c, feed=feed, fetch_list=[loss], scope=scope))
        c.drop_local_exe_scopes()
        assert last_plan(c).buffers is None
    assert_same_training((ref, ref_params),
                         (got, {p.name: scope.get(p.name) for p in main.all_parameters()}))


def test_num_iteration_per_drop_scope_releases_every_n_runs(monkeypatch):
    from numbaflow.executor import runner as compiled_program  # (DROP_MIN_BYTES lives with the runners)
    main, startup, loss = mlp()
    c = compiled(main, {}, {"num_iteration_per_drop_scope": 2})
    exe, scope = run_once(c, startup, loss, batches(1)[0])
    assert last_plan(c).buffers is not None
    # a small pool is kept by the periodic drop: freeing it would only cost a rebind
    assert last_plan(c).pool_bytes() < compiled_program.DROP_MIN_BYTES
    exe.run(c, feed=batches(1)[0], fetch_list=[loss], scope=scope)
    assert last_plan(c).buffers is not None
    monkeypatch.setattr(compiled_program, "DROP_MIN_BYTES", 0)
    exe.run(c, feed=batches(1)[0], fetch_list=[loss], scope=scope)
    exe.run(c, feed=batches(1)[0], fetch_list=[loss], scope=scope)
    assert last_plan(c).buffers is None


def test_debug_graphviz_path_writes_three_dot_files(tmp_path):
    main, startup, loss = mlp(layers=1)
    prefix = str(tmp_path / "dump" / "g")
    c = compiled(main, {"debug_graphviz_path": prefix, "fuse_elewise_add_act_ops": True})
    run_once(c, startup, loss, batches(1)[0])
    for suffix in ("_original_graph", "_fused_graph", "_multi_devices_graph"):
        text = open(prefix + suffix, encoding="utf-8").read()
        assert text.startswith("digraph G {") and text.rstrip().endswith("}")
        assert 'label="mul", shape=box' in text
        assert 'label="fc_0.w_0\\n12,16", shape=ellipse' in text
    original = open(prefix + "_original_graph", encoding="utf-8").read()
    assert original.count("shape=box") == len(main.global_block().ops)


def test_static_graph_applies_a_named_pass_and_compiles():
    main, startup, loss = mlp(layers=1)
    g = static.Graph(main)
    with pytest.raises(ValueError, match="unknown pass 'fuse_elewise_add'.*did you mean"):
        g.apply_pass("fuse_elewise_add")
    g.apply_pass("fuse_elewise_add_act")
    verify(g.program)
    c = static.CompiledProgram(g)
    assert_same_training(train(main, startup, loss), train(main, startup, loss, c))


def test_sequential_execution_runs_ops_in_program_order(monkeypatch):
    main, startup, loss = mlp()
    c = compiled(main, {"enable_sequential_execution": True}, {"num_threads": 4})
    run_once(c, startup, loss, batches(1)[0])
    assert last_plan(c).scheduler is None        # one op at a time, in program order
    c2 = compiled(main, {}, {"num_threads": 2})
    run_once(c2, startup, loss, batches(1)[0])
    assert last_plan(c2).scheduler is not None


def test_plan_dependencies_cover_reused_buffers():
    main, startup, loss = mlp(layers=4)
    c = compiled(main)
    run_once(c, startup, loss, batches(1)[0])
    plan = last_plan(c)
    deps = plan.dependencies()
    # reachability: any two ops touching the same memory, one writing, are ordered
    reach = [set() for _ in deps]
    for i, d in enumerate(deps):
        for j in d:
            reach[i] |= reach[j] | {j}
    touched = []
    for op in plan.ops:
        touched.append(({plan.memory_key(v) for v in op.input_vars()},
                        {plan.memory_key(v) for v in op.output_vars()}))
    for i in range(len(deps)):
        for j in range(i):
            ri, wi = touched[i]
            rj, wj = touched[j]
            if wi & (rj | wj) or ri & wj:
                assert j in reach[i], (plan.ops[j].type, plan.ops[i].type)


def test_memory_stats_before_a_run_is_an_error():
    main, _, _ = mlp()
    with pytest.raises(RuntimeError, match="not run yet"):
        static.CompiledProgram(main).memory_stats()


def test_allow_op_delay_warns_once():
    es = static.ExecutionStrategy()
    with pytest.warns(DeprecationWarning):
        es.allow_op_delay = True



def test_remove_unnecessary_lock_false_runs_kernels_behind_the_device_lock(monkeypatch):
    from numbaflow.executor import plan as plan_mod
    main, startup, loss = mlp()
    c = compiled(main, {"remove_unnecessary_lock": False})
    held = []

    class Spy:
        def __enter__(self):
            held.append("acquire")

        def __exit__(self, *exc):
            held.append("release")
    monkeypatch.setattr(plan_mod, "DEVICE_LOCK", Spy())
    run_once(c, startup, loss, batches(1)[0])
    n_ops = len(last_plan(c).ops)
    assert held == ["acquire", "release"] * n_ops       # each kernel behind the lock
    held.clear()
    run_once(compiled(main), startup, loss, batches(1)[0])
    assert held == []



def test_fetched_outputs_are_handed_over_without_a_copy_and_never_overwritten():
    main, startup, loss = mlp()
    hidden = main.global_block().var("fc_1.tmp_2")
    exe = static.Executor(paddle.CPUPlace())
    scope = static.Scope()
    exe.run(startup, scope=scope)
    fb = batches(HOT_RUNS + 3)
    kept = []
    for f in fb:
        loss_v, h = exe.run(main, feed=f, fetch_list=[loss, hidden], scope=scope)
        kept.append((loss_v.copy(), h.copy(), h))       # the caller keeps `h` itself
    # every kept array still holds the value of its own run
    for want_loss, want_h, h in kept:
        np.testing.assert_array_equal(h, want_h)
    assert len({id(h) for _, _, h in kept}) == len(kept)
    plan = cached_plans(exe)[-1]
    # a dropped fetch result is reused: the next run writes into the same array
    exe.run(main, feed=fb[0], fetch_list=[loss, hidden], scope=scope)
    a = id(plan.buffers[hidden])
    exe.run(main, feed=fb[0], fetch_list=[loss, hidden], scope=scope)
    assert id(plan.buffers[hidden]) == a
    # and the numbers are those of a run that copies every fetch
    ref, _ = train(main, startup, loss, fetch_extra=[hidden])
    got, _ = train(main, startup, loss, compiled(main), fetch_extra=[hidden])
    for x, y in zip(ref, got):
        np.testing.assert_allclose(x[1], y[1], rtol=1e-6)


def test_the_executor_owns_every_plan_and_close_frees_them():
    """A compiled run's plans live in the executor's runners (not in the CompiledProgram):
    exe.close() frees them with the plain program's, and the next run builds them again."""
    import weakref

    main, startup, loss = mlp()
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    feed = batches(1)[0]
    c = static.CompiledProgram(main)
    dp = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=[paddle.CPUPlace()] * 2)
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    exe.run(c, feed=feed, fetch_list=[loss], scope=scope)
    exe.run(dp, feed=feed, fetch_list=[loss], scope=scope)
    kept = runners(exe)[1:]                     # the compiled program's, the data-parallel one's
    assert len(kept) == 2 and all(r.plans() for r in kept)
    held = [weakref.ref(p) for r in kept for p in r.plans()]
    assert len(held) == 3                       # compiled: 1, data parallel: one per device
    exe.close()
    assert not any(r.plans() for r in runners(exe))
    import gc
    gc.collect()
    assert all(h() is None for h in held)       # the plans and their buffers are gone
    # the next run builds its plan again (a training step: the parameters moved on)
    test = main.clone(for_test=True)
    want = exe.run(test, feed=feed, fetch_list=[loss], scope=scope)[0]
    got = exe.run(c, feed=feed, fetch_list=[loss], scope=scope)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [bool(r.plans()) for r in runners(exe)] == [True, True, False]
    # a CompiledProgram that goes takes its runners with it
    del c, dp, kept
    gc.collect()
    assert runners(exe) == [plain_runner(exe)]
