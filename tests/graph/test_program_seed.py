"""`Program.random_seed` as in Paddle 2.6 (issue 30, item 6): with
`main.random_seed = startup.random_seed = n` the initializers and dropout of those programs
give the same values in two processes (Paddle fixes each such op's seed to n), and
`paddle.seed` keeps its meaning when no program seed is set."""
import json

import numpy as np
import pytest
from child import run_script


def run(mode):
    r = run_script("program_seed", mode)
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_program_random_seed_gives_the_same_weights_and_dropout_in_two_processes():
    a, b = run("program=3"), run("program=3")
    assert a["params"] == b["params"]
    assert a["out"] == b["out"]                 # dropout's mask too
    w = np.array(a["params"]["fc_0.w_0"])
    assert w.std() > 0.5                        # really Normal(0, 1), not zeros
    other = run("program=4")
    assert other["params"]["fc_0.w_0"] != a["params"]["fc_0.w_0"]
    # the program's seed wins over paddle.seed, as in Paddle (its dropout gets fix_seed)
    assert run("program=3+paddle.seed=7")["out"] == run("program=3+paddle.seed=8")["out"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_paddle_seed_keeps_its_meaning_and_no_seed_is_fresh():
    assert run("paddle.seed=5")["params"] == run("paddle.seed=5")["params"]
    assert run("none")["params"]["fc_0.w_0"] != run("none")["params"]["fc_0.w_0"]
