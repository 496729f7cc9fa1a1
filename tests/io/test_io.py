"""Persistence: static.save/load (checkpoints with optimizer state), inference models,
and the Program <-> dict serializer. Every check compares against numpy copies taken
before the round trip."""
import json
import os

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.persistence import checkpoint
from numbaflow.graph import verify
from numbaflow.graph.serialize import program_from_dict, program_to_dict
from numbaflow.kernels.tensor import creation
from numbaflow.utils import unique_name

D, H = 4, 8


@pytest.fixture(autouse=True)
def fresh_scope():
    # deterministic initial parameters (as numbaflow.seed(7)), restored after the test
    with creation.seed_guard(7), static.scope_guard(static.Scope()):
        yield


def build(opt="adam", hidden=H, dtype="float32", extra_layer=False):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D], dtype)
        y = static.data("y", [None, 1], dtype)
        h = static.nn.fc(x, hidden, activation="relu")
        if extra_layer:
            h = static.nn.fc(h, hidden, activation="tanh")
        pred = static.nn.fc(h, 1)
        loss = paddle.mean(paddle.square(pred - y))
        if opt == "adam":
            paddle.optimizer.Adam(0.01).minimize(loss)
        elif opt == "sgd":
            paddle.optimizer.SGD(0.05).minimize(loss)
        elif opt == "momentum":
            paddle.optimizer.Momentum(0.05, 0.9).minimize(loss)
    return main, startup, x, y, pred, loss


def batch(seed, n=16, dtype="float32"):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D)).astype(dtype)
    return {"x": x, "y": (np.sin(x).sum(1, keepdims=True)).astype(dtype)}


def persistables(program):
    return [v for v in program.list_vars() if v.persistable]


def snapshot(program):
    scope = static.global_scope()
    return {v.name: scope.get(v.name) for v in persistables(program)}


def train(exe, main, loss, steps, seed0=0):
    return [float(exe.run(main, feed=batch(seed0 + i), fetch_list=[loss])[0])
            for i in range(steps)]


def trained(opt="adam", steps=3, **kw):
    main, startup, x, y, pred, loss = build(opt, **kw)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    train(exe, main, loss, steps)
    return exe, main, x, y, pred, loss


def leftovers(directory):
    return [f for f in os.listdir(directory) if f.endswith(".tmp")]


# ---------------------------------------------------------------- checkpoints
def test_save_load_restores_every_persistable_exactly(tmp_path):
    exe, main, *_ = trained("adam")
    before = snapshot(main)
    static.save(main, str(tmp_path / "ckpt" / "model"))      # parent dir is created
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["model.pdopt", "model.pdparams"]
    scope = static.global_scope()
    rng = np.random.default_rng(1)
    for name, a in before.items():                           # perturb everything
        scope.set(name, (a + rng.normal(size=a.shape) + 1).astype(a.dtype))
    assert not np.array_equal(scope.get("fc_0.w_0"), before["fc_0.w_0"])
    static.load(main, str(tmp_path / "ckpt" / "model"), exe)
    after = snapshot(main)
    assert sorted(after) == sorted(before)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
        assert after[name].dtype == before[name].dtype


def test_params_and_optimizer_state_go_to_separate_files(tmp_path):
    exe, main, *_ = trained("adam")
    static.save(main, str(tmp_path / "m"))
    params = checkpoint.read_arrays(str(tmp_path / "m.pdparams"))
    opt = checkpoint.read_arrays(str(tmp_path / "m.pdopt"))
    assert sorted(params) == sorted(p.name for p in main.all_parameters())
    assert "learning_rate_0" in opt
    assert any("moment1" in n for n in opt) and any("beta2_pow_acc" in n for n in opt)
    assert not set(params) & set(opt)


def test_adam_state_round_trips_into_a_fresh_scope(tmp_path):
    exe, main, *_ = trained("adam", steps=4)
    before = snapshot(main)
    moments = [n for n in before if "moment" in n]
    assert len(moments) == 8
    assert all(np.abs(before[n]).max() > 0 for n in moments)   # a few steps made them nonzero
    b1 = next(n for n in before if "beta1_pow_acc" in n)
    np.testing.assert_allclose(before[b1], [0.9 ** 5], rtol=1e-6)
    static.save(main, str(tmp_path / "m"))
    with static.scope_guard(static.Scope()):                   # no startup program run here
        static.load(main, str(tmp_path / "m"))
        after = snapshot(main)
    for n in before:
        np.testing.assert_array_equal(after[n], before[n], err_msg=n)


