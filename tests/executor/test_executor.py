"""Executor, Scope, places, strategies, CompiledProgram, and every error of SPEC §3."""
import os
import warnings

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name
from numbaflow.executor.executor import cached_plans, plain_runner


def seed_net(opt=None):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data(name="X", shape=[None, 1], dtype="float32")
        hidden = static.nn.fc(x=x, size=10)
        loss = paddle.mean(hidden)
        (opt or paddle.optimizer.SGD(learning_rate=0.01)).minimize(loss)
    return main, startup, loss


@pytest.fixture
def exe():
    return static.Executor(paddle.CPUPlace())


def test_seed_doc_example_compiled_program_loss_decreases():
    # the first code example of Paddle's CompiledProgram doc, with only the import changed
    import numpy
    import numbaflow as paddle
    import numbaflow.static as static
    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard(), \
            static.scope_guard(static.Scope()):
        place = paddle.CPUPlace()
        exe = static.Executor(place)
        data = static.data(name='X', shape=[None, 1], dtype='float32')
        hidden = static.nn.fc(x=data, size=10)
        loss = paddle.mean(hidden)
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
        exe.run(static.default_startup_program())
        compiled_prog = static.CompiledProgram(static.default_main_program())
        x = numpy.random.default_rng(0).random(size=(10, 1)).astype('float32')
        losses = []
        for _ in range(5):
            loss_data, = exe.run(compiled_prog, feed={"X": x}, fetch_list=[loss.name])
            losses.append(float(loss_data))
        assert loss_data.shape == ()
        # loss = mean(x) * mean(w) + mean(b); one SGD step moves w by -lr*mean(x)/10 and b by
        # -lr/10, so every step lowers the loss by exactly lr * (mean(x)^2 + 1) / 10
        step = 0.01 * (float(x.mean()) ** 2 + 1) / 10
        np.testing.assert_allclose(np.diff(losses), -step, rtol=1e-3)
        w = np.array(static.global_scope().find_var("fc_0.w_0").get_tensor())
        b = np.array(static.global_scope().find_var("fc_0.b_0").get_tensor())
        nxt, = exe.run(compiled_prog, feed={"X": x}, fetch_list=[loss.name])
        np.testing.assert_allclose(nxt, np.mean(x @ w + b), rtol=1e-5, atol=1e-6)


def test_plan_is_cached_per_feed_signature(exe):
    main, startup, loss = seed_net()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    x = np.random.rand(4, 1).astype("float32")
    for _ in range(3):
        exe.run(main, feed={"X": x}, fetch_list=[loss], scope=scope)
    n = len(cached_plans(exe))
    exe.run(main, feed={"X": x}, fetch_list=[loss], scope=scope)
    assert len(cached_plans(exe)) == n                     # same signature: reused
    exe.run(main, feed={"X": np.random.rand(7, 1).astype("float32")}, fetch_list=[loss],
            scope=scope)
    assert len(cached_plans(exe)) == n + 1                 # new batch size: one new plan


