"""The examples' samples/s (issue 32): reported with its spread over the epoch's steps,
and with a word when the machine was busy (load average above the cores)."""
import numpy as np

from numbaflow.examples import rates, train_digits
from numbaflow.examples.rates import StepRates, rate_text


def test_rate_is_items_over_wall_time_and_iqr_is_the_steps_spread():
    r = StepRates()
    steps = [(64, 0.010), (64, 0.012), (64, 0.008), (32, 0.050), (64, 0.011)]
    for n, dt in steps:
        r.add(n, dt)
    assert r.rate() == sum(n for n, _ in steps) / sum(dt for _, dt in steps)
    want = np.percentile([n / dt for n, dt in steps], [25, 75])
    np.testing.assert_allclose(r.iqr(), want)
    one = StepRates()
    one.add(10, 0.1)
    assert one.iqr() is None and StepRates().rate() is None


def test_epoch_line_shows_spread_and_a_busy_machine(monkeypatch):
    monkeypatch.setattr(rates, "usable_cpus", lambda: 2)
    row = {"epoch": 3, "loss": 0.1, "train_acc": 0.9, "test_acc": 0.9, "compile_s": 0.0,
           "samples_per_s": 1234.4, "samples_per_s_p25": 1100.2, "samples_per_s_p75": 1399.6,
           "load": 1.5}
    line = train_digits.epoch_line(row, 5)
    assert line.endswith("1234 samples/s (steps 1100-1400)") and "busy" not in line
    row["load"] = 5.25
    line = train_digits.epoch_line(row, 5)
    assert "machine busy: load 5.2 > 2 cores" in line and "noisy" in line
    assert rate_text({"tokens_per_s": None}, "tokens_per_s", "tokens/s", 8) == "       - tokens/s"


def test_busy_is_the_highest_load_seen(monkeypatch):
    loads = [0.5, 9.0, 1.0]
    monkeypatch.setattr(rates, "load_average", lambda: loads.pop(0))
    monkeypatch.setattr(rates, "usable_cpus", lambda: 4)
    r = StepRates()             # load 0.5 at the start
    r.add(10, 0.1)
    assert r.busy() == 9.0      # 9.0 at the end: busy
    row = r.row("samples_per_s")
    assert row["load"] == 9.0 and row["samples_per_s"] == 100.0
