"""Data parallelism over local places (threads in one process): the central property is
that one step on D devices equals one step on one device with the concatenated batch
(rtol 1e-5), for every split; plus the gradient-scale strategies, fetch merging, feed
errors, replica consistency, failures and ParallelExecutor / share_vars_from."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import last_plan, passed_programs, replicas

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

D_IN, H, C = 6, 8, 3
GSS = static.BuildStrategy.GradientScaleStrategy


def mlp(opt=None):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D_IN], "float32")
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, H, activation="relu")
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, C), y)
        (opt or paddle.optimizer.SGD(learning_rate=0.1)).minimize(loss)
    return main, startup, loss


def batch(n, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((n, D_IN)).astype(np.float32),
            "y": rng.integers(0, C, (n, 1)).astype(np.int64)}


def two_scopes(startup):
    exe = static.Executor()
    a, b = static.Scope(), static.Scope()
    exe.run(startup, scope=a)
    for n in a.local_var_names():
        b.set(n, a.get(n))
    return exe, a, b


def parallel(main, loss, places=2, **bs_options):
    bs = static.BuildStrategy()
    for k, v in bs_options.items():
        setattr(bs, k, v)
    return static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
        loss_name=loss.name, places=[paddle.CPUPlace()] * places)


def params(main, scope):
    return {p.name: scope.get(p.name) for p in main.all_parameters()}


def assert_params_close(pa, pb, rtol=1e-5):
    for k in pa:
        np.testing.assert_allclose(pa[k], pb[k], rtol=rtol, atol=1e-7, err_msg=k)


@pytest.mark.parametrize("places,batch_size", [(2, 10), (3, 9), (3, 5), (2, 3)])
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_d_devices_equal_one_device_on_the_whole_batch(places, batch_size, opt):
    make = {"sgd": lambda: paddle.optimizer.SGD(0.1),
            "adam": lambda: paddle.optimizer.Adam(0.01)}[opt]
    main, startup, loss = mlp(make())
    exe, s1, s2 = two_scopes(startup)
    c = parallel(main, loss, places)
    for step in range(3):
        f = batch(batch_size, step)
        per_device, = exe.run(c, feed=f, fetch_list=[loss], scope=s1)
        whole, = exe.run(main, feed=f, fetch_list=[loss], scope=s2)
        assert per_device.shape == (places,)
        sizes = [len(r) for r in np.array_split(np.arange(batch_size), places)]
        np.testing.assert_allclose(np.dot(per_device, sizes) / batch_size, whole, rtol=1e-5)
    assert_params_close(params(main, s1), params(main, s2))


def test_runs_are_bit_reproducible():
    main, startup, loss = mlp(paddle.optimizer.Adam(0.01))
    out = []
    for _ in range(2):
        exe = static.Executor()
        scope = static.Scope()
        exe.run(startup, scope=scope)
        c = parallel(main, loss, 3)
        for step in range(3):
            exe.run(c, feed=batch(12, step), fetch_list=[loss], scope=scope)
        out.append(params(main, scope))
    for k in out[0]:
        np.testing.assert_array_equal(out[0][k], out[1][k])


def test_every_replica_holds_the_same_parameters():
    main, startup, loss = mlp()
    exe, s1, _ = two_scopes(startup)
    c = parallel(main, loss, 3)
    exe.run(c, feed=batch(9), fetch_list=[loss], scope=s1)
    for scope in [r.scope for r in replicas(c)][1:]:
        for p in main.all_parameters():
            np.testing.assert_array_equal(scope.get(p.name), s1.get(p.name))


def deltas(main, startup, loss, feed, **bs_options):
    exe, s1, _ = two_scopes(startup)
    before = params(main, s1)
    exe.run(parallel(main, loss, 2, **bs_options), feed=feed, fetch_list=[loss], scope=s1)
    return {k: s1.get(k) - v for k, v in before.items()}


def test_gradient_scale_one_is_d_times_coeff_num_device():
    main, startup, loss = mlp()
    f = batch(10)
    coeff = deltas(main, startup, loss, f)
    one = deltas(main, startup, loss, f, gradient_scale_strategy=GSS.One)
    for k in coeff:
        np.testing.assert_allclose(one[k], 2 * coeff[k], rtol=1e-4, atol=1e-7)


def test_customized_loss_gradient_is_fed_per_device():
    main, startup, loss = mlp()
    f = batch(10)
    coeff = deltas(main, startup, loss, f)
    lg = loss.name + "@GRAD"
    half = deltas(main, startup, loss, dict(f, **{lg: np.array([0.5, 0.5], np.float32)}),
                  gradient_scale_strategy=GSS.Customized)
    for k in coeff:
        np.testing.assert_allclose(half[k], coeff[k], rtol=1e-5, atol=1e-7)
    # [1, 0]: only device 0's shard (the first 5 rows) contributes
    first = deltas(main, startup, loss, dict(f, **{lg: np.array([1.0, 0.0], np.float32)}),
                   gradient_scale_strategy=GSS.Customized)
    exe, s1, _ = two_scopes(startup)
    before = params(main, s1)
    exe.run(main, feed={k: v[:5] for k, v in f.items()}, fetch_list=[loss], scope=s1)
    for k in first:
        np.testing.assert_allclose(first[k], s1.get(k) - before[k], rtol=1e-4, atol=1e-7)
    with pytest.raises(ValueError, match=r"@GRAD.*\(2,\)"):
        deltas(main, startup, loss, f, gradient_scale_strategy=GSS.Customized)


@pytest.mark.parametrize("fuse,size_mb,expected_ops", [(False, 32, 4), (True, 32, 1),
                                                        (True, 1e-4, None)])
def test_gradient_buckets(fuse, size_mb, expected_ops):
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    c = parallel(main, loss, 2, fuse_all_reduce_ops=fuse, fuse_grad_size_in_MB=size_mb)
    f = batch(8)
    exe.run(c, feed=f, fetch_list=[loss], scope=s1)
    exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2))
    program = passed_programs(c)[0]
    ops = program.global_block().ops
    n = sum(op.type == "c_allreduce_start" for op in ops)
    assert n == sum(op.type == "c_allreduce_wait" for op in ops)
    if expected_ops is not None:
        assert n == expected_ops
    if expected_ops == 1:       # read by the optimizer right away: nothing to overlap
        start = next(op for op in ops if op.type == "c_allreduce_start")
        assert ops[ops.index(start) + 1].type == "c_allreduce_wait"
        assert start.attrs["overlap"] is False
    else:                       # tiny buckets: one gradient (of 200 bytes or less) each
        assert 1 < n <= 4


def test_merged_and_unmerged_fetch():
    main, startup, loss = mlp()
    hidden = main.global_block().var("fc_0.tmp_2")
    exe, s1, _ = two_scopes(startup)
    c = parallel(main, loss, 2)
    lv, hv = exe.run(c, feed=batch(7), fetch_list=[loss, hidden], scope=s1)
    assert lv.shape == (2,) and hv.shape == (7, H)
    lv, hv = exe.run(c, feed=batch(7), fetch_list=[loss, hidden], scope=s1,
                     return_merged=False)
    assert [a.shape for a in hv] == [(4, H), (3, H)] and [a.shape for a in lv] == [(), ()]


def test_list_feed_gives_one_dict_per_device_and_small_batches_are_refused():
    main, startup, loss = mlp()
    exe, s1, _ = two_scopes(startup)
    c = parallel(main, loss, 2)
    lv, = exe.run(c, feed=[batch(4), batch(6, 1)], fetch_list=[loss], scope=s1)
    assert lv.shape == (2,)
    with pytest.raises(ValueError, match="feed data number 1 does not match the device number 2"):
        exe.run(c, feed=[batch(4)], fetch_list=[loss], scope=s1)
    with pytest.raises(ValueError, match="batch size 1 .* device count 2"):
        exe.run(c, feed=batch(1), fetch_list=[loss], scope=s1)


def test_a_parameter_set_in_the_scope_reaches_every_replica():
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    c = parallel(main, loss, 2)
    exe.run(c, feed=batch(6), fetch_list=[loss], scope=s1)
    w = np.full((D_IN, H), 0.01, np.float32)
    s1.set("fc_0.w_0", w)
    s2.set("fc_0.w_0", w)
    for n in ("fc_0.b_0", "fc_1.w_0", "fc_1.b_0"):
        s2.set(n, s1.get(n))
    f = batch(6, 5)
    exe.run(c, feed=f, fetch_list=[loss], scope=s1)
    exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2))


def test_a_failing_device_raises_and_leaves_the_group_usable():
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    c = parallel(main, loss, 2)
    exe.run(c, feed=batch(6), fetch_list=[loss], scope=s1)
    exe.run(main, feed=batch(6), fetch_list=[loss], scope=s2)
    bad = batch(6, 1)
    bad["y"][4, 0] = 7                       # out of range, on device 1's rows
    with pytest.raises(ValueError, match="label 7"):
        exe.run(c, feed=bad, fetch_list=[loss], scope=s1)
    f = batch(6, 2)
    exe.run(c, feed=f, fetch_list=[loss], scope=s1)
    exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2))


def test_iterations_per_run_with_data_parallel():
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    es = static.ExecutionStrategy()
    es.num_iteration_per_run = 3
    c = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, exec_strategy=es, places=[paddle.CPUPlace()] * 2)
    f = batch(8)
    exe.run(c, feed=f, fetch_list=[loss], scope=s1)
    for _ in range(3):
        exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2))


@pytest.mark.parametrize("places", [2, 3])
def test_iterations_per_run_over_an_iterator_feed(places):
    # a regression: the K-run transaction took every device scope's lock on the calling
    # thread, so device 1's thread blocked in its plan while device 0 waited for it in the
    # allreduce (a hang; the suite's per-test timeout turns one into a failure)
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    es = static.ExecutionStrategy()
    es.num_iteration_per_run = 3
    c = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, exec_strategy=es, places=[paddle.CPUPlace()] * places)
    feeds = [batch(6, seed) for seed in range(3)]
    got, = exe.run(c, feed=iter(feeds), fetch_list=[loss], scope=s1)
    for f in feeds:
        want, = exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    np.testing.assert_allclose(np.mean(got), want, rtol=1e-5)
    assert_params_close(params(main, s1), params(main, s2))


def test_share_vars_from_sees_the_trainers_weights():
    main, startup, loss = mlp()
    test_prog = main.clone(for_test=True)
    exe, s1, _ = two_scopes(startup)
    train = parallel(main, loss, 2)
    tester = static.CompiledProgram(test_prog).with_data_parallel(
        share_vars_from=train, places=[paddle.CPUPlace()] * 2)
    with pytest.raises(ValueError, match="not compiled and executed"):
        exe.run(tester, feed=batch(4), fetch_list=[loss.name], scope=s1)
    not_parallel = static.CompiledProgram(test_prog).with_data_parallel(
        share_vars_from=static.CompiledProgram(main), places=[paddle.CPUPlace()] * 2)
    with pytest.raises(ValueError, match="not data parallel"):
        exe.run(not_parallel, feed=batch(4), fetch_list=[loss.name], scope=s1)
    f = batch(4, 3)
    for _ in range(2):
        exe.run(train, feed=batch(6), fetch_list=[loss], scope=s1)
        tested, = exe.run(tester, feed=f, fetch_list=[loss.name], scope=static.Scope())
        want, = exe.run(test_prog, feed=f, fetch_list=[loss.name], scope=s1)
        np.testing.assert_allclose(tested.mean(), want, rtol=1e-5)


def test_inference_with_fewer_samples_than_devices_runs_on_the_first_ones():
    main, startup, loss = mlp()
    test_prog = main.clone(for_test=True)
    exe, s1, _ = two_scopes(startup)
    c = static.CompiledProgram(test_prog).with_data_parallel(places=[paddle.CPUPlace()] * 2)
    lv, = exe.run(c, feed=batch(1), fetch_list=[loss.name], scope=s1)
    assert lv.shape == (1,)


def test_parallel_executor(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    main, startup, loss = mlp()
    exe = static.Executor()
    with static.scope_guard(static.Scope()):
        exe.run(startup)
        ref = static.Scope()
        for n in static.global_scope().local_var_names():
            ref.set(n, static.global_scope().get(n))
        pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main)
        assert pe.device_count == 2
        f = batch(10)
        lv, = pe.run(fetch_list=[loss.name], feed=f)
        assert lv.shape == (2,)
        exe.run(main, feed=f, fetch_list=[loss], scope=ref)
        assert_params_close(params(main, static.global_scope()), params(main, ref))
        tester = fluid.ParallelExecutor(use_cuda=False, main_program=main.clone(for_test=True),
                                        share_vars_from=pe)
        tv, = tester.run(fetch_list=[loss.name], feed=batch(4, 1))
        assert tv.shape == (2,)
        pe.drop_local_exe_scopes()
        pe.run(fetch_list=[loss.name], feed=f)
    with pytest.raises(TypeError, match="share_vars_from should be ParallelExecutor"):
        fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main,
                               share_vars_from=object())


def test_seed_example_with_data_parallel_in_paddle_form(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    import numpy
    import numbaflow as paddle          # the SPEC import form: only this line differs
    import numbaflow.static as static
    paddle.enable_static()
    place = paddle.CPUPlace()
    exe = static.Executor(place)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        data = static.data(name='X', shape=[None, 1], dtype='float32')
        hidden = static.nn.fc(x=data, size=10)
        loss = paddle.mean(hidden)
        paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe.run(startup)
    compiled_prog = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
    x = numpy.random.random(size=(10, 1)).astype('float32')
    loss_data, = exe.run(compiled_prog, feed={"X": x}, fetch_list=[loss.name])
    assert loss_data.shape == (2,)


def test_reduce_strategy_owners_update_and_broadcast():
    from numbaflow.distributed.rewrite import assign_owners
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 1], "float32")
        out = static.nn.fc(static.nn.fc(x, 10), 3)
        loss = paddle.mean(out)
        paddle.optimizer.SGD(0.1).minimize(loss)
    # Paddle's example: fc(1->10) + fc(10->3): fc_1.b -> 0, fc_1.w -> 1, fc_0.b -> 0, fc_0.w -> 0
    assert assign_owners(main, 2) == {"fc_1.b_0": 0, "fc_1.w_0": 1, "fc_0.b_0": 0,
                                      "fc_0.w_0": 0}


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("fuse_broadcast", [True, False])
def test_reduce_equals_allreduce_and_state_lives_on_owners(opt, fuse_broadcast):
    make = {"sgd": lambda: paddle.optimizer.SGD(0.1),
            "adam": lambda: paddle.optimizer.Adam(0.01)}[opt]
    main, startup, loss = mlp(make())
    exe, s1, s2 = two_scopes(startup)
    red = parallel(main, loss, 2, reduce_strategy=static.BuildStrategy.ReduceStrategy.Reduce,
                   fuse_broadcast_ops=fuse_broadcast)
    allr = parallel(main, loss, 2)
    for step in range(3):
        f = batch(8, step)
        exe.run(red, feed=f, fetch_list=[loss], scope=s1)
        exe.run(allr, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2), rtol=1e-6)
    devices = replicas(red)
    for r in devices:
        updated = {op.input("Param")[0] for op in r.program.global_block().ops
                   if op.type in ("sgd", "adam")}
        assert updated == r.updates
    assert all(r.updates for r in devices) and not devices[0].updates & devices[1].updates
    assert devices[0].updates | devices[1].updates == {p.name for p in main.all_parameters()}
    if opt == "adam":      # moments of a parameter owned by device 1 never enter device 0's plan
        p1 = next(iter(devices[1].updates))
        moments = {n for n in s1.local_var_names() if n.startswith(p1) and "moment" in n}
        plan0, = devices[0].plans
        assert moments and not moments & {v.name for v in plan0.buffers}
        # ... while the user's scope still holds them, updated (a checkpoint is complete)
        for n in moments:
            np.testing.assert_allclose(s1.get(n), s2.get(n), rtol=1e-5, atol=1e-8)


def test_remove_unnecessary_lock_false_with_several_places_does_not_deadlock():
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    c = parallel(main, loss, 3, remove_unnecessary_lock=False)
    f = batch(9)
    exe.run(c, feed=f, fetch_list=[loss], scope=s1)
    exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2))


def test_fetched_gradient_is_the_summed_one_on_every_device():
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    c = parallel(main, loss, 2)
    f = batch(10)
    g_par, = exe.run(c, feed=f, fetch_list=["fc_0.w_0@GRAD"], scope=s1)
    g_one, = exe.run(main, feed=f, fetch_list=["fc_0.w_0@GRAD"], scope=s2)
    assert g_par.shape == (2 * D_IN, H)           # Paddle: the D copies concatenated
    np.testing.assert_allclose(g_par[:D_IN], g_one, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(g_par[:D_IN], g_par[D_IN:])


def test_a_bucket_of_gradients_lies_in_one_flat_buffer():
    from numbaflow.kernels.parallel.collective import flat_view
    main, startup, loss = mlp()
    exe, s1, s2 = two_scopes(startup)
    c = parallel(main, loss, 2)
    f = batch(6)
    exe.run(c, feed=f, fetch_list=[loss], scope=s1)
    exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2))
    plan = last_plan(c)
    op = next(op for op in plan.ops if op.type == "c_allreduce_wait")
    grads = [plan.buffers[v] for v in op.output_vars()]
    flat = flat_view(grads)
    assert flat is not None and flat.size == sum(g.size for g in grads)
    assert all(np.shares_memory(flat, g) for g in grads)


def test_buckets_start_as_soon_as_ready_and_are_waited_for_before_their_readers():
    main, startup, loss = mlp()
    c = parallel(main, loss, 2, fuse_grad_size_in_MB=1e-4)    # one bucket per gradient
    exe, s1, s2 = two_scopes(startup)
    f = batch(6)
    exe.run(c, feed=f, fetch_list=[loss], scope=s1)
    exe.run(main, feed=f, fetch_list=[loss], scope=s2)
    assert_params_close(params(main, s1), params(main, s2))
    ops = passed_programs(c)[0].global_block().ops
    types = [op.type for op in ops]
    first_start = types.index("c_allreduce_start")
    # backward compute runs while the first bucket is in flight
    assert any(t.endswith("_grad") for t in types[first_start:types.index("c_allreduce_wait")])
    assert ops[first_start].attrs["overlap"]
    for op in ops:
        if op.type == "c_allreduce_wait":
            summed = set(op.output_vars())
            later = ops[ops.index(op) + 1:]
            earlier = ops[:ops.index(op)]
            assert any(summed & set(o.input_vars()) for o in later)
            assert not any(summed & set(o.input_vars()) for o in earlier)


def test_one_place_fetches_like_d_places_and_takes_a_customized_loss_grad():
    # Paddle: a data-parallel program on one place fetches a 0-D loss as shape (1,) (D
    # places give (D,)), and GradientScaleStrategy.Customized takes `<loss>@GRAD` of
    # shape (1,) there, as (D,) on D places
    from numbaflow.distributed.modes import GradientScaleStrategy
    from numbaflow.utils import unique_name

    def net(lr):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), unique_name.guard():
            x = static.data("X", [None, 3], "float32")
            loss = paddle.mean(static.nn.fc(x, 2))
            paddle.optimizer.SGD(lr).minimize(loss)
        return main, startup, loss

    x = np.random.default_rng(0).random((4, 3)).astype(np.float32)
    main, startup, loss = net(0.1)
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    w0, b0 = scope.get("fc_0.w_0"), scope.get("fc_0.b_0")
    c = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                       places=[paddle.CPUPlace()])
    got, = exe.run(c, feed={"X": x}, fetch_list=[loss], scope=scope)
    assert got.shape == (1,)
    np.testing.assert_allclose(got[0], np.mean(x @ w0 + b0), rtol=1e-5)
    # Customized: the fed seed scales the gradient (seed 0.25 == lr * 0.25)
    bs = static.BuildStrategy()
    bs.gradient_scale_strategy = GradientScaleStrategy.Customized
    main, startup, loss = net(0.1)
    s1 = static.Scope()
    exe.run(startup, scope=s1)
    s1.set("fc_0.w_0", w0)
    c = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                       places=[paddle.CPUPlace()])
    exe.run(c, feed={"X": x, f"{loss.name}@GRAD": np.array([0.25], np.float32)},
            fetch_list=[loss], scope=s1)
    main2, startup2, loss2 = net(0.1 * 0.25)
    s2 = static.Scope()
    exe.run(startup2, scope=s2)
    s2.set("fc_0.w_0", w0)
    exe.run(main2, feed={"X": x}, fetch_list=[loss2], scope=s2)
    np.testing.assert_allclose(s1.get("fc_0.w_0"), s2.get("fc_0.w_0"), rtol=1e-6)
    np.testing.assert_allclose(s1.get("fc_0.b_0"), s2.get("fc_0.b_0"), rtol=1e-6)


def test_parallel_executor_checks_num_trainers_against_the_job(monkeypatch):
    # outside mpiexec the job is one trainer: num_trainers=2 is refused, not ignored;
    # the user's BuildStrategy is not modified
    monkeypatch.setenv("CPU_NUM", "2")
    from numbaflow.utils import unique_name
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("X", [None, 3], "float32")
        loss = paddle.mean(static.nn.fc(x, 2))
        paddle.optimizer.SGD(0.1).minimize(loss)
    bs = static.BuildStrategy()
    with static.scope_guard(static.Scope()):
        static.Executor().run(startup)
        pe = static.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main,
                                     build_strategy=bs, num_trainers=2, trainer_id=0)
        with pytest.raises(ValueError, match="num_trainers=2"):
            pe.run(fetch_list=[loss.name], feed={"X": np.ones((4, 3), np.float32)})
    assert bs.num_trainers == 1


def test_a_huge_num_iteration_per_run_needs_no_memory_per_iteration():
    from numbaflow.executor.runner import iteration_feeds as _iteration_feeds
    feed = {"X": np.ones((2, 1), np.float32)}
    assert _iteration_feeds(feed, 10 ** 12) == [feed]


def test_a_steady_step_starts_no_thread_and_checks_its_feed_once(monkeypatch):
    """The D-1 device threads are started once and kept across steps, and a repeated feed
    passes every device's plan cache repeat check without being checked again; the
    numbers are the step-by-step ones of a fresh runner."""
    import threading

    from numbaflow.distributed import feed as dp_feed
    main, startup, loss = mlp()
    exe, a, b = two_scopes(startup)
    checks, started = [], []
    real_check, real_start = dp_feed._check_each, threading.Thread.start
    monkeypatch.setattr(dp_feed, "_check_each",
                        lambda *args: checks.append(1) or real_check(*args))
    monkeypatch.setattr(threading.Thread, "start",
                        lambda t: started.append(t.name) or real_start(t))
    f = batch(12)
    c = parallel(main, loss, places=3)
    got = [exe.run(c, feed=f, fetch_list=[loss], scope=a)[0] for _ in range(4)]
    assert len(checks) == 1                  # the first step only
    got.append(exe.run(c, feed=batch(12, seed=1), fetch_list=[loss], scope=a)[0])
    assert len(checks) == 1                  # new arrays, same names, shapes and dtypes
    exe.run(c, feed=batch(6), fetch_list=[loss], scope=a)
    assert len(checks) == 2                  # a new batch size is checked
    assert sorted(n for n in started if n.startswith("numbaflow-device")) == \
        ["numbaflow-device-1", "numbaflow-device-2"]    # D-1, once
    # the same steps through a second compiled program on its own scope
    c2 = parallel(main, loss, places=3)
    want = [exe.run(c2, feed=f, fetch_list=[loss], scope=b)[0] for _ in range(4)]
    want.append(exe.run(c2, feed=batch(12, seed=1), fetch_list=[loss], scope=b)[0])
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)
