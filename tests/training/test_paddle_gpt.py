"""A char-level GPT written for Paddle 2.6 (tests/paddle_gpt.py: static.nn.fc / embedding /
layer_norm, static.create_parameter, paddle.triu causal mask, matmul(transpose_y=True),
F.softmax, F.layer_norm, F.gelu, AdamW with LinearWarmup, a for_test clone) runs on
numbaflow with only the imported module changed, and its 30 losses and final next-token
logits match the numbers real Paddle 2.6.2 produced (tests/fixtures/paddle_gpt.json,
made by tests/fixtures/make_paddle_gpt.py)."""
import json
from pathlib import Path

import numpy as np

import numbaflow
from paddle_gpt import run
from locations import TESTS

FIXTURE = TESTS / "fixtures" / "paddle_gpt.json"


def test_gpt_written_for_paddle_matches_paddle_losses():
    want = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert want["paddle_version"].startswith("2.6")
    got = run(numbaflow, steps=len(want["losses"]))
    # float32 training over 30 AdamW steps: measured max difference 5e-6
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=0, atol=1e-4)
    assert want["losses"][-1] < want["losses"][0] - 1.0      # it did learn
    np.testing.assert_allclose(got["next_logits"], want["next_logits"], rtol=0, atol=1e-3)
    assert got["top3"] == want["top3"]
