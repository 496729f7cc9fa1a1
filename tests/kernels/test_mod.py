"""The mod op (Paddle's `elementwise_mod`: paddle.remainder / mod / floor_mod, `%`,
fluid.layers.elementwise_mod), issue 17 item 4.

The result takes the divisor's sign, as Python's % and numpy's remainder (real Paddle
2.6.2 gives [1, 2, -2, -1] for [7, -7, 7, -7] mod [3, 3, -3, -3], and 1.5, 0.5, -0.5, -1.5
for +-5.5 mod +-2). References are numpy's remainder; an integer zero divisor raises
ZeroDivisionError naming the op (Paddle raises too; numpy silently gives 0), a float one
gives NaN as numpy does. Paddle has no gradient for mod: backward stops there.
"""
import os
import subprocess
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numbaflow as paddle
import numbaflow.fluid as fluid
import numbaflow.static as static
from simulator import run_sim

INTS = [np.dtype(d) for d in ("int8", "int16", "int32", "int64", "uint8")]
FLOATS = [np.dtype("float32"), np.dtype("float64")]
SHAPE = (2, 3, 4)
_PROGRAMS = {}
_EXE = static.Executor(paddle.CPUPlace())


def program(dt, fuse=False):
    """(program, {name: fetched Variable}) over x, y (SHAPE) and a row yb (SHAPE[-1:])."""
    key = (dt.str, fuse)
    if key not in _PROGRAMS:
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", list(SHAPE), dt)
            y = static.data("y", list(SHAPE), dt)
            yb = static.data("yb", list(SHAPE[-1:]), dt)
            f = {"remainder": paddle.remainder(x, y), "op": x % y, "bcast": paddle.mod(x, yb),
                 "fluid": fluid.layers.elementwise_mod(x, y), "floor_mod": paddle.floor_mod(x, y),
                 # a fusable chain: (x % y) % yb + x % 7 (an integral constant on the right)
                 "chain": (x % y) % yb + x % 7}
        prog = main
        if fuse:
            bs = static.BuildStrategy()
            bs.enable_auto_fusion = True
            prog = static.CompiledProgram(main, build_strategy=bs)
        _PROGRAMS[key] = prog, f
    return _PROGRAMS[key]


def reference(x, y, yb):
    with np.errstate(all="ignore"):
        r = np.remainder(x, y)
        chain = np.remainder(r, yb) + np.remainder(x, np.array(7, x.dtype))
        return {"remainder": r, "op": r, "bcast": np.remainder(x, yb), "fluid": r,
                "floor_mod": r, "chain": chain.astype(x.dtype)}


def run(dt, x, y, yb, fuse=False):
    prog, f = program(dt, fuse)
    names = sorted(f)
    got = _EXE.run(prog, feed={"x": x, "y": y, "yb": yb}, fetch_list=[f[n] for n in names])
    return dict(zip(names, got))


def arrays(dt, shape, nonzero=False):
    if dt.kind == "f":
        elems = st.floats(-1e6, 1e6, width=dt.itemsize * 8, allow_nan=False)
    else:
        info = np.iinfo(dt)
        elems = st.integers(info.min, info.max)
    if nonzero:
        elems = elems.filter(lambda v: v != 0)
    return hnp.arrays(dt, shape, elements=elems)


