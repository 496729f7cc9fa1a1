"""Metrics people can watch (issue 18): TensorBoard event files read back by TensorBoard's
own reader, and the progress hook."""
import io
import os

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
        assert progress.bar.n == 3 and progress.bar.postfix == "loss=0.125"
    assert seen == [(4, {"loss": 0.5}), (5, {"loss": 0.25}), (6, {"loss": 0.125})]
    err = capsys.readouterr().err
    assert "epoch 2" in err and "/3 [" in err


def test_progress_without_a_terminal_draws_nothing(monkeypatch, capsys):
    monkeypatch.setattr("sys.stderr", io.StringIO())      # not a terminal
    progress = Progress(total=2)
    progress.step()
    progress.close()
    assert progress.count == 1 and progress.bar is None


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


# ---------------------------------------------------------------- failing disks (issue 30)
def test_add_scalar_with_a_non_number_names_tag_and_value(tmp_path):
    with ScalarLogger(tmp_path) as logger:
        with pytest.raises(TypeError, match=r"add_scalar.*'t'.*a number.*'abc'"):
            logger.add_scalar("t", "abc", 1)
        with pytest.raises(TypeError, match=r"add_scalar.*tag.*str.*5"):
            logger.add_scalar(5, 1.0, 1)


@pytest.mark.timeout(60)
def test_a_full_disk_warns_once_and_drops_scalars_without_blocking(tmp_path, monkeypatch,
                                                                   caplog):
    import errno
    from numbaflow.utils import metrics
    logger = ScalarLogger(tmp_path, flush_secs=0)
    logger.add_scalar("loss", 1.0, 1)
    before = read_scalars(tmp_path)
    calls = []

    def full(fd, data):                 # the disk fills: a short write, then ENOSPC
        calls.append(len(data))
        if len(calls) == 1:
            return os.write(fd, bytes(data[:5]))
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(metrics, "_write", full)
    with caplog.at_level("WARNING", logger="numbaflow"):
        for step in range(2, 2000):              # tensorboardX's queue blocked after ~95
            logger.add_scalar("loss", 1.0 / step, step)
        logger.close()
    said = [r for r in caplog.records if "ScalarLogger" in r.getMessage()]
    assert len(said) == 1 and "No space left" in said[0].getMessage(), caplog.text
    assert str(tmp_path) in said[0].getMessage()
    assert len(calls) == 2                       # scalars after the failure are dropped
    assert read_scalars(tmp_path) == before      # the torn record was cut off again


@pytest.mark.timeout(60)
def test_an_unwritable_logdir_warns_once_and_training_goes_on(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with caplog.at_level("WARNING", logger="numbaflow"):
        logger = ScalarLogger(blocker / "run")
        for step in range(200):
            logger.add_scalar("loss", 0.5, step)
        logger.close()
    said = [r for r in caplog.records if "ScalarLogger" in r.getMessage()]
    assert len(said) == 1 and "run" in said[0].getMessage(), caplog.text


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_real_full_tmpfs(tmp_path, caplog):
    import subprocess
    mnt = tmp_path / "full"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {r.stderr.strip()}")
    try:
        with caplog.at_level("WARNING", logger="numbaflow"):
            logger = ScalarLogger(mnt, flush_secs=0)
            for step in range(20000):            # ~1 MB of events into 64 KiB
                logger.add_scalar("train/loss", 1.0 / (step + 1), step)
            logger.close()
        said = [r for r in caplog.records if "ScalarLogger" in r.getMessage()]
        assert len(said) == 1 and "No space left" in said[0].getMessage(), caplog.text
        got = read_scalars(mnt)           # what fitted is readable by TensorBoard
        assert got["train/loss"][:3] == [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
