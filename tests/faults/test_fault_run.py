"""Faults during runs (issue 12 items 3-5): no half-applied update on any exception
(Ctrl-C and SystemExit included, a NaN/Inf check on the last op, a failure at iteration
k of num_iteration_per_run), concurrent runs on one Executor, bounded plan caches."""
import os
import signal
import threading
import time

import numpy as np
import pytest
from child import run_script

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from numbaflow.utils import unique_name
from numbaflow.executor.executor import cached_plans, runners
from numbaflow.compiler.compiled_program import replicas

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def classifier(lr=0.1, hidden=32, opt=None):
    """x (N, 8) -> fc -> relu -> fc -> cross entropy with a hard label, Momentum (so the
    optimizer phase writes parameters and velocities)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 8], "float32")
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, hidden, activation="relu")
        logits = static.nn.fc(h, 4)
        loss = paddle.mean(F.cross_entropy(logits, y))
        (opt or paddle.optimizer.Momentum(learning_rate=lr, momentum=0.9)).minimize(loss)
    return main, startup, loss


def persistables(program, scope):
    return {v.name: np.array(scope.get(v.name)) for v in program.list_vars()
            if v.persistable and scope.find_var(v.name) is not None}


def assert_state(got, want):
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def batch(rng, n=16, bad_label=False):
    y = rng.integers(0, 4, (n, 1)).astype(np.int64)
    if bad_label:
        y[n // 2, 0] = 7
    return {"x": rng.standard_normal((n, 8)).astype(np.float32), "y": y}


def setup(program_and_startup, compiled=None):
    main, startup, loss = program_and_startup
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    return exe, scope


def _exit(signum, frame):
    raise SystemExit(3)


@pytest.mark.parametrize("sig,handler,exc", [
    (signal.SIGINT, signal.default_int_handler, KeyboardInterrupt),   # Ctrl-C
    (signal.SIGTERM, _exit, SystemExit),       # a SIGTERM handler calling sys.exit
])
def test_a_signal_in_the_optimizer_phase_lands_after_the_whole_step(sig, handler, exc):
    """The optimizer's updates come after the last op that may fail, so they are not
    backed up: a signal arriving among them (here: right after the first update) is held
    back until the run ends. The step completes (the state equals a twin scope's after the
    same step), then the handler runs and its exception reaches the caller."""
    net = classifier()
    main, _, loss = net
    exe, scope = setup(net)
    rng = np.random.default_rng(0)
    exe.run(main, feed=batch(rng), fetch_list=[loss], scope=scope)   # builds the plan
    plan = cached_plans(exe)[-1]
    first_opt = next(i for i, op in enumerate(plan.ops) if op.type == "momentum")
    inner = plan.thunks[first_opt]

    def update_then_signal():
        inner()
        os.kill(os.getpid(), sig)
        time.sleep(0.01)       # (a handler not held back would run here)
    plan.thunks[first_opt] = update_then_signal
    f = batch(rng)
    twin = static.Scope()
    for k, v in persistables(main, scope).items():
        twin.set(k, v)
    exe.run(main, feed=f, fetch_list=[loss], scope=twin)
    previous = signal.signal(sig, handler)
    try:
        with pytest.raises(exc):
            exe.run(main, feed=f, fetch_list=[loss], scope=scope)
    finally:
        signal.signal(sig, previous)
    assert signal.getsignal(sig) is previous
    assert_state(persistables(main, scope), persistables(main, twin))
    assert plan.memory_stats()["backup_bytes"] == 0      # nothing here is written earlier


def test_a_run_of_k_iterations_backs_up_what_it_writes():
    """K iterations in one run: iteration 2's forward may fail after iteration 1 updated
    the parameters, so every persistable the run writes is copied first."""
    net = classifier()
    main, _, loss = net
    exe, scope = setup(net)
    compiled = _compiled(main, loss, 2)
    exe.run(compiled, feed=batch(np.random.default_rng(0)), fetch_list=[loss], scope=scope)
    written = {v.name for op in main.global_block().ops for v in op.output_vars()
               if v.persistable}
    want = sum(np.asarray(scope.get(n)).nbytes for n in written)
    assert compiled.memory_stats()["backup_bytes"] == want > 0


def seed_model(hidden=None):
    """The seed model: no op that may fail, and once hot a step is ONE compiled call, so
    nothing is backed up (the run happens whole or not at all)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 8], "float32")
        static.data("y", [None, 1], "int64")
        loss = paddle.mean(static.nn.fc(x, 10))
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("net_fn", [classifier, seed_model])
def test_real_sigint_during_steps_leaves_before_or_after_state(net_fn):
    """SIGINT at random moments of many steps: the state is always that of before the
    step or after it (never a mix): 'after' is computed by the same step in a twin scope."""
    net = net_fn(hidden=256)
    main, startup, loss = net
    exe, scope = setup(net)
    twin = static.Scope()
    rng = np.random.default_rng(1)
    feeds = [batch(rng, n=256) for _ in range(4)]
    for _ in range(10):      # hot: the segments compile (in the background)
        exe.run(main, feed=feeds[0], fetch_list=[loss], scope=scope)
    from numbaflow.executor.segments import wait_for_compiles
    wait_for_compiles()
    exe.run(main, feed=feeds[0], fetch_list=[loss], scope=scope)
    plan = cached_plans(exe)[-1]
    if net_fn is seed_model:        # the path without backups is the one under test
        assert plan.indivisible and len(plan.units) == 1 and plan.units[0].compiled
    for f in feeds:     # warm: plans built, segments compiled
        exe.run(main, feed=f, fetch_list=[loss], scope=scope)
    t0 = time.perf_counter()
    exe.run(main, feed=feeds[0], fetch_list=[loss], scope=scope)
    step = time.perf_counter() - t0
    interrupted = 0
    for trial in range(30):
        before = persistables(main, scope)
        for k, v in before.items():
            twin.set(k, v)
        f = feeds[trial % len(feeds)]
        exe.run(main, feed=f, fetch_list=[loss], scope=twin)
        after = persistables(main, twin)
        handled = threading.Event()

        def on_sigint(signum, frame):       # Python's default, and says it ran
            handled.set()
            raise KeyboardInterrupt
        previous = signal.signal(signal.SIGINT, on_sigint)
        timer = threading.Timer(rng.uniform(0, 1.5 * step),
                                lambda: os.kill(os.getpid(), signal.SIGINT))
        try:
            try:
                timer.start()       # (a short delay may fire before start() returns)
                exe.run(main, feed=f, fetch_list=[loss], scope=scope)
                handled.wait(30)    # an interrupt after the step lands here at the latest
            except KeyboardInterrupt:
                interrupted += 1
            timer.join()
        finally:
            signal.signal(signal.SIGINT, previous)
        assert handled.is_set()
        got = persistables(main, scope)
        same_as = [name for name, ref in (("before", before), ("after", after))
                   if all(np.array_equal(got[k], ref[k]) for k in ref)]
        assert same_as, f"trial {trial}: a mix of before- and after-step state"
    assert interrupted > 0


