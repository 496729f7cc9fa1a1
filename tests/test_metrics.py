"""Metrics people can watch (issue 18): TensorBoard event files read back by TensorBoard's
own reader, and the progress hook."""
import io

import pytest

from numbaflow.utils import Progress, ScalarLogger

event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator")


def read_scalars(logdir):
    """{tag: [(step, value), ...]} as TensorBoard reads the directory."""
    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)]
            for tag in acc.Tags()["scalars"]}


def test_scalar_logger_writes_what_tensorboard_reads(tmp_path):
    with ScalarLogger(tmp_path) as logger:
        for step in range(1, 4):
            logger.add_scalar("train/loss", 1.0 / step, step)
        logger.add_scalars({"test/acc": 0.75, "test/loss": 0.5}, step=3)
        logger(4, {"train/loss": 0.125})          # as a Progress callback
    got = read_scalars(tmp_path)
    assert got["train/loss"] == [(1, 1.0), (2, 0.5), (3, pytest.approx(1 / 3)), (4, 0.125)]
    assert got["test/acc"] == [(3, 0.75)] and got["test/loss"] == [(3, 0.5)]


def test_progress_calls_back_with_global_steps_and_draws_a_bar(capsys):
    pytest.importorskip("tqdm")
    seen = []
    with Progress(total=3, desc="epoch 2", callbacks=[lambda s, v: seen.append((s, v))],
                  bar=True, start=3) as progress:
        for loss in (0.5, 0.25, 0.125):
            progress.step(loss=loss)
        assert progress._bar.n == 3 and progress._bar.postfix == "loss=0.125"
    assert seen == [(4, {"loss": 0.5}), (5, {"loss": 0.25}), (6, {"loss": 0.125})]
    err = capsys.readouterr().err
    assert "epoch 2" in err and "/3 [" in err


def test_progress_without_a_terminal_draws_nothing(monkeypatch, capsys):
    monkeypatch.setattr("sys.stderr", io.StringIO())      # not a terminal
    progress = Progress(total=2)
    progress.step()
    progress.close()
    assert progress.count == 1 and progress._bar is None


def test_train_digits_logdir_holds_the_printed_numbers(tmp_path):
    from numbaflow.examples import train_digits
    args = train_digits.parse_args(["--epochs", "2", "--batch-size", "512",
                                    "--logdir", str(tmp_path)])
    history = train_digits.train(args)["history"]
    got = read_scalars(tmp_path)
    for tag in ("loss", "train_acc", "test_acc", "samples_per_s"):
        assert got[f"epoch/{tag}"] == [(r["epoch"], pytest.approx(r[tag], rel=1e-6))
                                       for r in history], tag
    steps = [s for s, _ in got["train/loss"]]
    assert steps == list(range(1, 2 * 3 + 1))      # 1437 samples / 512: 3 steps an epoch


def test_train_gpt_logdir_holds_one_loss_per_step(tmp_path):
    """train_gpt --logdir: train/loss per step, each group's printed mean their mean."""
    from numbaflow.examples import train_gpt
    args = train_gpt.parse_args(["--steps", "8", "--log-every", "4", "--layers", "1",
                                 "--width", "32", "--context", "16", "--batch-size", "8",
                                 "--sample", "0", "--logdir", str(tmp_path)])
    history = train_gpt.train(args)["history"]
    got = read_scalars(tmp_path)["train/loss"]
    assert [s for s, _ in got] == list(range(1, 9))
    for row, first in zip(history, (0, 4)):
        assert row["loss"] == pytest.approx(sum(v for _, v in got[first:first + 4]) / 4,
                                            rel=1e-5)
