"""Integer ops compute in integer arithmetic (issue 17, item 4), checked against numpy.

Before the fix, int64 `x + 1` / `x * 1` / `sum` went through float64 (2**53 + 1 plus 1
gave 2**53), an int32 sum that overflowed returned INT32_MIN, and an integer division by
zero returned INT_MIN silently. References are numpy's integer arithmetic (wrapping at the
dtype's width, as numpy does); integer division truncates toward zero as Paddle's does,
with numpy's floor division corrected as the reference.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numbaflow as paddle
import numbaflow.static as static

INTS = [np.dtype(d) for d in ("int8", "int16", "int32", "int64", "uint8")]
SHAPE = (2, 3, 4)
_PROGRAMS = {}
_EXE = static.Executor(paddle.CPUPlace())


def program(dt, fuse=False):
    """(compiled or plain main program, {name: fetched Variable}) over x, y of dtype dt."""
    key = (dt.str, fuse)
    if key not in _PROGRAMS:
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", list(SHAPE), dt)
            y = static.data("y", list(SHAPE), dt)
            f = {"add": x + y, "sub": x - y, "mul": x * y, "plus1": x + 1, "times1": x * 1,
                 "affine": paddle.scale(x, 3.0, 1.0), "max": paddle.maximum(x, y),
                 "min": paddle.minimum(x, y), "relu": paddle.nn.functional.relu(x),
                 "div": paddle.divide(x, y), "sum": paddle.sum(x),
                 "sum_ax": paddle.sum(x, axis=[0, 2]), "sum_1": paddle.sum(x, axis=1),
                 "mean_1": paddle.mean(x, axis=1), "pow2": paddle.pow(x, 2.0)}
            # a fusable chain: (x * y + x) / y, all integers
            f["chain"] = paddle.divide(x * y + x, y)
        prog = main
        if fuse:
            bs = static.BuildStrategy()
            bs.enable_auto_fusion = True
            prog = static.CompiledProgram(main, build_strategy=bs)
        _PROGRAMS[key] = prog, f
    return _PROGRAMS[key]


def trunc_div(x, y):
    """x / y truncated toward zero (C, Paddle), from numpy's floor division."""
    with np.errstate(all="ignore"):
        q = x // y
        return np.where((q * y != x) & ((x < 0) != (y < 0)), q + 1, q).astype(x.dtype)


def reference(dt, x, y):
    i64 = x.astype(np.int64)
    with np.errstate(all="ignore"):
        sum_1 = i64.sum(axis=1)
        mean_1 = np.array([[int(v) for v in row] for row in sum_1])
        mean_1 = np.where(mean_1 < 0, -((-mean_1) // SHAPE[1]), mean_1 // SHAPE[1])
        return {"add": x + y, "sub": x - y, "mul": x * y,
                "plus1": (i64 + 1).astype(dt), "times1": x,
                "affine": (i64 * 3 + 1).astype(dt), "max": np.maximum(x, y),
                "min": np.minimum(x, y), "relu": np.maximum(x, 0).astype(dt),
                "div": trunc_div(x, y), "sum": i64.sum(), "sum_ax": i64.sum(axis=(0, 2)),
                "sum_1": sum_1, "mean_1": mean_1.astype(dt), "pow2": x * x,
                "chain": trunc_div(x * y + x, y)}


def arrays(dt, nonzero=False):
    info = np.iinfo(dt)
    elems = st.integers(info.min, info.max)
    if nonzero:
        elems = elems.filter(lambda v: v != 0)
    return hnp.arrays(dt, SHAPE, elements=elems)


def run(dt, x, y, fuse=False):
    prog, f = program(dt, fuse)
    names = sorted(f)
    got = _EXE.run(prog, feed={"x": x, "y": y}, fetch_list=[f[n] for n in names])
    return dict(zip(names, got))


@pytest.mark.parametrize("dt", INTS, ids=str)
@settings(max_examples=25, deadline=None, database=None, derandomize=True)
@given(data=st.data())
def test_integer_ops_match_numpy(dt, data):
    x = data.draw(arrays(dt), label="x")
    y = data.draw(arrays(dt, nonzero=True), label="y")
    got, want = run(dt, x, y), reference(dt, x, y)
    for name, w in want.items():
        g = got[name]
        assert g.dtype.kind in "iu", (name, g.dtype)
        np.testing.assert_array_equal(g, w, err_msg=f"{name} over {dt}")
    # numpy's and Paddle's sum dtype: smaller integers sum into int64
    assert got["sum"].dtype == np.int64 and got["sum_ax"].dtype == np.int64


@pytest.mark.parametrize("dt", [np.dtype("int32"), np.dtype("int64")], ids=str)
def test_auto_fused_integer_ops_match_unfused(dt):
    rng = np.random.default_rng(3)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, SHAPE, dtype=dt, endpoint=True)
    y = rng.integers(1, 1000, SHAPE, dtype=dt) * rng.choice(np.array([-1, 1], dt), SHAPE)
    fused, want = run(dt, x, y, fuse=True), reference(dt, x, y)
    for name, w in want.items():
        np.testing.assert_array_equal(fused[name], w, err_msg=f"{name} fused over {dt}")


def test_the_reported_values():
    big = np.full(SHAPE, 2 ** 53 + 1, np.int64)
    got = run(np.dtype("int64"), big, np.ones(SHAPE, np.int64))
    assert int(got["plus1"].flat[0]) == 2 ** 53 + 2
    assert int(got["times1"].flat[0]) == 2 ** 53 + 1
    assert int(got["sum"]) == (2 ** 53 + 1) * big.size
    top = np.full(SHAPE, np.iinfo(np.int32).max, np.int32)
    got = run(np.dtype("int32"), top, np.ones(SHAPE, np.int32))
    assert int(got["sum"]) == int(np.iinfo(np.int32).max) * top.size   # not INT32_MIN


@pytest.mark.parametrize("fuse", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("dt", INTS, ids=str)
def test_integer_division_by_zero_raises(dt, fuse):
    prog, f = program(dt, fuse)
    x = np.ones(SHAPE, dt)
    y = np.ones(SHAPE, dt)
    y[1, 2, 3] = 0
    with pytest.raises(ZeroDivisionError, match="division by zero") as e:
        _EXE.run(prog, feed={"x": x, "y": y}, fetch_list=[f["chain"]])   # fused with fuse
    # the op and its variables are named; fused, the sub-op inside the fused op
    msg = str(e.value)
    assert "'y'" in msg and "elementwise_div" in msg, msg
    assert ("sub-op" in msg and "fused_elementwise" in msg) == fuse, msg
    # a good batch afterwards runs (the error flag does not stick)
    y[1, 2, 3] = 1
    out, = _EXE.run(prog, feed={"x": x, "y": y}, fetch_list=[f["div"]])
    np.testing.assert_array_equal(out, x)


def test_sum_dtype_argument_is_honoured():
    """paddle.sum(int32, dtype='int32') stays int32 (the int64 default must not leak)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [3], "int32")
        s32, s64, sf = paddle.sum(x, dtype="int32"), paddle.sum(x), paddle.sum(x, dtype="float64")
    assert (s32.dtype, s64.dtype, sf.dtype) == (np.int32, np.int64, np.float64)
    got = _EXE.run(main, feed={"x": np.array([1, 2, 3], np.int32)}, fetch_list=[s32, s64, sf])
    assert [g.dtype for g in got] == [np.int32, np.int64, np.float64]
    assert [int(g) for g in got] == [6, 6, 6]