@pytest.mark.parametrize("opt", ["adam", "momentum"])
@pytest.mark.slow
def test_training_continues_identically_after_load(tmp_path, opt):
    main, startup, x, y, pred, loss = build(opt)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    train(exe, main, loss, 3)
    static.save(main, str(tmp_path / "m"))
    uninterrupted = train(exe, main, loss, 4, seed0=100)
    final = snapshot(main)
    with static.scope_guard(static.Scope()):
        exe2 = static.Executor(paddle.CPUPlace())
        static.load(main, str(tmp_path / "m"), exe2)
        resumed = train(exe2, main, loss, 4, seed0=100)
        final2 = snapshot(main)
    assert resumed == uninterrupted
    for n in final:
        np.testing.assert_array_equal(final2[n], final[n], err_msg=n)
    # the same scope and executor (plans already bound to the scope's arrays) rewind too
    static.load(main, str(tmp_path / "m"), exe)
    assert train(exe, main, loss, 4, seed0=100) == uninterrupted


def test_load_accepts_the_pdparams_path_and_var_list(tmp_path):
    exe, main, *_ = trained("adam")
    before = snapshot(main)
    static.save(main, str(tmp_path / "m"))
    scope = static.global_scope()
    scope.set("fc_0.w_0", np.zeros_like(before["fc_0.w_0"]))
    scope.set("learning_rate_0", np.array([7.0], np.float32))
    static.load(main, str(tmp_path / "m.pdparams"), var_list=[main.global_block().var("fc_0.w_0")])
    np.testing.assert_array_equal(scope.get("fc_0.w_0"), before["fc_0.w_0"])
    np.testing.assert_array_equal(scope.get("learning_rate_0"), [7.0])   # not in var_list


def test_save_without_startup_names_the_missing_variable(tmp_path):
    main, *_ = build("sgd")
    with pytest.raises(RuntimeError, match=r"fc_0\.w_0.*startup program"):
        static.save(main, str(tmp_path / "m"))
    assert os.listdir(tmp_path) == []


def _expect_load_error(main, path, *patterns):
    scope = static.global_scope()
    before = {v.name: scope.get(v.name) for v in persistables(main)
              if scope.find_var(v.name) is not None}
    with pytest.raises(ValueError) as info:
        static.load(main, path)
    msg = str(info.value)
    for p in patterns:
        assert p in msg, (p, msg)
    for n, a in before.items():          # nothing was written
        np.testing.assert_array_equal(scope.get(n), a, err_msg=n)
    return msg


def test_load_shape_mismatch_lists_each_variable_and_writes_nothing(tmp_path):
    exe, main, *_ = trained("sgd")
    static.save(main, str(tmp_path / "m"))
    with static.scope_guard(static.Scope()):
        other, startup, *_ = build("sgd", hidden=6)
        static.Executor().run(startup)
        msg = _expect_load_error(other, str(tmp_path / "m"),
                                 "'fc_0.w_0': expected shape (4, 6)", "found shape (4, 8)",
                                 "'fc_0.b_0'", "'fc_1.w_0'")
        assert "fc_1.b_0" not in msg       # that one matches


def test_load_dtype_mismatch(tmp_path):
    exe, main, *_ = trained("sgd")
    static.save(main, str(tmp_path / "m"))
    with static.scope_guard(static.Scope()):
        other, startup, *_ = build("sgd", dtype="float64")
        static.Executor().run(startup)
        _expect_load_error(other, str(tmp_path / "m"), "'fc_0.w_0'", "dtype float64",
                           "dtype float32", "'fc_1.b_0'")


def test_load_missing_variables(tmp_path):
    exe, main, *_ = trained("sgd")
    static.save(main, str(tmp_path / "m"))
    with static.scope_guard(static.Scope()):
        other, startup, *_ = build("adam", extra_layer=True)
        static.Executor().run(startup)
        msg = _expect_load_error(other, str(tmp_path / "m"), "'fc_2.w_0': missing",
                                 "'fc_2.b_0': missing", "moment1", "Nothing was loaded")
        # fc_1 of the 3-layer net is (8, 8): a shape mismatch reported in the same error
        assert "'fc_1.w_0': expected shape (8, 8)" in msg


def test_load_missing_files(tmp_path):
    main, *_ = build("sgd")
    with pytest.raises(FileNotFoundError, match="pdparams"):
        static.load(main, str(tmp_path / "nothing_here"))


def test_bad_format_version(tmp_path, monkeypatch):
    exe, main, *_ = trained("sgd")
    monkeypatch.setattr(checkpoint, "FORMAT_VERSION", 99)      # the writer's version
    static.save(main, str(tmp_path / "future"))
    monkeypatch.undo()
    _expect_load_error(main, str(tmp_path / "future"), "format version 99", "reads version 1")


