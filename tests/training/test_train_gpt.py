"""The second main job, `python -m numbaflow.examples.train_gpt`, run briefly: it learns,
reports loss and tokens/s per step group, samples text from its test clone, draws its
loss curve, and trains data parallel (--places 2, mpiexec -n 2) to the same losses."""
import numpy as np
import pytest

from numbaflow.examples import train_gpt

TINY = ["--steps", "24", "--log-every", "8", "--layers", "1", "--width", "32",
        "--context", "16", "--batch-size", "8", "--sample", "40"]


def test_train_gpt_learns_samples_and_plots(tmp_path, capsys):
    png = tmp_path / "gpt.png"
    rc = train_gpt.main(TINY + ["--plot", str(png)])
    out = capsys.readouterr().out
    assert rc in (0, 1)                       # 24 steps do not reach the target
    assert "tokens/s" in out and "--- sample" in out and png.stat().st_size > 1000
    r = train_gpt.train(train_gpt.parse_args(TINY))
    steps = [row["step"] for row in r["history"]]
    assert steps == [8, 16, 24]
    losses = [row["loss"] for row in r["history"]]
    assert losses[-1] < losses[0] - 0.3        # from ~log(vocab) down
    assert all(row["tokens_per_s"] > 0 and row["compile_s"] >= 0 for row in r["history"][1:])
    text, chars = train_gpt.load_corpus()
    assert len(r["sample"]) == 40 and set(r["sample"]) <= set(chars)
    # greedy decoding (temperature 0, paddle.topk) is deterministic
    greedy = TINY + ["--temperature", "0", "--steps", "8"]
    a = train_gpt.train(train_gpt.parse_args(greedy))["sample"]
    b = train_gpt.train(train_gpt.parse_args(greedy))["sample"]
    assert a == b


@pytest.mark.slow
def test_train_gpt_two_places_train_like_one_device():
    one = train_gpt.train(train_gpt.parse_args(TINY + ["--sample", "0"]))
    two = train_gpt.train(train_gpt.parse_args(TINY + ["--sample", "0", "--places", "2"]))
    np.testing.assert_allclose([r["loss"] for r in two["history"]],
                               [r["loss"] for r in one["history"]], rtol=1e-3)


@pytest.mark.slow
@pytest.mark.mpi
def test_train_gpt_under_mpiexec():
    from mpirun import mpirun
    p, _ = mpirun(["-m", "numbaflow.examples.train_gpt"] + TINY, 300, 2)
    out = p.stdout + p.stderr
    assert p.returncode in (0, 1), out
    assert out.count("final loss") == 1 and "--- sample" in out, out    # rank 0 prints
