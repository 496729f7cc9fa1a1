"""Paddle 2.6.2's documented examples of every Layer and functional of issue 28 (the layer zoo,
every activation Layer, the loss layers, conv1d ... silu, the 3-D ops), run in numbaflow with only the import
changed, through the static rewrite both frameworks share (tests/paddle_static_rewrite.py),
against what real Paddle gives for the same rewritten code
(tests/fixtures/make_paddle_layer_examples.py): every Variable the example binds has Paddle's
shape and dtype, and Paddle's values (random draws and random initializers are seeded numpy
draws fed to both), except where a random op of the program itself draws them (dropout)."""
import json

import numpy as np
import pytest

import numbaflow
from locations import TESTS
from paddle_static_rewrite import run

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
HERE = TESTS / "fixtures" / "paddle_layer_examples"
PADDLE = json.loads((HERE / "results.json").read_text(encoding="utf-8"))
VALUES = np.load(HERE / "values.npz")
# Variables drawn by a random op of the program: shape and dtype only (dropout masks, RReLU's
# slopes; the Transformer layers' default dropout=0.1 in train mode)
RANDOM_OPS = {"Dropout_1": {"y_train"}, "Dropout2D_1": {"y_train"}, "RReLU_1": {"out"},
              "TransformerEncoderLayer_1": {"enc_output"}, "TransformerEncoder_1": {"enc_output"},
              "TransformerDecoderLayer_1": {"output"}, "TransformerDecoder_1": {"output"},
              "Transformer_1": {"output"}}
# examples that stop, each with its reason and the clear error it stops with
EXCUSED: dict[str, tuple[str, str]] = {}    # none today


def _params():
    for name in sorted(PADDLE):
        skip = PADDLE[name].get("skipped")
        yield pytest.param(name, marks=[pytest.mark.skip(reason=skip)] if skip else [])


@pytest.mark.parametrize("name", list(_params()))
def test_paddle_layer_example_gives_paddles_results(name):
    want = PADDLE[name]
    got = run(numbaflow, (HERE / f"{name}.py").read_text(encoding="utf-8"))
    assert got["rewrites"] == want["rewrites"]
    if name in EXCUSED:
        assert got["raises"].startswith(EXCUSED[name][1]), got
        return
    assert "raises" not in got, got["raises"]
    assert set(got["vars"]) == set(want["vars"])
    for var, w in want["vars"].items():
        g = got["vars"][var]
        assert [list(g.shape), str(g.dtype)] == [w["shape"], w["dtype"]], (var, g.shape, w)
        key = f"{name}/{var}"
        if key in VALUES.files and var not in RANDOM_OPS.get(name, ()):
            tol = 1e-10 if g.dtype == np.float64 else 2e-5
            np.testing.assert_allclose(g, VALUES[key], rtol=tol, atol=tol, err_msg=var)


AS_IS = sorted(n for n, e in PADDLE.items() if set(e.get("rewrites", ["-"])) <= {"random"}
               and n not in EXCUSED)


@pytest.mark.parametrize("name", AS_IS)
def test_example_runs_as_is_with_its_own_random_draws(name):
    # only the import changed: numbaflow's own rand / randn / uniform / randint ops draw
    # (so values are not Paddle's; shapes and dtypes are)
    got = run(numbaflow, (HERE / f"{name}.py").read_text(encoding="utf-8"), random=False)
    assert got["rewrites"] == [] and "raises" not in got, got.get("raises")
    assert {v: [list(a.shape), str(a.dtype)] for v, a in got["vars"].items()} == \
        {v: [w["shape"], w["dtype"]] for v, w in PADDLE[name]["vars"].items()}