@pytest.mark.parametrize("fuse", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("dt", INTS + FLOATS, ids=str)
@settings(max_examples=20, deadline=None, database=None, derandomize=True)
@given(data=st.data())
def test_mod_matches_numpy(dt, fuse, data):
    x = data.draw(arrays(dt, SHAPE), label="x")
    y = data.draw(arrays(dt, SHAPE, nonzero=True), label="y")
    yb = data.draw(arrays(dt, SHAPE[-1:], nonzero=True), label="yb")
    if dt.kind in "iu":          # INT_MIN % -1 is 0 (the hardware division would trap)
        x.flat[0], y.flat[0] = np.iinfo(dt).min, (-1 if dt.kind == "i" else 1)
    got, want = run(dt, x, y, yb, fuse), reference(x, y, yb)
    for name, w in want.items():
        assert got[name].dtype == dt, (name, got[name].dtype)
        np.testing.assert_array_equal(got[name], w, err_msg=f"{name} over {dt}")


def test_the_divisors_sign_as_in_paddle():
    """The values real Paddle 2.6.2 returned (see the module docstring)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        a, b = static.data("a", [4], "int32"), static.data("b", [4], "int32")
        f, g = static.data("f", [4], "float32"), static.data("g", [4], "float32")
        outs = [a % b, f % g, 10 % b]
    ints, floats, rmod = _EXE.run(main, feed={
        "a": np.array([7, -7, 7, -7], np.int32), "b": np.array([3, 3, -3, -3], np.int32),
        "f": np.array([5.5, -5.5, 5.5, -5.5], np.float32),
        "g": np.array([2, 2, -2, -2], np.float32)}, fetch_list=outs)
    assert ints.tolist() == [1, 2, -2, -1]
    assert floats.tolist() == [1.5, 0.5, -0.5, -1.5]
    assert rmod.tolist() == [1, 1, -2, -2]          # 10 % b: the number on the left


@pytest.mark.parametrize("fuse", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("dt", INTS, ids=str)
def test_integer_modulo_by_zero_raises(dt, fuse):
    prog, f = program(dt, fuse)
    x, y, yb = np.ones(SHAPE, dt), np.ones(SHAPE, dt), np.ones(SHAPE[-1:], dt)
    y[1, 2, 3] = 0
    with pytest.raises(ZeroDivisionError, match="integer modulo by zero") as e:
        _EXE.run(prog, feed={"x": x, "y": y, "yb": yb}, fetch_list=[f["chain"]])
    msg = str(e.value)
    assert "'y'" in msg and "elementwise_mod" in msg, msg
    assert ("sub-op" in msg and "fused_elementwise" in msg) == fuse, msg
    # a good batch afterwards runs (the error flag does not stick)
    y[1, 2, 3] = 1
    out, = _EXE.run(prog, feed={"x": x, "y": y, "yb": yb}, fetch_list=[f["remainder"]])
    np.testing.assert_array_equal(out, np.zeros(SHAPE, dt))


def test_float_modulo_by_zero_is_nan_as_numpy():
    prog, f = program(np.dtype("float32"))
    x = np.full(SHAPE, 3.5, np.float32)
    y = np.ones(SHAPE, np.float32)
    y[0, 0, 0] = 0.0
    out, = _EXE.run(prog, feed={"x": x, "y": y, "yb": np.ones(4, np.float32)},
                    fetch_list=[f["remainder"]])
    assert np.isnan(out[0, 0, 0]) and (out.ravel()[1:] == 0.5).all()


def test_mod_has_no_gradient_as_in_paddle():
    """Paddle registers no grad op for elementwise_mod: x gets no gradient through it
    (its gradient comes from the other path only)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [3], "float32")
        x.stop_gradient = False
        loss = paddle.sum(x % 2.0 + x * 3.0)
        gx, = static.gradients([loss], [x])
    assert not any(op.type.startswith("elementwise_mod_grad") for op in main.global_block().ops)
    got, = _EXE.run(main, feed={"x": np.array([0.5, 2.5, -1.0], np.float32)}, fetch_list=[gx])
    np.testing.assert_array_equal(got, [3.0, 3.0, 3.0])


def test_mismatched_dtypes_are_refused_by_name():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x, y = static.data("x", [3], "int64"), static.data("y", [3], "float32")
        with pytest.raises(TypeError, match="elementwise_mod.*same dtype"):
            paddle.remainder(x, y)


@pytest.mark.slow
@pytest.mark.gpu
def test_mod_on_simulated_gpu_matches_numpy():
    r = run_sim("mod", timeout=900)
    assert "checked 28" in r.stdout, r.stdout[-2000:]


PADDLE_PYTHON = os.environ.get("NUMBAFLOW_PADDLE_PYTHON")
PADDLE_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import paddle
    paddle.enable_static()
    data = dict(np.load(sys.argv[1]))
    out = {}
    for dt in ("int32", "int64", "float32", "float64"):
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", data["x_" + dt].shape, dt)
            y = paddle.static.data("y", data["y_" + dt].shape, dt)
            r = paddle.remainder(x, y)
        exe = paddle.static.Executor(paddle.CPUPlace())
        out[dt], = exe.run(main, feed={"x": data["x_" + dt], "y": data["y_" + dt]},
                           fetch_list=[r])
    np.savez(sys.argv[2], **out)
""")


@pytest.mark.slow
@pytest.mark.skipif(not PADDLE_PYTHON, reason="set NUMBAFLOW_PADDLE_PYTHON to a Paddle 2.6 "
                                               "interpreter (its own venv: Paddle needs numpy < 2)")
def test_mod_equals_real_paddle(tmp_path):
    """paddle.remainder in real Paddle and here give the same numbers, bit for bit."""
    rng = np.random.default_rng(5)
    data = {}
    for dt in ("int32", "int64", "float32", "float64"):
        if dt.startswith("int"):
            x = rng.integers(-1000, 1000, (4, 6)).astype(dt)
            y = rng.integers(1, 30, (4, 6)).astype(dt) * rng.choice([-1, 1], (4, 6)).astype(dt)
        else:
            x = rng.uniform(-100, 100, (4, 6)).astype(dt)
            y = (rng.uniform(0.5, 9, (4, 6)) * rng.choice([-1, 1], (4, 6))).astype(dt)
        data["x_" + dt], data["y_" + dt] = x, y
    np.savez(tmp_path / "in.npz", **data)
    r = subprocess.run([PADDLE_PYTHON, "-c", PADDLE_SCRIPT, str(tmp_path / "in.npz"),
                        str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    theirs = np.load(tmp_path / "out.npz")
    for dt in ("int32", "int64", "float32", "float64"):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [4, 6], dt)
            y = static.data("y", [4, 6], dt)
            r = paddle.remainder(x, y)
        ours, = _EXE.run(main, feed={"x": data["x_" + dt], "y": data["y_" + dt]}, fetch_list=[r])
        np.testing.assert_array_equal(ours, theirs[dt], err_msg=dt)
