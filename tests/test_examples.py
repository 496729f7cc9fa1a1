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
