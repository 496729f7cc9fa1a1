"""Table rows for the tensor-API ops (kernels/tensor/tensor_ops.py): where, expand_as_v2,
tril_triu, range, linspace, cumsum, rsqrt, erf, silu, relu6; multinomial (kernels/tensor/sampling.py).

References are numpy / scipy: np.where, np.broadcast_to, np.tril / np.triu, np.arange,
np.linspace, np.cumsum and the textbook formulas.
"""
import numpy as np
from scipy.special import erf

from numbaflow.testing.op_test import distinct, ints, ref_unary, uniform

from . import row


def bools(shape):
    return lambda rng: rng.random(shape) < 0.5


# ---------------------------------------------------------------- where
def where_ref(ins, a):
    return {"Out": np.where(ins["Condition"], ins["X"], ins["Y"]).astype(ins["X"].dtype)}


row("where", {"Condition": bools((3, 4)), "X": uniform((3, 4)), "Y": uniform((3, 4))},
    where_ref, "where-same")
row("where", {"Condition": bools((4, 1)), "X": uniform((3, 1, 5)), "Y": uniform((5,))},
    where_ref, "where-broadcast")
row("where", {"Condition": bools((2, 3)), "X": ints((2, 3), -5, 5), "Y": ints((1, 3), -5, 5)},
    where_ref, "where-int64", dtypes=("float32",))

# ---------------------------------------------------------------- expand_as_v2
row("expand_as_v2", {"X": uniform((3, 1)), "Y": uniform((2, 3, 4))},
    lambda ins, a: {"Out": np.broadcast_to(ins["X"], ins["Y"].shape).copy()}, "expand_as")
row("expand_as_v2", {"X": ints((1, 3), 0, 9), "Y": uniform((2, 3))},
    lambda ins, a: {"Out": np.broadcast_to(ins["X"], ins["Y"].shape).copy()},
    "expand_as-int64", dtypes=("float32",))


# ---------------------------------------------------------------- tril_triu
def tril_triu_ref(ins, a):
    f = np.tril if a["lower"] else np.triu
    return {"Out": f(ins["X"], a["diagonal"])}


row("tril_triu", {"X": uniform((4, 5))}, tril_triu_ref, "tril", attrs={"lower": True})
row("tril_triu", {"X": uniform((2, 3, 4))}, tril_triu_ref, "triu-1",
    attrs={"lower": False, "diagonal": 1})
row("tril_triu", {"X": uniform((5, 3))}, tril_triu_ref, "tril-neg",
    attrs={"lower": True, "diagonal": -1})
row("tril_triu", {"X": ints((3, 3), -9, 9)}, tril_triu_ref, "triu-int64",
    attrs={"lower": False}, dtypes=("float32",))


# ---------------------------------------------------------------- range, linspace
def range_ref(ins, a):
    dt = np.dtype(a["dtype"])
    if dt.kind in "iu":
        return {"Out": np.arange(int(a["start"]), int(a["end"]), int(a["step"]), dtype=dt)}
    return {"Out": np.arange(a["start"], a["end"], a["step"]).astype(dt)}


row("range", {}, range_ref, "range-int64", attrs={"start": 0, "end": 7, "step": 1},
    dtypes=("float32",))
row("range", {}, range_ref, "range-big-int64",
    attrs={"start": 2 ** 40, "end": 2 ** 40 + 9, "step": 3}, dtypes=("float32",))
row("range", {}, range_ref, "range-down-int32",
    attrs={"start": 5, "end": -4, "step": -2, "dtype": "int32"}, dtypes=("float32",))
row("range", {}, range_ref, "range-float", attrs={"start": 0.5, "end": 2.0, "step": 0.25,
                                                  "dtype": "float32"}, dtypes=("float32",))
row("linspace", {}, lambda ins, a: {"Out": np.linspace(a["start"], a["stop"], a["num"])
                                    .astype(a["dtype"])},
    "linspace", attrs={"start": -1.0, "stop": 2.0, "num": 7}, dtypes=("float32",))
