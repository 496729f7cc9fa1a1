"""Edges (issue 12, item 7): every case that used to return garbage, reduce another axis,
start thousands of threads, exhaust memory or be silently ignored now gives numpy's answer
or a typed error naming the argument.

References: numpy (np.max / np.argmax raise over an empty axis, np.sum gives 0, np.mean
gives nan), a sequential run for thread settings, and the MPI environment for trainers.
"""
import os
import warnings

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static
from numbaflow.kernels import run_op
from simulator import run_sim

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
F = paddle.nn.functional


def build(fn, shape, dtype="float32"):
    """(main, out) with x = static.data('x', shape) and out = fn(x)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        out = fn(static.data("x", shape, dtype))
    return main, out


def run(fn, shape, value):
    main, out = build(fn, shape, str(value.dtype))
    return static.Executor().run(main, feed={"x": value}, fetch_list=[out])[0]


def numpy_raises(fn, *args, **kwargs):
    """numpy, the reference, raises ValueError here too."""
    with pytest.raises(ValueError):
        fn(*args, **kwargs)


# ---------------------------------------------------------------- reductions over an empty axis
EMPTY = np.empty((3, 0), np.float32)


@pytest.mark.parametrize("layer,np_fn", [(paddle.max, np.max), (paddle.min, np.min),
                                         (paddle.argmax, np.argmax)])
@pytest.mark.parametrize("axis", [1, -1, None])
def test_max_min_argmax_over_an_empty_axis_raise_like_numpy(layer, np_fn, axis):
    numpy_raises(np_fn, EMPTY, axis=axis)
    # size 0 known when the program is built
    with pytest.raises(ValueError, match=r"size 0|no elements") as e:
        build(lambda x: layer(x, axis=axis), [None, 0])
    assert "X x " in str(e.value)
    # size 0 known only from the feed: refused when the plan is built, before any kernel
    main, out = build(lambda x: layer(x, axis=axis), [None, None])
    with pytest.raises(ValueError, match=r"size 0|no elements") as e:
        static.Executor().run(main, feed={"x": EMPTY}, fetch_list=[out])
    assert "X x " in str(e.value) and "(3, 0)" in str(e.value)


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min", "arg_max"])
def test_empty_reduction_kernels_refuse_instead_of_reading_past_the_buffer(op):
    attrs = {"axis": 1} if op == "arg_max" else {"dim": [1]}
    with pytest.raises(ValueError, match="size 0"):
        run_op(op, {"X": np.empty((4, 0, 5), np.float32)}, attrs)
    with pytest.raises(ValueError, match="no elements"):
        run_op(op, {"X": np.empty((4, 0, 5), np.float32)},
               {"flatten": True} if op == "arg_max" else {"reduce_all": True})


@pytest.mark.parametrize("layer,np_fn", [(paddle.sum, np.sum), (paddle.mean, np.mean)])
def test_sum_and_mean_over_an_empty_axis_match_numpy(layer, np_fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # numpy's "mean of empty slice"
        want_axis, want_all = np_fn(EMPTY, axis=1), np_fn(EMPTY)
    np.testing.assert_array_equal(run(lambda x: layer(x, axis=1), [None, None], EMPTY),
                                  want_axis)
    np.testing.assert_array_equal(run(lambda x: layer(x, axis=[0, 1]), [None, None], EMPTY),
                                  want_all)


@pytest.mark.parametrize("layer,np_fn", [(paddle.max, np.max), (paddle.min, np.min),
                                         (paddle.argmax, np.argmax), (paddle.sum, np.sum)])
def test_reducing_a_non_empty_axis_of_an_empty_tensor_is_empty_like_numpy(layer, np_fn):
    x = np.empty((2, 0, 3), np.float32)
    got = run(lambda v: layer(v, axis=2), [None, None, 3], x)
    assert got.shape == np_fn(x, axis=2).shape == (2, 0)


def test_softmax_over_an_empty_axis_is_empty():
    for f in (F.softmax, F.log_softmax):
        got = run(lambda v: f(v, axis=1), [None, None], EMPTY)
        assert got.shape == (3, 0)


# ---------------------------------------------------------------- argmax axis range
@pytest.mark.parametrize("axis", [2, 5, -3, -7])
def test_argmax_with_an_out_of_range_axis_names_axis_and_rank(axis):
    with pytest.raises(np.exceptions.AxisError):
        np.argmax(np.zeros((2, 3)), axis=axis)
    with pytest.raises(ValueError, match=rf"axis {axis} is out of range for rank 2"):
        build(lambda x: paddle.argmax(x, axis=axis), [None, 3])
    with pytest.raises(ValueError, match=rf"axis {axis} is out of range for rank 2"):
        run_op("arg_max", {"X": np.zeros((2, 3), np.float32)}, {"axis": axis})


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3, None])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_in_range_axes_match_numpy(axis, keepdim):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    got = run(lambda v: paddle.argmax(v, axis=axis, keepdim=keepdim), [None, 3, 4], x)
    want = np.argmax(x, axis=axis, keepdims=keepdim)
    np.testing.assert_array_equal(got, want)


def test_argmax_and_reduce_axis_types():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run(lambda v: paddle.sum(v, axis=np.int64(1)), [None, 3], x),
                                  x.sum(axis=1))
    np.testing.assert_array_equal(run(lambda v: paddle.argmax(v, axis=np.int32(0)), [None, 3], x),
                                  x.argmax(axis=0))
    for bad in (1.5, "1", True):
        with pytest.raises(TypeError, match="axis"):
            build(lambda v: paddle.max(v, axis=bad), [None, 3])
        with pytest.raises(TypeError, match="axis"):
            build(lambda v: paddle.argmax(v, axis=bad), [None, 3])
    with pytest.raises(TypeError, match="axis"):
        build(lambda v: paddle.sum(v, axis=[0, 1.0]), [None, 3])


# ---------------------------------------------------------------- the other axis-taking ops
AXIS_ERRORS = [
    ("max", lambda x: paddle.max(x, axis=2), "axis 2"),
    ("min", lambda x: paddle.min(x, axis=-3), "axis -3"),
    ("sum", lambda x: paddle.sum(x, axis=[0, 2]), "axis 2"),
    ("mean", lambda x: paddle.mean(x, axis=5), "axis 5"),
    ("fluid.reduce_sum", lambda x: fluid.layers.reduce_sum(x, dim=2), "axis 2"),
    ("softmax", lambda x: F.softmax(x, axis=2), "axis 2"),
    ("log_softmax", lambda x: F.log_softmax(x, axis=-3), "axis -3"),
    ("cross_entropy", lambda x: F.cross_entropy(
        x, static.data("y", [None, 1], "int64"), axis=2), "axis 2"),
    ("softmax_with_cross_entropy", lambda x: F.softmax_with_cross_entropy(
        x, static.data("y", [None, 1], "int64"), axis=-3), "axis -3"),
    ("fluid.argmax", lambda x: fluid.layers.argmax(x, axis=2), "axis 2 .*rank 2"),
    ("concat", lambda x: paddle.concat([x, x], axis=2), "axis 2"),
    ("split", lambda x: paddle.split(x, 1, axis=-3), "axis -3"),
    ("flatten", lambda x: paddle.flatten(x, start_axis=2), "start_axis 2"),
    ("squeeze", lambda x: paddle.squeeze(x, axis=3), "axis 3"),
    ("unsqueeze", lambda x: paddle.unsqueeze(x, axis=4), "axis 4"),
    ("transpose", lambda x: paddle.transpose(x, [0, 2]), r"\[0, 2\]"),
    ("elementwise_add axis -5", lambda x: fluid.layers.elementwise_add(
        x, paddle.full([3], 1.0), axis=-5), "axis -5"),
    ("elementwise_add axis 2", lambda x: fluid.layers.elementwise_add(
        x, paddle.full([3], 1.0), axis=2), "axis 2"),
]


@pytest.mark.parametrize("name,fn,match", AXIS_ERRORS, ids=[a[0] for a in AXIS_ERRORS])
def test_every_axis_taking_layer_refuses_an_out_of_range_axis(name, fn, match):
    with pytest.raises(ValueError, match=match):
        build(fn, [None, 3])


def test_elementwise_axis_in_range_still_broadcasts_like_paddle():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([10, 20], np.float32)
    got = run_op("elementwise_add", {"X": x, "Y": y}, {"axis": 0})["Out"]
    np.testing.assert_array_equal(got, x + y[:, None])


@pytest.mark.gpu
@pytest.mark.slow
def test_empty_sum_on_the_simulated_gpu_is_zero_not_garbage():
    # a wide C (>= 32) takes the one-thread-per-output kernel, which read x[a, 0, c]
    assert "ok" in run_sim("empty_sum", timeout=300).stdout



# ---------------------------------------------------------------- ExecutionStrategy / places
def test_num_threads_beyond_the_cap_is_refused_at_assignment():
    from numbaflow.compiler.strategy import MAX_NUM_THREADS
    es = static.ExecutionStrategy()
    for bad in (100000, MAX_NUM_THREADS + 1, -1):
        with pytest.raises(ValueError, match=rf"num_threads must be in \[0, {MAX_NUM_THREADS}\]"):
            es.num_threads = bad
    assert es.num_threads == 0                      # unchanged by the refused values
    es.num_threads = MAX_NUM_THREADS
    assert es.num_threads == MAX_NUM_THREADS


def _dp_mlp():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4], "float32")
        loss = paddle.mean(static.nn.fc(x, 3))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def test_num_threads_times_places_beyond_the_total_cap_is_refused_at_compile():
    from numbaflow.compiler.strategy import MAX_TOTAL_THREADS
    main, startup, loss = _dp_mlp()
    exe = static.Executor()
    exe.run(startup)
    es = static.ExecutionStrategy()
    es.num_threads = 200
    places = 1 + MAX_TOTAL_THREADS // 200
    compiled = static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, exec_strategy=es, places=static.cpu_places(places))
    with pytest.raises(ValueError, match=rf"num_threads=200 on {places} places"):
        exe.run(compiled, feed={"x": np.ones((places, 4), np.float32)}, fetch_list=[loss])


def test_many_threads_within_the_cap_give_the_sequential_result():
    main, startup, loss = _dp_mlp()
    exe = static.Executor()
    exe.run(startup)
    scope = static.global_scope()
    init = {n: scope.get(n).copy() for n in scope.local_var_names()}
    x = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)

    def steps(threads):
        with static.scope_guard(static.Scope()):
            for n, v in init.items():
                static.global_scope().set(n, v.copy())
            es = static.ExecutionStrategy()
            es.num_threads = threads
            compiled = static.CompiledProgram(main).with_data_parallel(
                loss_name=loss.name, exec_strategy=es, places=static.cpu_places(2))
            return [exe.run(compiled, feed={"x": x}, fetch_list=[loss])[0] for _ in range(3)]
    one = steps(1)
    assert not np.array_equal(one[0], one[-1])      # the steps do train
    np.testing.assert_array_equal(steps(64), one)


def test_cpu_places_has_a_sane_bound_and_typed_errors(monkeypatch):
    from numbaflow.executor.place import MAX_CPU_PLACES
    with pytest.raises(ValueError, match=rf"device_count must be in \[1, {MAX_CPU_PLACES}\], "
                                         r"got 1000000000000"):
        static.cpu_places(10 ** 12)
    for bad in (0, -3, MAX_CPU_PLACES + 1):
        with pytest.raises(ValueError, match="device_count"):
            static.cpu_places(bad)
    for bad in (2.0, "2", True):
        with pytest.raises(TypeError, match="device_count must be an int"):
            static.cpu_places(bad)
    assert static.cpu_places(np.int64(2)) == [paddle.CPUPlace()] * 2
    assert len(static.cpu_places(MAX_CPU_PLACES)) == MAX_CPU_PLACES
    monkeypatch.setenv("CPU_NUM", str(10 ** 12))
    with pytest.raises(ValueError, match="CPU_NUM must be in"):
        static.cpu_places()
    monkeypatch.setenv("CPU_NUM", "two")
    with pytest.raises(ValueError, match="CPU_NUM must be a positive integer"):
        static.cpu_places()


def test_cpu_num_unset_is_one_warning_on_the_numbaflow_logger(caplog, capsys, monkeypatch):
    monkeypatch.delenv("CPU_NUM", raising=False)
    with caplog.at_level("WARNING", logger="numbaflow"):
        assert static.cpu_places() == [paddle.CPUPlace()]
    (record,) = caplog.records
    assert record.name == "numbaflow" and record.levelname == "WARNING"
    assert "CPU_NUM is not set" in record.getMessage()
    assert capsys.readouterr().err == ""            # a log record, not a print
    assert os.environ["CPU_NUM"] == "1"
    caplog.clear()
    with caplog.at_level("WARNING", logger="numbaflow"):
        static.cpu_places()                         # CPU_NUM is now set: no second warning
    assert caplog.records == []


# ---------------------------------------------------------------- BuildStrategy values
@pytest.mark.parametrize("bad", [0, -1, 0.0, -0.5, float("nan"), float("inf")])
def test_fuse_grad_size_must_be_a_finite_positive_size(bad):
    bs = static.BuildStrategy()
    with pytest.raises(ValueError, match="fuse_grad_size_in_MB must be a finite number > 0"):
        bs.fuse_grad_size_in_MB = bad
    assert bs.fuse_grad_size_in_MB == 32
    bs.fuse_grad_size_in_MB = 1e-4                  # tiny buckets stay allowed
    with pytest.raises(TypeError):
        bs.fuse_grad_size_in_MB = "32"


def test_num_trainers_and_trainer_id_are_checked_at_assignment():
    bs = static.BuildStrategy()
    for bad in (0, -2):
        with pytest.raises(ValueError, match="num_trainers must be >= 1"):
            bs.num_trainers = bad
    with pytest.raises(ValueError, match="trainer_id must be >= 0"):
        bs.trainer_id = -1
    with pytest.raises(TypeError):
        bs.num_trainers = 2.0
    assert (bs.num_trainers, bs.trainer_id) == (1, 0)


@pytest.mark.parametrize("field,value,match", [
    ("num_trainers", 2, r"num_trainers=2 but this job has 1 trainer"),
    ("trainer_id", 1, r"trainer_id=1 is outside the job's ranks 0..0"),
])
def test_trainers_that_are_not_the_world_are_refused_at_compile(field, value, match):
    main, startup, loss = _dp_mlp()
    exe = static.Executor()
    exe.run(startup)
    bs = static.BuildStrategy()
    setattr(bs, field, value)
    compiled = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
        loss_name=loss.name, places=static.cpu_places(2))
    with pytest.raises(ValueError, match=match):
        exe.run(compiled, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[loss])
    assert getattr(bs, field) == value               # the user's object is untouched


def test_trainers_follow_the_mpi_environment(monkeypatch):
    # what mpiexec (hydra) announces to rank 1 of 3; no MPI is started by effective()
    monkeypatch.setenv("PMI_SIZE", "3")
    monkeypatch.setenv("PMI_RANK", "1")
    bs = static.BuildStrategy()
    assert (bs.num_trainers, bs.trainer_id) == (3, 1)
    assert bs.effective().num_trainers == 3
    bs.trainer_id = 0
    with pytest.raises(ValueError, match=r"trainer_id=0 is not this process's rank; ranks are "
                                         r"0..2 \(this process is rank 1\)"):
        bs.effective()
    bs.trainer_id = 3
    with pytest.raises(ValueError, match=r"trainer_id=3 is outside the job's ranks 0..2"):
        bs.effective()
    bs.trainer_id, bs.num_trainers = 1, 2
    with pytest.raises(ValueError, match=r"num_trainers=2 but this job has 3"):
        bs.effective()
