"""Paddle 2.6's `paddle.nn` and `paddle.nn.functional` names against numbaflow's (issue 28,
item 6): the record (tests/fixtures/paddle_nn_names.json, made by real Paddle through
tests/fixtures/make_paddle_nn_names.py) is the list numbaflow's messages use, and every
name is either there or refused with one clear error naming the closest supported spelling.
Run with -s to see the coverage."""
import json
import pathlib

import pytest

import numbaflow.nn as nn
import numbaflow.nn.functional as F
from numbaflow.nn import paddle_names
from locations import TESTS

RECORD = json.loads((TESTS / "fixtures" / "paddle_nn_names.json")
                    .read_text(encoding="utf-8"))
MODULES = {"paddle.nn": (nn, paddle_names.PADDLE_NN, 111),
           "paddle.nn.functional": (F, paddle_names.PADDLE_NN_FUNCTIONAL, 88)}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_paddle_name_is_there_or_named_as_missing(module):
    mod, listed, floor = MODULES[module]
    assert sorted(listed) == RECORD[module]          # the product's list is Paddle's record
    covered, missing = [], []
    for name in RECORD[module]:
        try:
            getattr(mod, name)
            covered.append(name)
        except AttributeError as e:
            assert f"{mod.__name__}.{name} is Paddle 2.6's but not implemented" in str(e), e
            missing.append(name)
    print(f"\n{module}: {len(covered)} of {len(RECORD[module])} covered; missing: "
          f"{', '.join(missing)}")
    assert len(covered) >= floor        # coverage only grows


def test_a_missing_paddle_function_names_the_closest_supported_one():
    with pytest.raises(AttributeError, match=r"conv3d_transpose is Paddle 2.6.s but not "
                                             r"implemented in numbaflow yet; the closest "
                                             r"supported function: conv2d_transpose"):
        F.conv3d_transpose
    with pytest.raises(AttributeError, match=r"no attribute 'relux'; did you mean relu"):
        F.relux
