"""Paddle 2.6.2's documented examples of static.nn.cond / while_loop / case / switch_case and
nn.LSTM / GRU / SimpleRNN, the cells, RNN and BiRNN (issue 29's first target), run with only
the import changed (tests/paddle_examples_runner.py, in static mode), against what Paddle
itself gives for them (tests/fixtures/make_paddle_examples.py): every Variable the example
binds has Paddle's shape and dtype, and Paddle's value where it is not random (small
tensors). Paddle's RNN examples draw random weights and inputs and print only shapes."""
import json

import numpy as np
import pytest

import numbaflow
from locations import TESTS
from paddle_examples_runner import run

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
HERE = TESTS / "fixtures" / "paddle_examples"
PADDLE = json.loads((HERE / "results.json").read_text(encoding="utf-8"))
SLOW = {"LSTM_1", "GRU_1", "SimpleRNN_1", "RNN_1", "BiRNN_1"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else [])
                                  for n in sorted(PADDLE)])
def test_paddle_example_gives_paddles_results(name):
    source = (HERE / f"{name}.py").read_text(encoding="utf-8")
    got = run(numbaflow, source)
    assert "raises" not in got, got["raises"]
    want = PADDLE[name]
    assert set(want) <= set(got)
    for var, w in want.items():
        g = got[var]
        assert g["shape"] == w["shape"] and g["dtype"] == w["dtype"], (var, g, w)
        if w["value"] is not None and var not in ("x", "prev_h", "prev_c", "inputs"):
            np.testing.assert_allclose(np.array(g["value"], float),
                                       np.array(w["value"], float), rtol=1e-6, err_msg=var)
