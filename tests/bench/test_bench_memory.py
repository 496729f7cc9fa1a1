"""models/gpt_medium_memory (issue 27: peak RSS per batch size against torch eager): the
row's case is in the full run and skips under --quick, the reference worker builds the
batch size it is asked for, and `measure_memory` on the small MLP gives one row per batch
size (a fresh process each) with the peaks side by side and the target checked at the
target batch. The "torch" peer here is numbaflow's own worker started as another
interpreter (the same losses from the same weights), so the test needs no torch."""
import os
import re
import stat
import sys

import pytest

from numbaflow.bench import model_rows, worker
from numbaflow.bench.cases import quick_config
from numbaflow.bench.harness import Skip


def test_memory_case_is_listed_and_skips_in_quick():
    case = [c for c in model_rows.model_cases() if c.name == "models/gpt_medium_memory"]
    assert len(case) == 1 and "peak RSS at batch 8, 16" in case[0].what
    with pytest.raises(Skip):
        case[0].report(quick_config())


def test_reference_worker_writes_the_batch_size_asked(tmp_path):
    step = worker.StaticStep("numbaflow", "mlp", str(tmp_path), True, batch=4)
    assert step.feed["x"].shape[0] == 4
    assert worker.read_numpy(str(tmp_path))["feed:x"].shape[0] == 4


def _numbaflow_as_peer(tmp_path, root):
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={root} exec {sys.executable} "
                      f"{os.path.join(model_rows.HERE, 'worker.py')} numbaflow\n")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return str(python)


@pytest.mark.slow
def test_memory_rows_per_batch_side_by_side(tmp_path):
    import numbaflow
    root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
    cfg = quick_config()
    cfg.quick, cfg.threads = False, 1
    rows = model_rows.measure_memory("mlp", (4, model_rows.MEMORY_TARGET_BATCH), cfg, root)
    assert [r.subject for r in rows] == ["numbaflow 1t b4", "numbaflow 1t b16"]
    assert all("no torch named" in r.note and r.t_subject is None for r in rows)
    cfg.peer_python = {"torch": _numbaflow_as_peer(tmp_path, root)}
    rows = model_rows.measure_memory("mlp", (4, model_rows.MEMORY_TARGET_BATCH), cfg, root)
    assert [(r.subject, r.baseline) for r in rows] == [
        ("numbaflow 1t b4", "torch eager 1t b4"), ("numbaflow 1t b16", "torch eager 1t b16")]
    for r in rows:
        assert not r.failed, r.note        # the same losses: the rows are not errors
        mine, theirs = map(float, re.match(r"peak RSS (\d+) MB vs (\d+) MB", r.note).groups())
        assert r.ratio == pytest.approx(mine / theirs, rel=0.01) and 0.5 < r.ratio < 2.0
        assert r.t_subject is None and r.t_baseline is None
    assert rows[0].checks == {}
    assert list(rows[1].checks) == ["peak RSS <= torch eager's"]