def test_nan_check_on_the_last_op_restores_the_parameter(monkeypatch):
    monkeypatch.setenv("NUMBAFLOW_CHECK_NAN_INF", "1")
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 2], "float32")
        loss = paddle.mean(static.nn.fc(x, 1, bias_attr=False))
        paddle.optimizer.SGD(learning_rate=1e38).minimize(loss)
    assert main.global_block().ops[-1].type == "sgd"
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    before = persistables(main, scope)
    # the gradient of w is mean(x) = 1e4: the update overflows to -inf in the last op
    with pytest.raises(FloatingPointError, match="sgd"):
        exe.run(main, feed={"x": np.full((4, 2), 1e4, np.float32)}, fetch_list=[loss],
                scope=scope)
    assert_state(persistables(main, scope), before)


def _compiled(main, loss, k):
    es = static.ExecutionStrategy()
    es.num_iteration_per_run = k
    return static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, exec_strategy=es, places=[paddle.CPUPlace()])


def test_iteration_three_of_five_failing_restores_the_state_iterator_feed():
    net = classifier()
    main, _, loss = net
    exe, scope = setup(net)
    rng = np.random.default_rng(2)
    feeds = [batch(rng), batch(rng), batch(rng, bad_label=True), batch(rng), batch(rng)]
    compiled = _compiled(main, loss, 5)
    before = persistables(main, scope)
    with pytest.raises(ValueError, match="label"):
        exe.run(compiled, feed=iter(feeds), fetch_list=[loss], scope=scope)
    assert_state(persistables(main, scope), before)
    # the same five good feeds then run and equal five single steps
    feeds[2] = batch(rng)
    exe.run(compiled, feed=iter(feeds), fetch_list=[loss], scope=scope)
    ref_exe, ref = setup(net)
    for k, v in before.items():
        ref.set(k, v)
    for f in feeds:
        ref_exe.run(main, feed=f, fetch_list=[loss], scope=ref)
    got, want = persistables(main, scope), persistables(main, ref)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_a_later_iteration_failing_restores_the_state_dict_feed(monkeypatch):
    # SGD with a huge step on a quadratic diverges: iteration 1 is finite, a later one
    # overflows, which NUMBAFLOW_CHECK_NAN_INF turns into an error
    monkeypatch.setenv("NUMBAFLOW_CHECK_NAN_INF", "1")
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 4], "float32")
        out = static.nn.fc(x, 1, bias_attr=False)
        loss = paddle.mean(out * out)
        paddle.optimizer.SGD(learning_rate=1e7).minimize(loss)
    feed = {"x": np.full((8, 4), 30.0, np.float32)}
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    one = static.Scope()
    for k, v in persistables(main, scope).items():
        one.set(k, v)
    exe.run(main, feed=feed, fetch_list=[loss], scope=one)      # iteration 1 alone: fine
    before = persistables(main, scope)
    with pytest.raises(FloatingPointError):
        exe.run(_compiled(main, loss, 5), feed=feed, fetch_list=[loss], scope=scope)
    assert_state(persistables(main, scope), before)