row("linspace", {}, lambda ins, a: {"Out": np.array([3.0])}, "linspace-one",
    attrs={"start": 3.0, "stop": 5.0, "num": 1, "dtype": "float64"}, dtypes=("float64",))


# ---------------------------------------------------------------- cumsum
def cumsum_ref(ins, a):
    x = ins["X"].reshape(-1) if a["flatten"] else ins["X"]
    ax = 0 if a["flatten"] else a["axis"]
    if a["reverse"]:
        x = np.flip(x, ax)
    out = np.cumsum(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=ax)
    if a["exclusive"]:
        out = np.concatenate([np.zeros_like(np.take(out, [0], ax)),
                              np.take(out, range(out.shape[ax] - 1), ax)], ax)
    if a["reverse"]:
        out = np.flip(out, ax)
    return {"Out": out.astype(ins["X"].dtype)}


row("cumsum", {"X": uniform((3, 4))}, cumsum_ref, "cumsum-last")
row("cumsum", {"X": uniform((3, 4, 2))}, cumsum_ref, "cumsum-mid-exclusive-reverse",
    attrs={"axis": 1, "exclusive": True, "reverse": True})
row("cumsum", {"X": uniform((2, 3))}, cumsum_ref, "cumsum-flatten", attrs={"flatten": True})
row("cumsum", {"X": ints((4, 5), 2 ** 40, 2 ** 41)}, cumsum_ref, "cumsum-int64-exact",
    attrs={"axis": 0}, dtypes=("float32",))

# ---------------------------------------------------------------- unary
row("rsqrt", {"X": uniform((3, 4), 0.3, 2.0)}, ref_unary(lambda x, a: 1.0 / np.sqrt(x)))
row("erf", {"X": uniform((3, 4), -2.0, 2.0)}, ref_unary(lambda x, a: erf(x)))
row("silu", {"X": uniform((3, 4), -3.0, 3.0)},
    ref_unary(lambda x, a: x / (1.0 + np.exp(-x))))
row("sign", {"X": lambda rng: np.array([[-2.0, 0.0, 0.5], [3.0, -0.1, 0.0]])},
    ref_unary(lambda x, a: np.sign(x)), grad_inputs=())
row("relu6", {"X": distinct((4, 5), 0.05, 0.7)},
    ref_unary(lambda x, a: np.clip(x, 0.0, a["threshold"])))
row("relu6", {"X": distinct((3, 4), 0.05, 0.7)},
    ref_unary(lambda x, a: np.clip(x, 0.0, a["threshold"])), "relu6-threshold",
    attrs={"threshold": 1.0})


# ---------------------------------------------------------------- multinomial (kernels/tensor/sampling.py)
# Random, so the row is the deterministic case: one positive weight per row must be drawn
# (its statistics and seeding: tests/test_tensor_sampling.py).
row("multinomial", {"X": lambda rng: np.eye(5)[rng.integers(0, 5, 4)] * 3.0},
    lambda ins, a: {"Out": ins["X"].argmax(-1)[:, None].astype(np.int64)},
    "multinomial-certain", attrs={"seed": 3})


# ---------------------------------------------------------------- pad
def pad_ref(ins, a):
    p = a["paddings"]
    return {"Out": np.pad(ins["X"], [(p[2 * i], p[2 * i + 1]) for i in range(ins["X"].ndim)],
                          constant_values=a["pad_value"])}


row("pad", {"X": uniform((2, 3))}, pad_ref, "pad-2d", attrs={"paddings": [1, 0, 2, 3],
                                                              "pad_value": 0.5})
row("pad", {"X": uniform((2, 3, 2))}, pad_ref, "pad-3d",
    attrs={"paddings": [0, 0, 1, 1, 0, 2]})


