"""Hypothesis fuzz of feeds (issue 12, item 8): any value fed to any declared variable
either runs and gives numpy's answer, or raises TypeError / ValueError naming the
variable -- never another exception, never a crash inside numba.

Values: arrays of every dtype (declared or foreign: float16, complex, strings, object,
datetime, byte-swapped), every rank and shape (batch 0, extra or missing dims), NaN / Inf,
non-contiguous, negative-stride, Fortran-order, misaligned and read-only arrays, nested
lists (regular or ragged, of numbers, bools, strings, complex, None), scalars of every
Python and numpy type, and None. Derandomized with a fixed example count, so CI sees
the same cases on every run.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numbaflow as paddle
import numbaflow.static as static

NAME = "feat_x"        # distinctive, so "the error names the variable" is a real check
DECLARED = [np.dtype(d) for d in ("float32", "float64", "int32", "int64", "bool", "uint8")]
FOREIGN = [np.dtype(d) for d in ("float16", "int8", "int16", "uint16", "uint32", "uint64",
                                 "complex64", "complex128", ">f4", ">i8", "<U3", "S2")]
_PROGRAMS = {}
_EXE = static.Executor(paddle.CPUPlace())


def program(dt, spec):
    """(main, fetches) for x = static.data(NAME, spec, dt): x as float64, its sum, and
    (floats) x + x in the declared dtype. Built once per declaration."""
    key = (dt.str, tuple(spec))
    if key not in _PROGRAMS:
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data(NAME, list(spec), dt)
            as64 = paddle.cast(x, "float64")
            fetches = [as64, paddle.sum(as64)] + ([x + x] if dt.kind == "f" else [])
        _PROGRAMS[key] = main, fetches
    return _PROGRAMS[key]


def elements(dt):
    if dt.kind == "f":
        return st.floats(width=8 * dt.itemsize, allow_nan=True, allow_infinity=True)
    return None       # hypothesis' default elements for ints, bools, complex, strings


class ArrayLike:
    """Not an ndarray, but converts to one (like a fetched Tensor)."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


def layouts(arr, draw):
    """The same values in another memory layout (what numba sees differs, the values not),
    or behind `__array__`."""
    how = draw(st.sampled_from(["C", "F", "strided", "reversed", "misaligned", "readonly",
                                "array_like"]))
    if how == "array_like":
        return ArrayLike(arr)
    if how == "F" and arr.ndim:       # (np.asfortranarray makes a 0-D array 1-D)
        return np.asfortranarray(arr)
    if how == "strided" and arr.ndim:
        big = np.repeat(arr, 2, axis=-1)
        return big[..., ::2]
    if how == "reversed" and arr.ndim:
        return arr[::-1].copy()[::-1]
    if how == "misaligned" and arr.dtype.itemsize > 1:
        buf = np.zeros(arr.nbytes + 1, np.uint8)
        view = np.frombuffer(buf.data, arr.dtype, count=arr.size, offset=1).reshape(arr.shape)
        view[...] = arr
        return view
    if how == "readonly":
        arr = arr.copy()
        arr.flags.writeable = False
    return arr


