"""F.maxout / nn.Maxout (issue 28's activation layers; Paddle's docstring example is in
tests/nn/test_paddle_layer_examples.py): numpy forward from Paddle's definition (out channel
i = max of channels i*groups .. i*groups+groups-1), finite-difference gradient, NHWC."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
from tensor_check import check

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
X = np.random.default_rng(5).standard_normal((2, 6, 2, 3))      # no ties: a clean gradient


@pytest.mark.parametrize("groups", [2, 3])
def test_maxout_nchw(groups):
    want = np.stack([X[:, i * groups:(i + 1) * groups].max(1) for i in range(6 // groups)], 1)
    check(lambda x: F.maxout(x, groups), [X], want)


def test_maxout_layer_nhwc():
    x = X.transpose(0, 2, 3, 1)
    want = np.stack([x[..., 2 * i:2 * i + 2].max(-1) for i in range(3)], -1)
    check(lambda v: paddle.nn.Maxout(groups=2, axis=-1)(v), [x], want)


def test_maxout_refuses_groups_not_dividing_the_channels():
    with pytest.raises(ValueError, match="dividing the 6 channels"):
        check(lambda x: F.maxout(x, 4), [X])