# ---------------------------------------------------------------- squared_l2_norm (norm_ops.py)
def sq_norm_ref(ins, a):
    xs = ins["X"]
    return {"Out": np.array(sum(np.sum(x.astype(np.float64) ** 2) for x in xs), xs[0].dtype)}


row("squared_l2_norm", {"X": [uniform((3, 4)), uniform((5,)), uniform(())]}, sq_norm_ref,
    "squared_l2_norm-three")
row("squared_l2_norm", {"X": [uniform((2, 3))]}, sq_norm_ref, "squared_l2_norm-one")


# ---------------------------------------------------------------- Paddle 2 activations
# (kernels/math/activation.py) from their definitions; inputs away from the kinks
row("hard_swish", {"X": distinct((3, 5), 0.05, 0.47)},
    ref_unary(lambda x, a: x * np.clip(x + a["offset"], 0.0, a["threshold"]) / a["scale"]))
row("hard_sigmoid", {"X": distinct((3, 5), 0.05, 0.47)},
    ref_unary(lambda x, a: np.clip(a["slope"] * x + a["offset"], 0.0, 1.0)),
    "hard_sigmoid-paddle2", attrs={"slope": 0.1666667, "offset": 0.5})
row("swish", {"X": uniform((3, 4), -3.0, 3.0)}, ref_unary(lambda x, a: x / (1.0 + np.exp(-x))))
row("brelu", {"X": distinct((3, 5), 0.05, 0.21)},
    ref_unary(lambda x, a: np.clip(x, a["t_min"], a["t_max"])), "brelu-hardtanh",
    attrs={"t_min": -1.0, "t_max": 1.0})


# ---------------------------------------------------------------- elu ... thresholded_relu
# (kernels/math/activation.py) from the textbook formulas in float64; inputs away from the kinks
def _np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


ACTS = {
    "elu": lambda x, a: np.where(x > 0, x, a["alpha"] * np.expm1(x)),
    "celu": lambda x, a: np.maximum(x, 0) + np.minimum(0, a["alpha"] * np.expm1(x / a["alpha"])),
    "selu": lambda x, a: a["scale"] * np.where(x > 0, x, a["alpha"] * np.expm1(x)),
    "softplus": lambda x, a: _np_softplus(x, a["beta"], a["threshold"]),
    "softsign": lambda x, a: x / (1 + np.abs(x)),
    "mish": lambda x, a: x * np.tanh(_np_softplus(x, 1.0, a["threshold"])),
    "logsigmoid": lambda x, a: -np.log1p(np.exp(-x)),
    "tanh_shrink": lambda x, a: x - np.tanh(x),
    "softshrink": lambda x, a: np.sign(x) * np.maximum(np.abs(x) - a["lambda"], 0),
    "hard_shrink": lambda x, a: np.where(np.abs(x) > a["threshold"], x, 0),
    "thresholded_relu": lambda x, a: np.where(x > a["threshold"], x, 0),
}
for _op, _fn in ACTS.items():
    row(_op, {"X": distinct((3, 5), 0.05, 0.47)}, ref_unary(_fn))
row("elu", {"X": distinct((3, 5), 0.05, 0.47)}, ref_unary(ACTS["elu"]), "elu-alpha",
    attrs={"alpha": 0.5})
row("celu", {"X": distinct((3, 5), 0.05, 0.47)}, ref_unary(ACTS["celu"]), "celu-alpha",
    attrs={"alpha": 2.0})
row("softplus", {"X": distinct((3, 5), 0.05, 0.47)}, ref_unary(ACTS["softplus"]),
    "softplus-beta-threshold", attrs={"beta": 2.0, "threshold": 3.0})
row("mish", {"X": distinct((3, 5), 0.05, 0.47)}, ref_unary(ACTS["mish"]), "mish-threshold",
    attrs={"threshold": 2.0})
row("softshrink", {"X": distinct((3, 5), 0.05, 0.47)}, ref_unary(ACTS["softshrink"]),
    "softshrink-lambda", attrs={"lambda": 1.0})