@st.composite
def cases(draw):
    """(declared dtype, declared shape, value, kind); kind 'valid' values must run."""
    dt = draw(st.sampled_from(DECLARED))
    rank = draw(st.integers(0, 3))
    spec = ([-1] + [draw(st.sampled_from([-1, 1, 2, 3])) for _ in range(rank - 1)]) \
        if rank else []
    shape = tuple(draw(st.integers(1, 3)) if i == 0 else
                  (draw(st.integers(0, 3)) if d == -1 else d) for i, d in enumerate(spec))
    kind = draw(st.sampled_from(["valid", "valid_list", "foreign", "wrong_shape", "batch0",
                                 "list", "ragged", "scalar", "object", "none"]))
    if kind == "valid":
        return dt, spec, layouts(draw(hnp.arrays(dt, shape, elements=elements(dt))), draw), kind
    if kind == "valid_list":
        value = draw(hnp.arrays(dt, shape, elements=elements(dt))).tolist()
        # nested lists cannot say (2, 0, 3): numpy reads [[], []] as (2, 0)
        return dt, spec, value, (kind if np.asarray(value).shape == shape else "list")
    if kind == "foreign":
        other = draw(st.sampled_from(FOREIGN + [np.dtype("O"), np.dtype("M8[s]")] +
                                     [d for d in DECLARED if d != dt]))
        if other.kind in "OM":
            return dt, spec, np.zeros(shape, "f8").astype(other), kind
        return dt, spec, draw(hnp.arrays(other, shape, elements=elements(other))), kind
    if kind == "wrong_shape":
        bad = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
        if len(bad) == rank and all(e in (-1, a) for e, a in zip(spec, bad)):
            bad = bad + (1,)
        return dt, spec, np.zeros(bad, dt), kind
    if kind == "batch0":
        return dt, spec, np.zeros((0,) + shape[1:], dt), ("batch0" if rank else "wrong_shape")
    if kind == "list":       # numbers numpy reads as another dtype: may not fit dt
        other = draw(st.sampled_from(DECLARED + FOREIGN))
        return dt, spec, draw(hnp.arrays(other, shape, elements=elements(other))).tolist(), kind
    if kind == "ragged":
        rows = draw(st.lists(st.lists(st.floats(-5, 5), min_size=0, max_size=3),
                             min_size=2, max_size=3))
        return dt, spec, rows, kind
    if kind == "scalar":
        value = draw(st.one_of(
            st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(), st.complex_numbers(),
            st.text(max_size=3), st.binary(max_size=2), st.just(float("nan")),
            st.builds(lambda d, v: np.asarray(v).astype(d)[()],
                      st.sampled_from(DECLARED + FOREIGN), st.integers(-3, 3))))
        return dt, spec, value, kind
    if kind == "object":
        arr = draw(hnp.arrays(dt, shape, elements=elements(dt))).astype(object)
        if arr.size and draw(st.booleans()):
            arr.flat[0] = draw(st.sampled_from([None, "a", 1j, b"x"]))
        return dt, spec, (arr if draw(st.booleans()) else arr.tolist()), kind
    return dt, spec, None, kind


def check_accepted(dt, spec, value, got):
    """An accepted value: numbers of the declared rank and known dims, a non-empty batch,
    converted without loss beyond float rounding; the outputs are numpy's."""
    ref = np.asarray(value)
    assert ref.dtype.kind in "biuf", f"accepted a {ref.dtype} value"
    assert ref.ndim == len(spec) and all(e in (-1, a) for e, a in zip(spec, ref.shape))
    assert ref.ndim == 0 or ref.shape[0] > 0
    x = ref.astype(dt)
    if dt.kind == "f":
        np.testing.assert_array_equal(np.isfinite(x), np.isfinite(ref))   # no overflow
    else:
        np.testing.assert_array_equal(x.astype(ref.dtype), ref)           # exact
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(got[0], x64)
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.float64(0.0)
        for v in x64.ravel():          # in order, as the kernel adds (numpy adds pairwise)
            total += v
        np.testing.assert_allclose(got[1], total, rtol=1e-12)
        if dt.kind == "f":
            np.testing.assert_array_equal(got[2], x + x)