def test_scope_api_and_persistable_feed(exe):
    main, startup, loss = seed_net()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    assert scope.find_var("nope") is None
    w0 = np.array(scope.find_var("fc_0.w_0").get_tensor())
    assert w0.shape == (1, 10)
    lr = scope.get("learning_rate_0")
    np.testing.assert_allclose(lr, [0.01])
    x = np.ones((2, 1), np.float32)
    # feeding learning_rate_0 sets it, and it persists for later runs
    exe.run(main, feed={"X": x, "learning_rate_0": np.array([0.5], np.float32)},
            fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(scope.get("learning_rate_0"), [0.5])
    w1 = scope.get("fc_0.w_0")
    np.testing.assert_allclose(w1, w0 - 0.5 * 0.1, rtol=1e-6)   # dmean/dw = mean(x)/10
    scope.set("fc_0.w_0", np.zeros((1, 10), np.float32))
    out, = exe.run(main, feed={"X": x}, fetch_list=["fc_0.w_0"], scope=scope)
    np.testing.assert_allclose(out, np.full((1, 10), -0.05), rtol=1e-6)


def test_scope_guard_and_global_scope(exe):
    main, startup, loss = seed_net()
    s = static.Scope()
    with static.scope_guard(s):
        assert static.global_scope() is s
        exe.run(startup)
    assert s.find_var("fc_0.w_0") is not None
    assert static.global_scope() is not s


def test_unknown_feed_name_lists_close_matches(exe):
    main, startup, loss = seed_net()
    with pytest.raises(ValueError, match=r"'x'.*did you mean \['X'\]"):
        exe.run(main, feed={"x": np.ones((2, 1), np.float32)}, fetch_list=[loss],
                scope=static.Scope())


def test_missing_feed_named_before_any_kernel_runs(exe):
    main, startup, loss = seed_net()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    before = scope.get("fc_0.w_0")
    with pytest.raises(ValueError, match="'X'.*not fed"):
        exe.run(main, feed={}, fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(scope.get("fc_0.w_0"), before)


def test_shape_rank_dtype_and_empty_batch_errors(exe):
    main, startup, loss = seed_net()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(ValueError, match=r"'X'.*dimensions = 2.*\(-1, 1\).*\(5, 2\)"):
        exe.run(main, feed={"X": np.ones((5, 2), np.float32)}, fetch_list=[loss], scope=scope)
    with pytest.raises(ValueError, match=r"'X'.*rank 1"):
        exe.run(main, feed={"X": np.ones(5, np.float32)}, fetch_list=[loss], scope=scope)
    with pytest.raises(ValueError, match=r"'X'.*'float32'.*'float64'"):
        exe.run(main, feed={"X": np.ones((5, 1))}, fetch_list=[loss], scope=scope)
    with pytest.raises(ValueError, match="size 0"):
        exe.run(main, feed={"X": np.ones((0, 1), np.float32)}, fetch_list=[loss], scope=scope)
    # lists are converted with the declared dtype
    out, = exe.run(main, feed={"X": [[1.0], [2.0]]}, fetch_list=[loss], scope=scope)
    assert out.dtype == np.float32


def test_unknown_fetch(exe):
    main, startup, loss = seed_net()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(ValueError, match=r"no variable named 'fc_0.tmp_9'.*did you mean 'fc_0"):
        exe.run(main, feed={"X": np.ones((2, 1), np.float32)}, fetch_list=["fc_0.tmp_9"],
                scope=scope)


def test_uninitialised_parameter(exe):
    main, startup, loss = seed_net()
    with pytest.raises(RuntimeError, match="fc_0.w_0.*run the startup program first"):
        exe.run(main, feed={"X": np.ones((2, 1), np.float32)}, fetch_list=[loss],
                scope=static.Scope())


def _program_with_failing_op():
    """A persistable counter is bumped in place *before* a loss whose label may be bad."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 4])
        y = static.data("y", [None, 1], "int64")
        block = main.global_block()
        counter = block.create_var("counter", [1], "float32", persistable=True)
        sb = startup.global_block()
        sb.append_op("fill_constant", outputs={"Out": sb.create_var("counter", [1], "float32",
                                                                    persistable=True)},
                     attrs={"shape": [1], "value": 0.0, "dtype": "float32"})
        block.append_op("scale", {"X": counter}, {"Out": counter}, {"bias": 1.0})
        logits = static.nn.fc(x, 3)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        paddle.optimizer.Momentum(0.1, 0.9).minimize(loss)
    return main, startup, loss


def test_failed_run_leaves_persistables_unchanged(exe):
    main, startup, loss = _program_with_failing_op()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    x = np.random.rand(4, 4).astype("float32")
    good = np.array([[0], [1], [2], [1]], np.int64)
    exe.run(main, feed={"x": x, "y": good}, fetch_list=[loss], scope=scope)
    snapshot = {n: scope.get(n) for n in scope.local_var_names()}
    assert snapshot["counter"][0] == 1.0
    bad = np.array([[0], [7], [2], [1]], np.int64)        # label 7 with 3 classes
    with pytest.raises(ValueError, match="softmax_with_cross_entropy"):
        exe.run(main, feed={"x": x, "y": bad, "learning_rate_0": np.array([9.0], np.float32)},
                fetch_list=[loss], scope=scope)
    for n, v in snapshot.items():
        np.testing.assert_array_equal(scope.get(n), v, err_msg=n)
    exe.run(main, feed={"x": x, "y": good}, fetch_list=[loss], scope=scope)
    assert scope.get("counter")[0] == 2.0


def test_check_nan_inf_names_the_op(exe, monkeypatch):
    monkeypatch.setenv("NUMBAFLOW_CHECK_NAN_INF", "1")
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [2])
        y = paddle.log(x)
        z = y * 2.0
    with pytest.raises(FloatingPointError, match="op log.*log_0.tmp_0"):
        exe.run(main, feed={"x": np.array([1.0, -1.0], np.float32)}, fetch_list=[z],
                scope=static.Scope())
    monkeypatch.delenv("NUMBAFLOW_CHECK_NAN_INF")
    out, = static.Executor(paddle.CPUPlace()).run(
        main, feed={"x": np.array([1.0, -1.0], np.float32)}, fetch_list=[z], scope=static.Scope())
    assert np.isnan(out[1])


def test_places():
    assert static.cpu_places(3) == [paddle.CPUPlace()] * 3
    os.environ["CPU_NUM"] = "2"
    try:
        assert len(static.cpu_places()) == 2
    finally:
        del os.environ["CPU_NUM"]
    from numbaflow.executor.place import cuda_available
    if not cuda_available():
        with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
            paddle.CUDAPlace(0)
    with pytest.raises(ValueError):
        static.Executor("tpu:0")
    assert static.Executor("cpu").place == paddle.CPUPlace()


def test_cpu_places_default_warns_and_sets_env(caplog, monkeypatch):
    monkeypatch.delenv("CPU_NUM", raising=False)
    with caplog.at_level("WARNING", logger="numbaflow"):
        assert len(static.cpu_places()) == 1
    assert [r.name for r in caplog.records] == ["numbaflow"] and "CPU_NUM" in caplog.text
    assert os.environ["CPU_NUM"] == "1"


def test_build_strategy_defaults_and_strict_setters():
    bs = static.BuildStrategy()
    assert bs.debug_graphviz_path == "" and bs.enable_sequential_execution is False
    assert bs.fuse_broadcast_ops is None and bs.fuse_elewise_add_act_ops is False
    assert bs.fuse_relu_depthwise_conv is False and bs.memory_optimize is None
    assert bs.gradient_scale_strategy == static.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
    assert bs.reduce_strategy == static.BuildStrategy.ReduceStrategy.AllReduce
    assert bs.remove_unnecessary_lock is True and bs.sync_batch_norm is False
    assert bs.enable_inplace is True and bs.fuse_all_reduce_ops is None
    assert bs.fuse_all_optimizer_ops is False and bs.enable_auto_fusion is False
    assert bs.num_trainers == 1 and bs.trainer_id == 0
    with pytest.raises(AttributeError, match="fuse_elewise_add_act_ops"):
        bs.fuse_elewise_add_act_op = True           # typo
    with pytest.raises(TypeError):
        bs.reduce_strategy = 1
    with pytest.raises(TypeError):
        bs.enable_inplace = "yes"
    bs.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
    eff = bs.effective()
    assert eff.fuse_broadcast_ops is True and eff.fuse_all_reduce_ops is False
    assert bs.fuse_broadcast_ops is None            # the user's object is untouched

    es = static.ExecutionStrategy()
    assert (es.num_threads, es.num_iteration_per_drop_scope, es.num_iteration_per_run,
            es.allow_op_delay) == (0, 100, 1, False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        es.allow_op_delay = True
    assert [x.category for x in w] == [DeprecationWarning]
    with pytest.raises(ValueError):
        es.num_iteration_per_run = 0


def test_compiled_program_binding_and_type_errors(exe):
    main, startup, loss = seed_net()
    with pytest.raises(TypeError, match="expected Graph or Program"):
        static.CompiledProgram("program")
    scope = static.Scope()
    exe.run(startup, scope=scope)
    compiled = static.CompiledProgram(main, build_strategy=static.BuildStrategy())
    x = np.ones((2, 1), np.float32)
    exe.run(compiled, feed={"X": x}, fetch_list=[loss], scope=scope)
    assert compiled.build_strategy_effective.memory_optimize is True
    assert compiled.exec_strategy_effective.num_threads >= 1
    with pytest.raises(ValueError, match="different scope"):
        exe.run(compiled, feed={"X": x}, fetch_list=[loss], scope=static.Scope())


def test_with_data_parallel_argument_checks():
    main, startup, loss = seed_net()
    with pytest.raises(ValueError, match="loss_name must be set"):
        static.CompiledProgram(main).with_data_parallel()
    with pytest.raises(ValueError, match="not a variable"):
        static.CompiledProgram(main).with_data_parallel(loss_name="nope")
    c = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
    with pytest.raises(RuntimeError, match="Already compiled"):
        c.with_data_parallel(loss_name=loss.name)


def test_num_iteration_per_run_runs_k_steps(exe):
    main, startup, loss = seed_net()
    s1, s2 = static.Scope(), static.Scope()
    for s in (s1, s2):
        exe.run(startup, scope=s)
        s.set("fc_0.w_0", np.full((1, 10), 0.3, np.float32))
    x = np.random.rand(4, 1).astype("float32")
    es = static.ExecutionStrategy()
    es.num_iteration_per_run = 3
    compiled = static.CompiledProgram(main).with_data_parallel(loss.name, exec_strategy=es,
                                                                places=[paddle.CPUPlace()])
    exe.run(compiled, feed={"X": x}, fetch_list=[loss], scope=s1)
    for _ in range(3):
        last, = exe.run(main, feed={"X": x}, fetch_list=[loss], scope=s2)
    np.testing.assert_allclose(s1.get("fc_0.w_0"), s2.get("fc_0.w_0"), rtol=1e-6)


def test_steady_state_runs_reuse_the_bound_plan(exe, monkeypatch):
    from numbaflow.executor import plan as plan_mod
    main, startup, loss = seed_net()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    binds = []
    original = plan_mod.Plan.bind
    monkeypatch.setattr(plan_mod.Plan, "bind",
                        lambda self, feed: (binds.append(1), original(self, feed))[1])
    x = np.ones((4, 1), np.float32)
    for _ in range(5):
        exe.run(main, feed={"X": x}, fetch_list=[loss], scope=scope)
    assert len(binds) == 1                           # bound once, then only thunks run
    scope.set("fc_0.w_0", np.zeros((1, 10), np.float32))      # same shape: written in place
    exe.run(main, feed={"X": x}, fetch_list=[loss], scope=scope)
    assert len(binds) == 1
    with pytest.raises(ValueError):
        # the program declares learning_rate_0 float32; the sgd kernel would need float32
        exe.run(main, feed={"learning_rate_0": np.array([0.5], np.float64), "X": x},
                fetch_list=[loss], scope=scope)
    scope.set("learning_rate_0", np.array([0.25], np.float32))   # written in place
    w_before = scope.get("fc_0.w_0")
    exe.run(main, feed={"X": x}, fetch_list=[loss], scope=scope)
    assert len(binds) == 1
    np.testing.assert_allclose(scope.get("fc_0.w_0"), w_before - 0.25 * 0.1, rtol=1e-6)
    # a shape the program cannot use is refused, naming the variable; nothing is clobbered
    scope.set("learning_rate_0", np.array([0.5, 0.5], np.float32))
    with pytest.raises(ValueError, match=r"'learning_rate_0'.*\(2,\).*\(1,\)"):
        exe.run(main, feed={"X": x}, fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(scope.get("learning_rate_0"), [0.5, 0.5])


def test_a_repeated_run_takes_the_fast_path_but_every_change_is_still_checked(exe):
    main, startup, loss = seed_net()
    scope = static.Scope()
    exe.run(startup, scope=scope)
    fetch = [loss]
    x = np.ones((4, 1), np.float32)
    first, = exe.run(main, feed={"X": x}, fetch_list=fetch, scope=scope)
    plain = plain_runner(exe)
    assert plain.cache.repeat(main, {"X": x}, fetch, scope, plain.options) is not None
    # a different dtype, rank, or a non-contiguous array leaves the fast path
    with pytest.raises(ValueError, match="data type"):
        exe.run(main, feed={"X": x.astype(np.float64)}, fetch_list=fetch, scope=scope)
    with pytest.raises(ValueError, match="dimensions"):
        exe.run(main, feed={"X": np.ones((4, 1, 1), np.float32)}, fetch_list=fetch, scope=scope)
    strided = np.ones((8, 1), np.float32)[::2]
    assert plain.cache.repeat(main, {"X": strided}, fetch, scope, plain.options) is None
    got, = exe.run(main, feed={"X": strided}, fetch_list=fetch, scope=scope)
    assert np.isfinite(got)
    # a changed program (new version) is re-planned
    with static.program_guard(main):
        paddle.scale(loss, 2.0)
    assert plain.cache.repeat(main, {"X": x}, fetch, scope, plain.options) is None
    exe.run(main, feed={"X": x}, fetch_list=fetch, scope=scope)


def test_the_first_run_of_a_plan_says_when_its_compile_is_long(monkeypatch, caplog):
    # a first run still compiling after the notice delay logs ONE WARNING line (shown by
    # default: issue 18) naming the program, the cache and the warm-up command
    import functools
    import logging
    import time
    from numbaflow.executor import plan as plan_mod
    from numbaflow.utils import log as log_mod
    monkeypatch.setattr(plan_mod, "compile_notice",
                        functools.partial(log_mod.compile_notice, after=0.01))
    main, startup, loss = seed_net()
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    real_run = plan_mod.Plan._run

    def slow_first_run(self, feed, iterations):
        time.sleep(0.2)               # a compile that takes a while
        return real_run(self, feed, iterations)
    monkeypatch.setattr(plan_mod.Plan, "_run", slow_first_run)
    with caplog.at_level(logging.INFO, logger="numbaflow"):
        exe.run(main, feed={"X": np.ones((2, 1), np.float32)}, fetch_list=[loss], scope=scope)
        exe.run(main, feed={"X": np.ones((2, 1), np.float32)}, fetch_list=[loss], scope=scope)
    notices = [r for r in caplog.records if "first run" in r.getMessage()
               and "fed X" in r.getMessage()]     # (not the startup program's)
    assert len(notices) == 1 and notices[0].levelno == logging.WARNING
    msg = notices[0].getMessage()
    n_ops = len(main.global_block().ops)
    assert f"a program of {n_ops} ops" in msg and "fed X" in msg, msg
    assert "python -m numbaflow warmup" in msg and "cache info" in msg


def test_check_nan_inf_stays_on_for_a_hot_compiled_training_step(monkeypatch):
    """A second angle on a no-op NaN check (issue 21): a compiled training program, hot
    (past HOT_RUNS, where segments would take over), meets a batch whose log is NaN: the
    run raises naming the op and leaves the parameters as they were."""
    from numbaflow.executor import plan as plan_mod
    monkeypatch.setenv("NUMBAFLOW_CHECK_NAN_INF", "1")
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 2], "float32")
        loss = paddle.mean(static.nn.fc(paddle.log(x), 1))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    compiled = static.CompiledProgram(main)
    good = {"x": np.full((3, 2), 2.0, np.float32)}
    for _ in range(plan_mod.HOT_RUNS + 2):
        exe.run(compiled, feed=good, fetch_list=[loss], scope=scope)
    before = {p.name: scope.get(p.name) for p in main.all_parameters()}
    bad = {"x": np.array([[2.0, 2.0], [-1.0, 2.0], [2.0, 2.0]], np.float32)}
    with pytest.raises(FloatingPointError, match="op log"):
        exe.run(compiled, feed=bad, fetch_list=[loss], scope=scope)
    for name, value in before.items():
        np.testing.assert_array_equal(scope.get(name), value, err_msg=name)