def test_files_that_are_not_checkpoints(tmp_path):
    exe, main, *_ = trained("sgd")
    np.savez(tmp_path / "plain.pdparams", w=np.zeros(3))       # an npz without our header
    os.rename(tmp_path / "plain.pdparams.npz", tmp_path / "plain.pdparams")
    _expect_load_error(main, str(tmp_path / "plain"), "no '__numbaflow_format__'")
    (tmp_path / "junk.pdparams").write_bytes(b"\x80\x04not a checkpoint")
    _expect_load_error(main, str(tmp_path / "junk"), "not a numbaflow arrays file")


def test_failed_save_leaves_old_files_and_no_temp_files(tmp_path, monkeypatch):
    exe, main, *_ = trained("adam")
    static.save(main, str(tmp_path / "m"))
    old = {f: (tmp_path / f).read_bytes() for f in ("m.pdparams", "m.pdopt")}
    train(exe, main, _loss(main), 2, seed0=50)              # state changes
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 2:                                 # while writing the second file
            raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space"):
        static.save(main, str(tmp_path / "m"))
    monkeypatch.undo()
    for f, data in old.items():                             # neither file was replaced
        assert (tmp_path / f).read_bytes() == data, f
    assert leftovers(tmp_path) == []


def test_failed_first_save_creates_no_final_file(tmp_path, monkeypatch):
    exe, main, *_ = trained("sgd")

    def failing_fsync(fd):
        raise OSError(5, "I/O error")
    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        static.save(main, str(tmp_path / "m"))
    assert os.listdir(tmp_path) == []


def test_save_onto_a_directory_fails_cleanly(tmp_path):
    exe, main, *_ = trained("sgd")
    (tmp_path / "m.pdparams").mkdir()
    with pytest.raises(IsADirectoryError, match="directory"):
        static.save(main, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["m.pdparams"]
    assert os.listdir(tmp_path / "m.pdparams") == []


def _loss(main):
    return next(v for v in main.list_vars() if v.name.startswith("mean_"))


# ---------------------------------------------------------------- inference models
def test_inference_model_round_trip(tmp_path):
    exe, main, x, y, pred, loss = trained("adam", steps=5)
    test_program = main.clone(for_test=True)
    new = batch(999, n=7)["x"]
    expected, = exe.run(test_program, feed={"x": new}, fetch_list=[pred.name])
    prefix = str(tmp_path / "infer" / "model")
    static.save_inference_model(prefix, [x], [pred], exe, program=main)
    assert sorted(os.listdir(tmp_path / "infer")) == ["model.nfmodel", "model.nfparams"]
    with static.scope_guard(static.Scope()):
        exe2 = static.Executor(paddle.CPUPlace())
        program, feed_names, fetch_targets = static.load_inference_model(prefix, exe2)
        got, = exe2.run(program, feed={feed_names[0]: new}, fetch_list=fetch_targets)
        # every persistable of the loaded program came from the file
        assert sorted(static.global_scope().local_var_names()) == \
            sorted(v.name for v in persistables(program))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    assert feed_names == ["x"]
    assert [v.name for v in fetch_targets] == [pred.name]
    assert fetch_targets[0].block.program is program
    verify(program)
    types = [op.type for op in program.global_block().ops]
    assert types == ["mul", "elementwise_add", "relu", "mul", "elementwise_add"]
    assert {op.role for op in program.global_block().ops} == {"forward"}
    names = set(program.global_block().vars)
    assert not any("@GRAD" in n or "moment" in n or "learning_rate" in n for n in names)
    assert "y" not in names                  # the label is not needed for the prediction


def test_inference_model_prunes_to_the_fetched_branch(tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D])
        a = static.nn.fc(x, 3)
        b = static.nn.fc(x, 5)                       # another head, not fetched
        out = paddle.nn.functional.sigmoid(a)
    exe = static.Executor()
    exe.run(startup)
    static.save_inference_model(str(tmp_path / "m"), [x], [out], exe, program=main)
    with static.scope_guard(static.Scope()):
        program, _, fetch_targets = static.load_inference_model(str(tmp_path / "m"), exe)
        assert sorted(static.global_scope().local_var_names()) == ["fc_0.b_0", "fc_0.w_0"]
    assert b.name not in program.global_block().vars
    assert [op.type for op in program.global_block().ops] == ["mul", "elementwise_add",
                                                               "sigmoid"]


def test_inference_model_needs_every_input_fed(tmp_path):
    exe, main, x, y, pred, loss = trained("sgd")
    with pytest.raises(ValueError, match="'y'.*feed_vars"):
        static.save_inference_model(str(tmp_path / "m"), [x], [loss], exe, program=main)
    assert os.listdir(tmp_path) == []
    grad = main.global_block().var("fc_0.w_0@GRAD")
    with pytest.raises(ValueError, match="fc_0.w_0@GRAD"):
        static.save_inference_model(str(tmp_path / "m"), [x], [grad], exe, program=main)


