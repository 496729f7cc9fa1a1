"""numbaflow-bench --quick on the dp/* rows (SPEC section 7: gradient sync of the MLP
over 2 ranks, data-parallel scaling): each row runs its mpiexec / plain children, the
sums and the losses are checked there, and every time and ratio is finite."""
import json
import math

import pytest

from numbaflow.bench import __main__ as bench
from numbaflow.bench import data_parallel as dp
from numbaflow.bench.cases import all_cases, quick_config
from numbaflow.bench.harness import Skip


def _case(name):
    return {c.name: c for c in all_cases()}[name]


def _rows(name):
    cfg = quick_config()
    try:
        dp.mpiexec()
    except Skip as e:
        pytest.skip(str(e))
    rows, failed = bench.run_case(_case(name), cfg)
    assert not failed, rows[0].note
    for r in rows:
        assert math.isfinite(r.ratio) and r.ratio > 0, (r.baseline, r.ratio, r.note)
        for t in (r.t_subject, r.t_baseline):
            assert 0 < t.min <= t.median and math.isfinite(t.median), (r.baseline, t)
            assert t.n >= 1
        assert "ERROR" not in r.note and "skipped" not in r.note, r.note
    return rows


@pytest.mark.mpi
@pytest.mark.slow
def test_grad_sync_quick_rows():
    rows = _rows("dp/grad_sync")
    assert [(r.subject, r.baseline) for r in rows] == [
        ("bucketed LocalGroup.allreduce_", "mpi4py Allreduce flat"),
        ("per-gradient allreduce_sum_ x6", "bucketed LocalGroup.allreduce_")]
    assert rows[0].checks.keys() == {"ratio <= 1.2x"} and "bucketing gain" in rows[1].note


@pytest.mark.mpi
@pytest.mark.slow
def test_mlp_scaling_quick_rows():
    rows = _rows("dp/mlp_scaling")
    assert [r.baseline for r in rows] == ["1 rank", "numpy, 1 rank"]
    for r in rows:
        eff = float(r.note.split("efficiency t1/t2 = ")[1].split()[0])
        assert eff > 0 and abs(eff - 1 / r.ratio) < 0.01, r.note
    assert rows[0].checks.keys() == {"efficiency >= 0.9"} and "rounds: " in rows[0].note


def test_grad_shapes_are_the_mlp_gradients():
    shapes = dp.grad_shapes([784, 512, 512, 10])
    assert shapes == [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]
    assert sum(math.prod(s) for s in shapes) == 669706


def test_numpy_dp_step_trains_on_one_rank():
    import numpy as np
    rng = np.random.default_rng(0)
    sizes = [8, 6, 3]
    params = [rng.standard_normal(s).astype(np.float32) * 0.3 for s in dp.grad_shapes(sizes)]
    x = rng.standard_normal((5, 8)).astype(np.float32)
    y = rng.integers(0, 3, (5, 1))
    step = dp.NumpyDPStep(params, x, y, 0.1)
    losses = [float(step()) for _ in range(30)]
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0], losses


@pytest.mark.slow
def test_child_failure_is_reported():
    with pytest.raises(RuntimeError, match="dp bench child"):
        dp.run_child({"row": "no-such-row"}, 1, 60)


def test_cli_lists_the_dp_rows(capsys):
    assert bench.main(["--list", "--only", "dp/"]) == 0
    assert capsys.readouterr().out.split() == ["dp/grad_sync", "dp/mlp_scaling",
                                               "dp/cnn_scaling", "dp/gpt_scaling",
                                               "dp/resnet20_scaling", "dp/gpt_medium_scaling"]
    json.dumps(dp.settings(quick_config()))     # the children get it as JSON
