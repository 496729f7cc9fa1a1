"""The rows of issue 29 item 8: models/lstm (an LSTM language model: nn.LSTM, its torch /
JAX / Paddle peers are checked in test_bench_peers.py) and control/while_loop (the
per-iteration cost of a small while_loop body)."""
import numpy as np
import pytest

from numbaflow.bench import cases, model_rows, models, worker
from numbaflow.bench.loop_cases import WIDTH, while_loop_case


def test_lstm_row_is_listed_with_its_peers():
    names = [c.name for c in model_rows.model_cases()]
    assert "models/lstm" in names and "lstm" in model_rows.PEER_MODELS
    assert "control/while_loop" in [c.name for c in cases.all_cases()]
    feed = models.batch("lstm")
    g = models.LSTM
    assert feed["tokens"].shape == (g["batch"], g["ctx"])
    assert feed["target"].shape == (g["batch"], g["ctx"], 1)
    # the target is the next token
    np.testing.assert_array_equal(feed["tokens"][:, 1:], feed["target"][:, :-1, 0])


@pytest.mark.slow       # compiling the rnn op forward and backward at the row's size
def test_lstm_program_runs_two_rnn_ops_and_learns(tmp_path):
    step = worker.StaticStep("numbaflow", "lstm", str(tmp_path), True)
    ops = [op.type for op in step.built.main.global_block().ops]
    assert ops.count("rnn") == 2 and ops.count("rnn_grad") == 2
    names = models.parameters(step.built)
    assert {"emb", "l0.weight_ih", "l1.bias_hh", "head.w"} <= set(names)
    losses = [step.step() for _ in range(3)]
    # a fresh char model starts near log(vocab) and SGD lowers it on the same batch
    assert abs(losses[0] - np.log(models.LSTM["vocab"])) < 0.1
    assert losses[2] < losses[0]


def test_while_loop_row_agrees_with_numpy():
    cfg = cases.quick_config()
    loop, per_run, by_hand = while_loop_case().build(cfg)   # build checks the loop's result
    assert loop.iterations == by_hand.iterations == 20
    x, = per_run.fn()
    np.testing.assert_allclose(x, np.ones(WIDTH))           # one step from zero
