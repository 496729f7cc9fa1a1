"""numbaflow-bench --quick on the SPEC section 7 rows: each case builds, its candidates
agree (every case checks that before timing), and each row has a finite ratio."""
import math

import pytest

from numbaflow.bench import __main__ as bench
from numbaflow.bench import compile_time
from numbaflow.bench.cases import all_cases, quick_config
from numbaflow.bench.harness import Candidate, Case, Timing, rows_for
from numbaflow.bench.report import format_text

# case name -> the baselines its rows must compare against
SPEC_ROWS = {
    "fused/bias_relu": ["numba fused loop", "numpy maximum(x+b,0)"],
    "fused/depthwise_relu": ["CompiledProgram unfused", "numpy padded planes"],   # quick
    "model/seed_step": ["numpy by hand"],
    "model/seed_step_x100": ["numpy by hand"],
    "model/seed_step_compiled": ["numpy by hand"],
    "fault/backup_overhead": ["backups off"],
    "model/mlp_step": ["numpy by hand"],
    "model/mlp_step_fused": ["numpy by hand"],
    "compile/mlp_train": ["cold cache"],
    "compile/deep_mlp_64": ["cold cache", "numpy"],
}


def _quick():
    return quick_config()   # no --peer-python: models/* rows are tested in test_bench_models


@pytest.mark.parametrize("name", list(SPEC_ROWS))
@pytest.mark.slow
def test_quick_row_runs_with_finite_ratio(name):
    case = {c.name: c for c in all_cases()}[name]
    rows, failed = bench.run_case(case, _quick())
    assert not failed, rows[0].note
    assert [r.baseline for r in rows] == SPEC_ROWS[name], [(r.baseline, r.note) for r in rows]
    for r in rows:
        assert math.isfinite(r.ratio) and r.ratio > 0, (r.baseline, r.ratio, r.note)
        assert r.t_subject.median > 0 and r.t_baseline.median > 0
        assert "ERROR" not in r.note and "skipped" not in r.note, r.note
    if name.startswith("fused/bias_relu"):
        assert "1 fused_elemwise_add_activation op" in rows[0].note or \
            "1 fused_elementwise op" in rows[0].note, rows[0].note
    if name == "model/mlp_step_fused":
        assert "fused" in rows[0].note, rows[0].note
    if name == "compile/mlp_train":   # a warm process must beat a cold one
        assert rows[0].ratio < 1 and "import numbaflow" in rows[0].note, rows[0].note


def test_cli_quick_prints_the_spec_rows(capsys):
    assert bench.main(["--quick", "--only", "fused/bias_relu"]) == 0
    out = capsys.readouterr().out
    assert out.count("fused/bias_relu ") == 1, out     # the case names its first row only
    assert "(not judged: --quick)" in out and "met" not in out and "MISSED" not in out
    assert "ERROR" not in out


@pytest.mark.slow
def test_compile_child_failure_is_reported(tmp_path):
    with pytest.raises(RuntimeError, match="compile bench child"):
        compile_time.run_child("no-such-model", str(tmp_path))


def test_rows_report_targets_and_notes():
    case = Case("c", "w", None, targets={"numba": 1.3})
    cands = [Candidate("nf", None, note="subject"), Candidate("numba", None, note="base"),
             Candidate("numpy", None)]
    timings = {"nf": Timing(2.0, 1.0), "numba": Timing(1.0, 1.0), "numpy": Timing(4.0, 4.0)}
    rows = rows_for(case, cands, timings)
    assert [r.ratio for r in rows] == [2.0, 0.5]
    assert rows[0].checks == {"ratio <= 1.3x": False} and rows[1].checks == {}
    assert rows[0].note == "subject; base"
    assert rows[1].note == ""
    table = format_text(rows)
    assert "2.00x" in table and "0.50x" in table
    assert "target ratio <= 1.3x: MISSED; subject; base" in table