# ---------------------------------------------------------------------------- threads
def test_concurrent_inference_runs_see_their_own_inputs():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 16], "float32")
        out = static.nn.fc(x, 8, activation="tanh")
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    w, b = scope.get("fc_0.w_0"), scope.get("fc_0.b_0")
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            xv = rng.standard_normal((rng.integers(1, 4) * 4, 16)).astype(np.float32)
            got, = exe.run(main, feed={"x": xv}, fetch_list=[out], scope=scope)
            if not np.allclose(got, np.tanh(xv @ w + b), rtol=1e-4, atol=1e-5):
                errors.append(seed)
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_two_threads_training_lose_no_update():
    # loss = mean(x @ w): the gradient of w does not depend on w, and with x a power of two
    # and lr = 2**-4 every update is exact, so the final w is the same for every
    # interleaving: lost or torn updates show as a different w
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 4], "float32")
        loss = paddle.mean(static.nn.fc(x, 4, bias_attr=False))
        paddle.optimizer.SGD(learning_rate=2.0 ** -4).minimize(loss)
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    scope.set("fc_0.w_0", np.zeros((4, 4), np.float32))
    feeds = [{"x": np.full((2, 4), 2.0, np.float32)}, {"x": np.full((2, 4), 4.0, np.float32)}]
    steps = 150

    def worker(f):
        for _ in range(steps):
            exe.run(main, feed=f, fetch_list=[loss], scope=scope)
    threads = [threading.Thread(target=worker, args=(f,)) for f in feeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # d mean(x @ w) / dw[i, j] = mean over the batch of x[:, i] / 4 (columns)
    want = -steps * 2.0 ** -4 * (2.0 / 4 + 4.0 / 4) * np.ones((4, 4))
    np.testing.assert_array_equal(scope.get("fc_0.w_0"), want.astype(np.float32))


def test_concurrent_compiled_runs_match_sequential():
    net = classifier()
    main, startup, loss = net
    rng = np.random.default_rng(5)
    feeds = [batch(rng, n=8) for _ in range(2)]
    exe, scope = setup(net)
    compiled = static.CompiledProgram(main)
    test_prog = main.clone(for_test=True)
    results = {}

    def infer():
        outs = [exe.run(test_prog, feed=feeds[0], fetch_list=[loss.name], scope=scope)[0]
                for _ in range(50)]
        results["infer"] = outs

    def train():
        for _ in range(50):
            exe.run(compiled, feed=feeds[1], fetch_list=[loss.name], scope=scope)
    threads = [threading.Thread(target=infer), threading.Thread(target=train)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # every inference saw parameters of a whole number of training steps: its loss is
    # one of the 51 losses a sequential run would give
    ref_exe, ref = setup(net)
    seq = []
    for _ in range(51):
        seq.append(ref_exe.run(test_prog, feed=feeds[0], fetch_list=[loss.name], scope=ref)[0])
        ref_exe.run(main, feed=feeds[1], fetch_list=[loss.name], scope=ref)
    for got in results["infer"]:
        assert any(np.allclose(got, s, rtol=1e-5, atol=1e-7) for s in seq)
    final = persistables(main, scope)
    ref2_exe, ref2 = setup(net)
    for _ in range(50):
        ref2_exe.run(main, feed=feeds[1], fetch_list=[loss.name], scope=ref2)
    want = persistables(main, ref2)
    for k in want:
        np.testing.assert_allclose(final[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


# ---------------------------------------------------------------------------- bounded caches
def test_every_plan_cache_is_bounded(monkeypatch):
    monkeypatch.setenv("NUMBAFLOW_MAX_PLANS", "4")
    net = classifier()
    main, _, loss = net
    exe, scope = setup(net)
    rng = np.random.default_rng(6)
    compiled = static.CompiledProgram(main)
    dp = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=[paddle.CPUPlace()] * 2)
    for n in range(2, 40):
        f = batch(rng, n=n)
        exe.run(main, feed=f, fetch_list=[loss], scope=scope)
        exe.run(compiled, feed=f, fetch_list=[loss], scope=scope)
        exe.run(dp, feed=f, fetch_list=[loss], scope=scope)
    # plain, compiled, data parallel (two devices)
    assert [len(r.plans()) for r in runners(exe)] == [4, 4, 8]
    assert [len(r.plans) for r in replicas(dp)] == [4, 4]


@pytest.mark.slow
def test_rss_of_many_feed_signatures_stays_flat():
    """2000 batch sizes through the plain, compiled and data-parallel (one replica) paths:
    RSS grows no more than the plain Executor's (each path keeps at most
    NUMBAFLOW_MAX_PLANS plans; with D replicas each keeps its own, of 1/D of the batch)."""
    growth = {}
    for kind in ("plain", "compiled", "dp"):
        out = run_script("feed_signatures_rss", kind, timeout=600, NUMBAFLOW_MAX_PLANS="16",
                         CPU_NUM="2")
        growth[kind] = int(out.stdout.split()[-1])
    limit = max(growth["plain"], 0) + (16 << 20)
    assert growth["compiled"] <= limit and growth["dp"] <= limit, growth
