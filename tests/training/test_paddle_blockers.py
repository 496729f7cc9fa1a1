"""The Paddle programs issue 19 found stopping, each in Paddle's own spelling (the
docstring / book code with only the import changed): tensor arrays, the paddle.tensor
module, L1Decay, fluid.layers.device, dtype='int', the same fluid.data declared twice,
create_lod_tensor, a Customized loss gradient of shape (1,) on one device, and
paddle.static.amp refusing clearly."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def run(main, feed=None, fetch=()):
    return static.Executor(paddle.CPUPlace()).run(main, feed=feed or {}, fetch_list=list(fetch))


def test_array_write_and_read():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        tmp = fluid.layers.fill_constant(shape=[3, 2], dtype="int64", value=5)
        i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=10)
        arr = fluid.layers.array_write(tmp, i=i)
        item = fluid.layers.array_read(array=arr, i=i)
        n = fluid.layers.array_length(arr)
        x = fluid.data("x", [None, 2], "float32")
        arr2 = fluid.layers.create_array("float32")
        fluid.layers.array_write(x, 0, arr2)
        fluid.layers.array_write(x * 2.0, 1, arr2)
        total = fluid.layers.array_read(arr2, 0) + fluid.layers.array_read(arr2, 1)
    got_item, got_n, got_total = run(main, {"x": np.ones((2, 2), "float32")},
                                     [item, n, total])
    np.testing.assert_array_equal(got_item, np.full((3, 2), 5))
    assert got_n.tolist() == [11]
    np.testing.assert_array_equal(got_total, np.full((2, 2), 3.0))


def test_paddle_tensor_module():
    import numbaflow.tensor as T
    from numbaflow.tensor import creation, linalg, manipulation, math, random, search
    assert T.add is paddle.add and creation.arange is paddle.arange
    assert manipulation.reshape is paddle.reshape and math.sum is paddle.sum
    assert search.topk is paddle.topk and linalg.matmul is paddle.matmul
    assert random.multinomial is paddle.multinomial
    main = static.Program()
    with static.program_guard(main, static.Program()):
        y = paddle.tensor.tril(paddle.tensor.ones([3, 3]))
    np.testing.assert_array_equal(run(main, fetch=[y])[0], np.tril(np.ones((3, 3))))


def test_l1_decay():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32")
        y = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.Constant(0.5)), bias_attr=False)
        loss = fluid.layers.mean(y)
        fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L1Decay(0.2)).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    exe.run(main, feed={"x": np.array([[1.0, -1.0]], "float32")})
    w = np.array(fluid.global_scope().find_var("w").get_tensor())
    # grad = x^T (mean over 1 row) + 0.2 * sign(0.5)
    np.testing.assert_allclose(w.ravel(), [0.5 - 0.1 * (1 + 0.2), 0.5 - 0.1 * (-1 + 0.2)],
                               rtol=1e-6)


def test_layers_device_get_places():
    places = fluid.layers.device.get_places(device_count=2)
    assert len(places) == 2 and all(isinstance(p, fluid.CPUPlace) for p in places)


def test_dtype_int_is_int64():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        assert fluid.data("a", [None, 1], dtype="int").dtype == np.int64
        assert fluid.layers.data("b", [1], dtype="int").dtype == np.int64


def test_fluid_data_declared_twice_returns_the_same_variable():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        a = fluid.data("img", [None, 3], "float32")
        assert fluid.data("img", [None, 3], "float32") is a
        with pytest.raises(ValueError, match="same shape and dtype"):
            fluid.data("img", [None, 4], "float32")


def test_create_lod_tensor():
    t = fluid.create_lod_tensor(np.arange(4).reshape(4, 1), [[1, 1, 1, 1]], fluid.CPUPlace())
    np.testing.assert_array_equal(np.array(t), np.arange(4).reshape(4, 1))
    t = fluid.create_lod_tensor([[1], [2], [3]], [[1, 1, 1]], fluid.CPUPlace())
    assert t.shape() == [3, 1]
    with pytest.raises(NotImplementedError, match="pad the sequences"):
        fluid.create_lod_tensor(np.arange(5).reshape(5, 1), [[2, 3]], fluid.CPUPlace())
    with pytest.raises(ValueError, match="add up"):
        fluid.create_lod_tensor(np.arange(5).reshape(5, 1), [[1, 1]], fluid.CPUPlace())


def test_customized_loss_grad_of_shape_1_on_one_device():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3])
        w = paddle.create_parameter([3, 1], "float32", attr=paddle.ParamAttr(
            name="w", initializer=paddle.nn.initializer.Constant(1.0)))
        loss = paddle.mean(paddle.matmul(x, w))
        paddle.optimizer.SGD(0.1).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    bs = static.BuildStrategy()
    bs.gradient_scale_strategy = static.BuildStrategy.GradientScaleStrategy.Customized
    prog = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
        loss_name=loss.name, places=static.cpu_places(1))
    for step in range(2):      # the second run takes the repeat path
        exe.run(prog, feed={"x": np.ones((4, 3), "float32"),
                            loss.name + "@GRAD": np.array([0.5], "float32")})
    w_now = np.array(static.global_scope().find_var("w").get_tensor())
    # d loss / d w = mean of x's rows = 1, times the fed 0.5: two SGD steps of 0.1 each
    np.testing.assert_allclose(w_now, np.full((3, 1), 1.0 - 2 * 0.1 * 0.5), rtol=1e-6)


def test_static_amp_refuses_clearly():
    with pytest.raises(NotImplementedError, match="float32"):
        paddle.static.amp.decorate(paddle.optimizer.SGD(0.1))


def test_one_cycle_and_reduce_on_plateau_follow_paddle():
    import json
    from pathlib import Path
    want = json.loads((TESTS / "fixtures" / "paddle_lr.json").read_text(encoding="utf-8"))
    for name in ("one_cycle_cos", "one_cycle_linear_3"):
        s = paddle.optimizer.lr.OneCycleLR(**want[name]["kwargs"])
        got = []
        for _ in want[name]["lrs"]:
            got.append(s())
            s.step()
        np.testing.assert_allclose(got, want[name]["lrs"], rtol=1e-12, err_msg=name)
    p = want["plateau"]
    s = paddle.optimizer.lr.ReduceOnPlateau(**p["kwargs"])
    got = []
    for m in p["metrics"]:
        s.step(m)
        got.append(s())
    np.testing.assert_allclose(got, p["lrs"], rtol=1e-12)
    assert min(got) < 1.0                          # it did reduce


@pytest.mark.parametrize("thres", [False, True])
def test_exponential_moving_average(thres):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3])
        loss = paddle.mean(paddle.square(static.nn.fc(x, size=1)))
        paddle.optimizer.SGD(0.1).minimize(loss)
        step = fluid.layers.autoincreased_step_counter() if thres else None
        ema = static.ExponentialMovingAverage(0.9, thres_steps=step)
        ema.update()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = static.global_scope()
    names = [p.name for p in main.all_parameters()]
    avg, pw = {n: 0.0 for n in names}, 1.0
    rng = np.random.default_rng(0)
    for i in range(4):
        exe.run(main, feed={"x": rng.random((4, 3), dtype=np.float32)})
        t = float(np.asarray(scope.get(step.name)).reshape(-1)[0]) if thres else None
        d = min(0.9, (1 + t) / (10 + t)) if thres else 0.9
        for n in names:
            avg[n] = d * avg[n] + (1 - d) * np.array(scope.get(n))
        pw *= d
    trained = {n: np.array(scope.get(n)) for n in names}
    with ema.apply(exe):
        for n in names:
            np.testing.assert_allclose(scope.get(n), avg[n] / (1 - pw), rtol=1e-5, atol=1e-7)
    for n in names:
        np.testing.assert_array_equal(scope.get(n), trained[n])


def test_input_spec():
    spec = static.InputSpec([None, 784], "float32", "x")
    assert spec.shape == (-1, 784) and spec.dtype == np.float32 and spec.name == "x"
    assert spec.batch(8).shape == (8, -1, 784) and spec.batch(8).unbatch() == spec
    assert static.InputSpec.from_numpy(np.ones((2, 3), "int64")).shape == (2, 3)
    with static.program_guard(static.Program(), static.Program()):
        v = static.data("img", [None, 3, 8, 8])
        assert static.InputSpec.from_tensor(v) == static.InputSpec([None, 3, 8, 8],
                                                                   name="img")


def test_fluid_uniform_random_and_supports_bfloat16_as_paddle_spells_them():
    # issue 28 item 7: Paddle's docstrings stopped at these two names
    import numbaflow.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        result = fluid.layers.uniform_random(shape=[300, 4], min=2.0, max=5.0, seed=3)
    exe = fluid.Executor(fluid.CPUPlace())
    got, = exe.run(main, fetch_list=[result])
    again, = exe.run(main, fetch_list=[result])
    assert got.shape == (300, 4) and got.dtype == np.float32
    assert 2.0 <= got.min() and got.max() < 5.0 and abs(got.mean() - 3.5) < 0.15
    assert fluid.core.supports_bfloat16() is False


def test_gather_axis_as_a_constant_variable_and_a_run_time_one_refused():
    # issue 28 item 7: paddle.gather(x, index, axis=Variable), as Paddle's docstring writes it
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [3, 4], "float32")
        idx = static.data("idx", [2], "int64")
        out = paddle.gather(x, idx, axis=paddle.full([1], 1, "int64"))
        fed_axis = static.data("axis", [1], "int64")
        with pytest.raises(TypeError, match=r"gather: axis axis is a Variable computed when "
                                            r"the program runs.*paddle.full"):
            paddle.gather(x, idx, axis=fed_axis)
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    got, = static.Executor().run(main, feed={"x": xv, "idx": np.array([3, 0])},
                                 fetch_list=[out])
    np.testing.assert_array_equal(got, np.take(xv, [3, 0], axis=1))


def test_save_inference_model_whole_program_with_empty_feeds_and_fetches(tmp_path):
    # issue 28 item 7: Paddle accepts [] and [] with export_for_deployment=False and saves
    # the whole program unpruned, with its persistables
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        y = static.nn.fc(x, 2)
        unused = static.nn.fc(x, 5)        # pruning would drop it; the whole program keeps it
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        assert fluid.io.save_inference_model(str(tmp_path), [], [], exe,
                                             export_for_deployment=False) == []
        with pytest.raises(ValueError, match="fetch_vars must not be empty"):
            fluid.io.save_inference_model(str(tmp_path / "pruned"), [], [], exe)
    w = {p.name: np.asarray(static.global_scope().get(p.name)) for p in main.all_parameters()}
    program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
    assert feeds == [] and fetches == []
    assert [op.type for op in program.global_block().ops] == \
        [op.type for op in main.global_block().ops]
    assert {unused.name, y.name} <= set(program.global_block().vars)
    for name, value in w.items():
        np.testing.assert_array_equal(np.asarray(static.global_scope().get(name)), value)
