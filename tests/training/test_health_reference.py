"""The health check compares with numpy (issue 21's mutation probe: removing that
comparison went unnoticed, since the other tests trust run_check's verdict or stub the
training out). Here the executor is made slightly wrong; run_check must say so."""
import io

import numpy as np

import numbaflow
import numbaflow.static as static


def test_run_check_fails_when_the_numbers_are_wrong(monkeypatch):
    real_run = static.Executor.run

    def off_by_one_percent(self, *args, **kwargs):
        # every fetched loss 1% high: training still converges, only numpy can tell
        return [np.asarray(r) * np.float32(1.01) for r in real_run(self, *args, **kwargs)]
    monkeypatch.setattr(static.Executor, "run", off_by_one_percent)
    out = io.StringIO()
    assert numbaflow.utils.run_check(out=out) is False, out.getvalue()
    text = out.getvalue()
    assert "train on CPU    FAILED: AssertionError: losses" in text
    assert "differ from numpy's" in text and "numbaflow works" not in text