@pytest.mark.slow       # ~5 s warm, ~20 s with cold kernel caches (a kernel per dtype and rank)
@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(cases())
def test_a_feed_runs_like_numpy_or_raises_a_typed_error_naming_the_variable(case):
    dt, spec, value, kind = case
    main, fetches = program(dt, spec)
    try:
        got = _EXE.run(main, feed={NAME: value}, fetch_list=fetches)
        again = _EXE.run(main, feed={NAME: value}, fetch_list=fetches)  # the cached plan
    except (TypeError, ValueError) as e:
        event(f"{kind}: {type(e).__name__}")
        assert kind not in ("valid", "valid_list"), f"refused a valid feed: {e}"
        assert repr(NAME) in str(e), f"the error does not name {NAME!r}: {e}"
        if kind == "none":
            assert isinstance(e, TypeError)
        return
    event(f"{kind}: ran")
    assert kind not in ("foreign", "wrong_shape", "batch0", "none", "ragged"), \
        f"accepted a {kind} feed"
    check_accepted(dt, spec, value, got)
    for a, b in zip(got, again):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value,error,match", [
    (None, TypeError, "got None"),
    ("1.5", ValueError, "cannot convert str to float32"),
    ([["1", "2"]], ValueError, "numpy reads it as <U1"),
    ([[1.5, 2.0]], None, None),
    ([[1e40, 0.0]], ValueError, "value 1e\\+40 cannot be represented as float32"),
    ([[1, 2], [3]], ValueError, "inhomogeneous"),
    ([[1 + 2j, 0]], ValueError, "numpy reads it as complex128"),
])
def test_examples_of_list_and_scalar_feeds(value, error, match):
    main, fetches = program(np.dtype("float32"), [-1, 2])
    if error is None:
        got = _EXE.run(main, feed={NAME: value}, fetch_list=fetches)
        np.testing.assert_array_equal(got[0], np.asarray(value, np.float32).astype(np.float64))
        return
    with pytest.raises(error, match=match) as e:
        _EXE.run(main, feed={NAME: value}, fetch_list=fetches)
    assert repr(NAME) in str(e.value)


@pytest.mark.parametrize("dt,value,bad", [
    ("int64", [[1.5, 2]], "1.5"), ("int32", [[2 ** 40, 0]], str(2 ** 40)),
    ("uint8", [[-1, 0]], "-1"), ("bool", [[2, 0]], "2"), ("int64", [[float("nan"), 0]], "nan"),
    ("int64", [[2.0 ** 63, 0]], r"9.223372036854776e\+18"),      # rounds up past int64's max
    ("int64", [[2 ** 64 - 1, 0]], r"1\.8446744073709552e\+19"),   # numpy reads float64
    ("int64", [[2 ** 64 - 1, 2 ** 63]], str(2 ** 64 - 1)),         # uint64: would wrap to -1
    ("float32", [[3.5e38, 0]], r"3.5e\+38"),
])
def test_lossy_list_conversions_are_refused_naming_the_value(dt, value, bad):
    main, fetches = program(np.dtype(dt), [-1, 2])
    with pytest.raises(ValueError, match=rf"'{NAME}': value {bad} cannot be represented as {dt}"):
        _EXE.run(main, feed={NAME: value}, fetch_list=fetches)
    ok = [[1, 0]]                                 # values that fit are converted exactly
    got = _EXE.run(main, feed={NAME: ok}, fetch_list=fetches)
    np.testing.assert_array_equal(got[0], np.asarray(ok, np.float64))


def test_feed_keys_must_be_names_or_variables():
    main, fetches = program(np.dtype("float32"), [-1, 2])
    for key in (1, None, (NAME,)):
        with pytest.raises(TypeError, match="feed keys must be variable names"):
            _EXE.run(main, feed={key: np.zeros((1, 2), np.float32)}, fetch_list=fetches)


def test_a_masked_array_with_masked_values_is_refused():
    main, fetches = program(np.dtype("float32"), [-1, 2])
    m = np.ma.masked_array(np.ones((1, 2), np.float32), mask=[[True, False]])
    with pytest.raises(TypeError, match=rf"'{NAME}': a masked array"):
        _EXE.run(main, feed={NAME: m}, fetch_list=fetches)
    got = _EXE.run(main, feed={NAME: m.filled(7)}, fetch_list=fetches)
    np.testing.assert_array_equal(got[0], [[7.0, 1.0]])
