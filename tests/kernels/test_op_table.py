"""The op table: every registered op's forward against numpy and its gradient against
central finite differences in float64 (harness: numbaflow/testing/op_test.py; rows:
tests/op_rows/, one module per op family).
"""
import math
from pathlib import Path

import numpy as np
import pytest

from numbaflow.kernels import all_op_types, get_op_def
from numbaflow.testing.op_test import (build_grad_program, check_grad, check_inplace,
                                       check_output, grad_slots, run_single_op)
from op_rows import F, load_all
from locations import ROOT

REGISTERED = set(all_op_types())
ROWS = load_all()

# ---------------------------------------------------------------- the tests
def _param(case, *values, id):
    return pytest.param(case, *values, id=id)


def _has_grad(case):
    return case.op in REGISTERED and bool(grad_slots(case))


@pytest.mark.parametrize("case,dtype", [_param(c, dt, id=f"{c.id}-{dt}")
                                        for c in ROWS for dt in c.dtypes])
def test_forward(case, dtype):
    check_output(case, dtype)


@pytest.mark.parametrize("case", [_param(c, id=c.id) for c in ROWS if _has_grad(c)])
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case,dtype", [_param(c, dt, id=f"{c.id}-{dt}") for c in ROWS
                                        if c.op in REGISTERED and get_op_def(c.op).inplace
                                        for dt in c.dtypes])
def test_inplace(case, dtype):
    """Ops that may overwrite an input (optimizer updates) give the same result when they do."""
    check_inplace(case, dtype)


def test_row_ids_are_unique():
    ids = [c.id for c in ROWS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


# ---------------------------------------------------------------- random initialisers
# Not table rows: their values are random, so they are checked by statistics and seeds.
STATISTICS_TESTED = {   # op: the test that covers it
    "uniform_random": "test_uniform_random_statistics",
    "gaussian_random": "test_gaussian_random_statistics",
    "truncated_gaussian_random": "test_truncated_gaussian_random_statistics",
    "randint": "test_randint_statistics",
}
# ops that only run inside a program with sub-blocks (a table row runs one op alone):
# tested where cond / while_loop build them
CONTROL_FLOW_TESTED = {"conditional_block": "tests/graph/test_control_flow.py",
                       "select_input": "tests/graph/test_control_flow.py",
                       "select_output": "tests/graph/test_control_flow_grad.py",
                       "while": "tests/graph/test_control_flow_grad.py",
                       "while_grad": "tests/graph/test_control_flow_grad.py",
                       "write_to_array": "tests/kernels/test_tensor_array.py",
                       "read_from_array": "tests/kernels/test_tensor_array.py",
                       "lod_array_length": "tests/kernels/test_tensor_array.py",
                       "write_to_array_grad": "tests/graph/test_tensor_array_grad.py",
                       "read_from_array_grad": "tests/graph/test_tensor_array_grad.py"}
N_DRAW = (200, 100)     # 20000 draws: mean within 5 standard errors, std within 3%


def draw(op, dtype="float32", shape=N_DRAW, **attrs):
    return run_single_op(op, {}, dict(attrs, shape=list(shape), dtype=dtype))["Out"]


def _check_moments(x, mean, std, dtype):
    assert x.shape == N_DRAW and x.dtype == np.dtype(dtype)
    assert abs(x.mean() - mean) < 5 * std / math.sqrt(x.size), (x.mean(), mean)
    assert abs(x.std() / std - 1) < 0.03, (x.std(), std)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_random_statistics(dtype):
    x = draw("uniform_random", dtype, min=-1.0, max=3.0, seed=11)
    assert x.min() >= -1.0 and x.max() <= 3.0
    _check_moments(x, 1.0, 4.0 / math.sqrt(12.0), dtype)
    # every quarter of the range gets about a quarter of the draws
    counts = np.histogram(x, bins=4, range=(-1.0, 3.0))[0] / x.size
    np.testing.assert_allclose(counts, 0.25, atol=0.02)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gaussian_random_statistics(dtype):
    x = draw("gaussian_random", dtype, mean=1.5, std=2.0, seed=12)
    _check_moments(x, 1.5, 2.0, dtype)
    assert abs(np.mean(np.abs(x - 1.5) < 2.0) - 0.6827) < 0.02    # one-sigma mass


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_truncated_gaussian_random_statistics(dtype):
    x = draw("truncated_gaussian_random", dtype, mean=0.5, std=2.0, seed=13)
    assert np.all(np.abs(x.astype(F) - 0.5) <= 4.0 + 1e-5)          # within mean +- 2 std
    # a standard normal truncated to +-2 has std sqrt(1 - 4 phi(2) / (Phi(2) - Phi(-2)))
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    _check_moments(x, 0.5, 2.0 * math.sqrt(1 - 4 * phi2 / math.erf(2 / math.sqrt(2))), dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_randint_statistics(dtype):
    x = draw("randint", dtype, low=-2, high=6, seed=14)
    assert x.dtype == np.dtype(dtype) and x.min() == -2 and x.max() == 5
    counts = np.bincount(x.ravel() + 2) / x.size        # each of the 8 values about 1/8
    np.testing.assert_allclose(counts, 1 / 8, atol=0.01)


@pytest.mark.parametrize("op", sorted(STATISTICS_TESTED))
def test_random_seed_reproducibility(op):
    a, b = draw(op, shape=(4, 5), seed=7), draw(op, shape=(4, 5), seed=7)
    np.testing.assert_array_equal(a, b)                 # same seed attr, same values
    assert not np.array_equal(a, draw(op, shape=(4, 5), seed=8))
    # seed 0 draws fresh entropy each run
    assert not np.array_equal(draw(op, shape=(4, 5), seed=0), draw(op, shape=(4, 5), seed=0))


# ---------------------------------------------------------------- coverage
def test_every_op_has_a_row():
    """Registering an op without a table row (or a statistics test) fails here, and so
    does a row for an op that is not registered."""
    unknown = sorted({c.op for c in ROWS} - REGISTERED)
    assert not unknown, f"rows for ops that are not registered: {unknown}"
    covered = {c.op for c in ROWS} | set(STATISTICS_TESTED) | set(CONTROL_FLOW_TESTED)
    missing = sorted(t for t in REGISTERED if not t.endswith("_grad") and t not in covered)
    assert not missing, f"ops without a row in tests/op_rows/: {missing}"
    for op, path in CONTROL_FLOW_TESTED.items():
        assert op in REGISTERED and op in (ROOT / path).read_text(encoding="utf-8")
    for op, test in STATISTICS_TESTED.items():
        assert op in REGISTERED, f"{op} is exempted but not registered; drop the exemption"
        assert callable(globals().get(test)), f"{op}: its statistics test {test} is missing"


def test_every_grad_op_is_exercised():
    """Every registered `*_grad` op appears in the backward program of some row."""
    seen = set()
    for case in ROWS:
        if _has_grad(case):
            program = build_grad_program(case)[0]
            seen.update(op.type for op in program.global_block().ops)
    missing = sorted(t for t in REGISTERED if t.endswith("_grad") and t not in seen
                     and t not in CONTROL_FLOW_TESTED)
    assert not missing, f"grad ops no row's backward uses: {missing}"