def test_inference_model_feeding_an_intermediate(tmp_path):
    exe, main, x, y, pred, loss = trained("sgd")
    hidden = main.global_block().var("fc_0.tmp_2")         # relu output
    static.save_inference_model(str(tmp_path / "m"), [hidden], [pred], exe, program=main)
    h = np.abs(np.random.default_rng(3).normal(size=(5, H))).astype("float32")
    scope = static.global_scope()
    expected = h @ scope.get("fc_1.w_0") + scope.get("fc_1.b_0")
    with static.scope_guard(static.Scope()):
        program, feed_names, fetch_targets = static.load_inference_model(str(tmp_path / "m"),
                                                                         exe)
        got, = exe.run(program, feed={"fc_0.tmp_2": h}, fetch_list=fetch_targets)
    assert feed_names == ["fc_0.tmp_2"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_inference_model_errors(tmp_path):
    exe, main, x, y, pred, loss = trained("sgd")
    with pytest.raises(ValueError, match="directory"):
        static.save_inference_model(str(tmp_path), [x], [pred], exe, program=main)
    with pytest.raises(FileNotFoundError, match=r"absent\.nfmodel.*absent\.pdmodel"):
        static.load_inference_model(str(tmp_path / "absent"), exe)
    prefix = str(tmp_path / "m")
    static.save_inference_model(prefix, [x], [pred], exe, program=main)
    desc = json.loads((tmp_path / "m.nfmodel").read_text(encoding="utf-8"))
    desc["__numbaflow_format__"] = 99
    (tmp_path / "m.nfmodel").write_text(json.dumps(desc), encoding="utf-8")
    with pytest.raises(ValueError, match="format version 99"):
        static.load_inference_model(prefix, exe)
    (tmp_path / "m.nfmodel").write_text("not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a numbaflow model"):
        static.load_inference_model(prefix, exe)


def test_fluid_io_inference_model_in_a_directory(tmp_path):
    import numbaflow.fluid as fluid
    exe, main, x, y, pred, loss = trained("sgd")
    expected, = exe.run(main.clone(for_test=True), feed={"x": batch(5)["x"]}, fetch_list=[pred])
    names = fluid.io.save_inference_model(str(tmp_path / "dir"), ["x"], [pred], exe,
                                          main_program=main)
    assert names == [pred.name]
    assert sorted(os.listdir(tmp_path / "dir")) == ["__model__", "__params__"]
    with static.scope_guard(static.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / "dir"), exe)
        got, = exe.run(program, feed={"x": batch(5)["x"]}, fetch_list=fetches)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


# ---------------------------------------------------------------- the serializer
def test_program_dict_round_trip_keeps_everything():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D])
        h = paddle.clip(static.nn.fc(x, H, weight_attr=paddle.ParamAttr(learning_rate=0.5)),
                        min=0.0)                          # max = +inf attribute
        loss = paddle.mean(h)
        paddle.optimizer.Adam(0.01).minimize(loss)
    d = program_to_dict(main, ["x"], [loss.name])
    text = json.dumps(d, allow_nan=False)                 # standard JSON: inf is tagged
    back = program_from_dict(json.loads(text))
    verify(back)
    src, dst = main.global_block(), back.global_block()
    assert list(dst.vars) == list(src.vars)
    for name, v in src.vars.items():
        w = dst.vars[name]
        assert (w.shape, w.dtype, w.persistable, w.stop_gradient, w.is_data) == \
            (v.shape, v.dtype, v.persistable, v.stop_gradient, v.is_data), name
        assert type(w) is type(v), name
    assert dst.var("fc_0.w_0").optimize_attr == {"learning_rate": 0.5}
    assert len(dst.ops) == len(src.ops)
    for a, b in zip(src.ops, dst.ops):
        assert (a.type, a.role, a.attrs) == (b.type, b.role, b.attrs)
        assert {k: [v.name for v in vs] for k, vs in a.inputs.items()} == \
            {k: [v.name for v in vs] for k, vs in b.inputs.items()}
        assert {k: [v.name for v in vs] for k, vs in a.outputs.items()} == \
            {k: [v.name for v in vs] for k, vs in b.outputs.items()}
    clip = next(op for op in dst.ops if op.type == "clip")
    assert clip.attrs["max"] == float("inf")


def test_program_dict_rejects_unserializable_attrs():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D])
        y = paddle.scale(x, 2.0)
    y.block.ops[-1].attrs["scale"] = object()
    with pytest.raises(TypeError, match="scale.*cannot be serialized"):
        program_to_dict(main)
