"""End to end: the README's main job reaches its accuracy target, and the bench runs."""
import re

import pytest

from numbaflow.bench import __main__ as bench
from numbaflow.examples import train_digits

EPOCHS = 10  # the default is 20; 10 reaches the target with margin and keeps the test short


@pytest.mark.slow
def test_train_digits_reaches_target():
    result = train_digits.train(train_digits.parse_args(["--epochs", str(EPOCHS)]))
    history = result["history"]
    assert len(history) == EPOCHS
    assert history[-1]["loss"] < history[0]["loss"]
    assert result["test_acc"] >= train_digits.TARGET_ACC["mlp"]


@pytest.mark.slow
def test_train_digits_cnn_reaches_97_percent():
    # conv + batch_norm + relu + pool + fc (issue 3's CNN)
    result = train_digits.train(train_digits.parse_args(["--model", "cnn", "--epochs", "8"]))
    assert result["history"][-1]["loss"] < result["history"][0]["loss"]
    assert result["test_acc"] >= train_digits.TARGET_ACC["cnn"] == 0.97


@pytest.mark.slow
def test_train_digits_main_fused(capsys):
    # --fuse goes through CompiledProgram + fusion passes; the numbers must still train.
    assert train_digits.main(["--epochs", str(EPOCHS), "--fuse"]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^epoch +\d+/\d+ ", out, re.M)) == EPOCHS
    acc = float(re.search(r"final test accuracy ([0-9.]+)", out).group(1))
    assert acc >= train_digits.TARGET_ACC["mlp"]


def test_train_digits_rejects_bad_flags():
    with pytest.raises(SystemExit):
        train_digits.parse_args(["--epochs", "0"])


def test_bench_seed_smoke(capsys):
    assert bench.main(["--quick", "--only", "seed"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"model/seed_step .* \d+\.\d\dx ", out), out
    assert "ERROR" not in out


class _BusyBackgroundClock(train_digits.CompileClock):
    """A CompileClock that reports 10 s of compiling at every read, as when segments
    compile on the background thread while the foreground steps go on."""

    @property
    def seconds(self):
        self._fake = getattr(self, "_fake", 0.0) + 10.0
        return self._fake

    @seconds.setter
    def seconds(self, value):
        pass


def test_train_digits_samples_per_s_is_wall_time_not_minus_compiles(monkeypatch):
    # issue 18: background compile time was subtracted from the steps' time: nan or < 0
    monkeypatch.setattr(train_digits, "CompileClock", _BusyBackgroundClock)
    args = train_digits.parse_args(["--epochs", "2", "--batch-size", "512"])
    history = train_digits.train(args)["history"]
    for row in history:
        rate = row["samples_per_s"]
        assert rate is not None and 0 < rate < float("inf"), row
        assert row["compile_s"] > 0
        line = train_digits.epoch_line(row, 2)
        assert "nan" not in line and "-" not in line.split("samples/s")[0].split()[-1]
        assert f"numba compiled for {row['compile_s']:.1f} s meanwhile" in line


def test_epoch_line_without_a_timed_step_shows_a_dash():
    row = {"epoch": 1, "loss": 0.5, "train_acc": 0.9, "test_acc": 0.8, "samples_per_s": None,
           "compile_s": 0.0}
    line = train_digits.epoch_line(row, 3)
    assert line.endswith("        - samples/s") and "nan" not in line
