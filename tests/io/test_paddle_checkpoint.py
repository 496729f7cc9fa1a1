"""Paddle 2.x checkpoints (pickled dicts of numpy arrays) load through a restricted
unpickler; a pickle naming anything else is refused without running it.

The "Paddle" files here are written the way Paddle 2.x writes them (paddle/static/io.py
`save`, paddle/framework/io.py `paddle.save` and io_utils `_unpack_saved_dict`):
`pickle.dump({var name: np.ndarray}, f, protocol)` for `.pdparams` / `.pdopt`, plus the
`StructuredToParameterName@@` name table of `paddle.save(layer.state_dict())` and the
`UnpackBigParamInfor@@` split of big arrays under protocols 2-3.
"""
import builtins
import os
import pickle

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4], "float32")
        y = static.data("y", [None, 1], "float32")
        h = static.nn.fc(x, 8, activation="relu")
        pred = static.nn.fc(h, 1)
        loss = paddle.mean(paddle.square(pred - y))
        paddle.optimizer.Adam(0.01).minimize(loss)
    return main, startup, pred


def paddle_state(main, seed=0):
    """Arrays for every persistable, as a trained Paddle program would hold them."""
    rng = np.random.default_rng(seed)
    out = {}
    for v in main.list_vars():
        if v.persistable:
            out[v.name] = rng.normal(size=v.shape).astype(v.dtype)
    params = {k: a for k, a in out.items() if k.startswith("fc_") and "_moment" not in k
              and "_pow_acc" not in k}
    return params, {k: a for k, a in out.items() if k not in params}


def old_numpy_names(data):
    """Protocol 2/3 pickles from numpy 1.x name `numpy.core.multiarray` (GLOBAL opcode:
    newline-terminated text, so the bytes can be swapped in place)."""
    return data.replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")


