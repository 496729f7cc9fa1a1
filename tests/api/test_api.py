"""Every public math / nn.functional wrapper, through a real program, against numpy."""
import numpy as np
import pytest
from scipy.special import erf

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from numbaflow.utils import unique_name

rng = np.random.default_rng(0)
X = rng.uniform(0.2, 1.5, (3, 4)).astype(np.float32)
Y = rng.uniform(0.2, 1.5, (3, 4)).astype(np.float32)
LABEL = np.array([[1], [0], [3]], np.int64)


def softmax(v, axis=-1):
    e = np.exp(v - v.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


CASES = {   # name: (build(x, y, label) -> Variable, numpy reference)
    "add": (lambda x, y, l: paddle.add(x, y), X + Y),
    "subtract": (lambda x, y, l: paddle.subtract(x, y), X - Y),
    "multiply": (lambda x, y, l: paddle.multiply(x, y), X * Y),
    "divide": (lambda x, y, l: paddle.divide(x, y), X / Y),
    "pow_scalar": (lambda x, y, l: paddle.pow(x, 3.0), X ** 3),
    "pow_var": (lambda x, y, l: paddle.pow(x, y), X ** Y),
    "maximum": (lambda x, y, l: paddle.maximum(x, y), np.maximum(X, Y)),
    "minimum": (lambda x, y, l: paddle.minimum(x, y), np.minimum(X, Y)),
    "matmul": (lambda x, y, l: paddle.matmul(x, y, transpose_y=True), X @ Y.T),
    "mean": (lambda x, y, l: paddle.mean(x), X.mean()),
    "mean_axis": (lambda x, y, l: paddle.mean(x, axis=1, keepdim=True), X.mean(1, keepdims=True)),
    "sum": (lambda x, y, l: paddle.sum(x, axis=0), X.sum(0)),
    "max": (lambda x, y, l: paddle.max(x, axis=-1), X.max(-1)),
    "min": (lambda x, y, l: paddle.min(x), X.min()),
    "exp": (lambda x, y, l: paddle.exp(x), np.exp(X)),
    "log": (lambda x, y, l: paddle.log(x), np.log(X)),
    "sqrt": (lambda x, y, l: paddle.sqrt(x), np.sqrt(X)),
    "square": (lambda x, y, l: paddle.square(x), X ** 2),
    "abs": (lambda x, y, l: paddle.abs(x - 1.0), np.abs(X - 1)),
    "tanh": (lambda x, y, l: paddle.tanh(x), np.tanh(X)),
    "scale": (lambda x, y, l: paddle.scale(x, 2.0, 1.0), 2 * X + 1),
    "scale_bias_first": (lambda x, y, l: paddle.scale(x, 2.0, 1.0, bias_after_scale=False),
                         2 * (X + 1)),
    "clip": (lambda x, y, l: paddle.clip(x, 0.5, 1.0), np.clip(X, 0.5, 1.0)),
    "reshape": (lambda x, y, l: paddle.reshape(x, [2, -1]), X.reshape(2, 6)),
    "transpose": (lambda x, y, l: paddle.transpose(x, [1, 0]), X.T),
    "concat": (lambda x, y, l: paddle.concat([x, y], axis=1), np.concatenate([X, Y], 1)),
    "split": (lambda x, y, l: paddle.split(x, 2, axis=1)[1], X[:, 2:]),
    "split_sections": (lambda x, y, l: paddle.split(x, [1, 3], axis=1)[1], X[:, 1:]),
    "flatten": (lambda x, y, l: paddle.flatten(paddle.unsqueeze(x, 0)), X.reshape(-1)),
    "squeeze": (lambda x, y, l: paddle.squeeze(paddle.unsqueeze(x, [0, 2]), 2), X[None]),
    "cast": (lambda x, y, l: paddle.cast(x, "float64"), X.astype(np.float64)),
    "full": (lambda x, y, l: paddle.full([2, 2], 7.0), np.full((2, 2), 7.0, np.float32)),
    "assign_var": (lambda x, y, l: paddle.assign(x), X),
    "assign_np": (lambda x, y, l: paddle.assign(np.arange(3, dtype=np.float32)),
                  np.arange(3, dtype=np.float32)),
    "argmax": (lambda x, y, l: paddle.argmax(x, axis=1), X.argmax(1)),
    "argmax_flat": (lambda x, y, l: paddle.argmax(x), np.int64(X.argmax())),
    "relu": (lambda x, y, l: F.relu(x - 1.0), np.maximum(X - 1, 0)),
    "sigmoid": (lambda x, y, l: F.sigmoid(x), 1 / (1 + np.exp(-X))),
    "F.tanh": (lambda x, y, l: F.tanh(x), np.tanh(X)),
    "gelu": (lambda x, y, l: F.gelu(x), 0.5 * X * (1 + erf(X / np.sqrt(2)))),
    "leaky_relu": (lambda x, y, l: F.leaky_relu(x - 1.0, 0.1),
                   np.where(X > 1, X - 1, 0.1 * (X - 1))),
    "softmax": (lambda x, y, l: F.softmax(x, axis=0), softmax(X, 0)),
    "log_softmax": (lambda x, y, l: F.log_softmax(x), np.log(softmax(X))),
    "cross_entropy": (lambda x, y, l: F.cross_entropy(x, l),
                      -np.log(softmax(X)[np.arange(3), LABEL[:, 0]]).mean()),
    "cross_entropy_sum": (lambda x, y, l: F.cross_entropy(x, l, reduction="sum"),
                          -np.log(softmax(X)[np.arange(3), LABEL[:, 0]]).sum()),
    "cross_entropy_soft": (lambda x, y, l: F.cross_entropy(x, F.softmax(y), soft_label=True),
                           -(softmax(Y) * np.log(softmax(X))).sum(1).mean()),
    "swce": (lambda x, y, l: F.softmax_with_cross_entropy(x, l),
             -np.log(softmax(X)[np.arange(3), LABEL[:, 0]])[:, None]),
    "mse_loss": (lambda x, y, l: F.mse_loss(x, y), ((X - Y) ** 2).mean()),
    "square_error_cost": (lambda x, y, l: F.square_error_cost(x, y), (X - Y) ** 2),
    "accuracy": (lambda x, y, l: paddle.metric.accuracy(F.softmax(x), l),
                 np.float32((X.argmax(1) == LABEL[:, 0]).mean())),
}


@pytest.mark.parametrize("name", list(CASES))
def test_public_function_matches_numpy(name):
    build, want = CASES[name]
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        x = static.data("x", [None, 4])
        y = static.data("y", [None, 4])
        label = static.data("label", [None, 1], "int64")
        out = build(x, y, label)
    got, = static.Executor().run(main, feed={"x": X, "y": Y, "label": LABEL},
                                 fetch_list=[out], scope=static.Scope())
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_wrappers_reject_non_variables_with_typed_errors():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 4])
        with pytest.raises(TypeError, match="x must be a Variable"):
            paddle.exp(np.ones(3))
        with pytest.raises(TypeError, match="same dtype"):
            paddle.add(x, paddle.cast(x, "float64"))
        with pytest.raises(ValueError, match="axis 2 is out of range"):
            paddle.mean(x, axis=2)
        with pytest.raises(TypeError, match="hard labels"):
            F.cross_entropy(x, x)
        with pytest.raises(ValueError, match="unknown activation"):
            static.nn.fc(x, 3, activation="relux")
        with pytest.raises(ValueError, match="size must be a positive int"):
            static.nn.fc(x, 0)