def write_paddle(path, obj, protocol):
    data = pickle.dumps(obj, protocol=protocol)
    if protocol < 4:
        data = old_numpy_names(data)
    with open(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_static_load_reads_paddle_pdparams_and_pdopt(tmp_path, protocol):
    main, startup, pred = build()
    params, opt = paddle_state(main)
    write_paddle(tmp_path / "model.pdparams", params, protocol)
    write_paddle(tmp_path / "model.pdopt", opt, protocol)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    static.load(main, str(tmp_path / "model"), exe)
    scope = static.global_scope()
    for name, a in {**params, **opt}.items():
        np.testing.assert_array_equal(scope.get(name), a, err_msg=name)
    # the loaded weights compute what numpy computes with them
    x = np.random.default_rng(1).normal(size=(5, 4)).astype("float32")
    got, = exe.run(main.clone(for_test=True), feed={"x": x}, fetch_list=[pred])
    h = np.maximum(x @ params["fc_0.w_0"] + params["fc_0.b_0"], 0)
    np.testing.assert_allclose(got, h @ params["fc_1.w_0"] + params["fc_1.b_0"], rtol=1e-5)


def test_fluid_load_persistables_and_program_state_read_paddle_files(tmp_path):
    main, startup, _ = build()
    params, opt = paddle_state(main, seed=3)
    write_paddle(tmp_path / "persistables.pdparams", params, 2)
    write_paddle(tmp_path / "persistables.pdopt", opt, 2)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    fluid.io.load_persistables(exe, str(tmp_path), main)
    for name, a in {**params, **opt}.items():
        np.testing.assert_array_equal(static.global_scope().get(name), a, err_msg=name)
    state = static.load_program_state(str(tmp_path / "persistables"))
    assert sorted(state) == sorted({**params, **opt})
    with static.scope_guard(static.Scope()):
        static.set_program_state(main, state)
        np.testing.assert_array_equal(static.global_scope().get("fc_1.w_0"), params["fc_1.w_0"])


def test_paddle_load_of_a_state_dict_with_name_table_and_big_param_split(tmp_path):
    rng = np.random.default_rng(0)
    weight, bias = rng.normal(size=(6, 5)).astype("float32"), np.arange(5, dtype="float64")
    flat = weight.reshape(-1)
    # paddle.save(layer.state_dict()) with a split array, as _unpack_saved_dict makes it
    obj = {"weight@@.0": flat[:16], "weight@@.1": flat[16:], "bias": bias,
           "UnpackBigParamInfor@@": {"weight": {"OriginShape": (6, 5),
                                                "slices": ["weight@@.0", "weight@@.1"]}},
           "StructuredToParameterName@@": {"weight": "linear_0.w_0", "bias": "linear_0.b_0"}}
    write_paddle(tmp_path / "layer.pdparams", obj, 2)
    state = paddle.load(str(tmp_path / "layer.pdparams"))
    assert sorted(state) == ["bias", "weight"]
    np.testing.assert_array_equal(state["weight"], weight)
    np.testing.assert_array_equal(state["bias"], bias)
    assert state["bias"].dtype == np.float64
    kept = paddle.load(str(tmp_path / "layer.pdparams"), keep_name_table=True)
    assert kept["StructuredToParameterName@@"] == {"weight": "linear_0.w_0",
                                                   "bias": "linear_0.b_0"}


def test_paddle_save_load_round_trip_is_numbaflow_format(tmp_path):
    state = {"a": np.arange(6, dtype="int64").reshape(2, 3), "b": np.float32(2.5)}
    paddle.save(state, str(tmp_path / "s.pdparams"))
    assert (tmp_path / "s.pdparams").read_bytes()[:4] == b"PK\x03\x04"     # npz, not pickle
    back = paddle.load(str(tmp_path / "s.pdparams"))
    np.testing.assert_array_equal(back["a"], state["a"])
    assert back["b"].shape == () and back["b"] == np.float32(2.5)
    with pytest.raises(TypeError, match="dict"):
        paddle.save([1, 2], str(tmp_path / "x"))
    with pytest.raises(FileNotFoundError, match="give the file"):
        paddle.load(str(tmp_path / "s"))              # a prefix: s.pdparams is the file


# ----------------------------------------------------------------------------- hostile pickles
class _Reduce:
    """Pickles as `func(*args)`: what a crafted checkpoint would make the loader call."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def hostile_cases(marker):
    return {
        "os.system": _Reduce(os.system, f"touch {marker}"),
        "builtins.open": _Reduce(builtins.open, str(marker), "w"),
        "builtins.exec": _Reduce(builtins.exec, f"open({str(marker)!r}, 'w').close()"),
        "numpy.save": _Reduce(np.save, str(marker), np.zeros(1)),
        # an allowed rebuilder fed by a refused one: refused before anything is called
        "nested": _Reduce(np.ndarray, _Reduce(os.system, f"touch {marker}")),
    }


@pytest.mark.parametrize("case", ["os.system", "builtins.open", "builtins.exec", "numpy.save",
                                  "nested"])
@pytest.mark.parametrize("protocol", [2, 4])
def test_hostile_pickle_is_refused_without_running(tmp_path, case, protocol):
    marker = tmp_path / "pwned"
    evil = hostile_cases(marker)[case]
    main, startup, _ = build()
    params, opt = paddle_state(main)
    params["fc_0.b_0"] = evil                    # one bad value among real arrays
    (tmp_path / "m.pdparams").write_bytes(pickle.dumps(params, protocol=protocol))
    write_paddle(tmp_path / "m.pdopt", opt, protocol)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    before = np.array(static.global_scope().get("fc_0.w_0"))
    for load in (lambda: static.load(main, str(tmp_path / "m"), exe),
                 lambda: paddle.load(str(tmp_path / "m.pdparams")),
                 lambda: fluid.io.load_persistables(exe, str(tmp_path), main, filename="m")):
        with pytest.raises(ValueError, match="refused without running") as info:
            load()
        assert "m.pdparams" in str(info.value)
    assert not marker.exists(), "code from the pickle ran"
    np.testing.assert_array_equal(static.global_scope().get("fc_0.w_0"), before)


def test_object_arrays_and_non_dicts_are_refused(tmp_path):
    path = tmp_path / "o.pdparams"
    write_paddle(path, {"w": np.array(["a", 1], dtype=object)}, 2)
    with pytest.raises(ValueError, match="o.pdparams.*other than numeric arrays"):
        paddle.load(str(path))
    write_paddle(path, [np.zeros(2)], 4)
    with pytest.raises(ValueError, match="not a dict"):
        paddle.load(str(path))
    path.write_bytes(pickle.dumps({"w": np.zeros(2)}, protocol=1))   # not Paddle's protocols
    with pytest.raises(ValueError, match="o.pdparams"):
        paddle.load(str(path))
