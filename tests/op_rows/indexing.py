"""Table rows for slice, one_hot, top_k, layer_norm and sigmoid_cross_entropy_with_logits.

References are numpy written from Paddle's op definitions (Python slicing, the one-hot
matrix, a stable descending sort, the layer-norm formula, the logistic loss), not from
the kernels.
"""
import numpy as np

from numbaflow.testing.op_test import distinct, ints, uniform

from . import f64, row


# ---------------------------------------------------------------- slice
def slice_ref(ins, a):
    x = ins["Input"]
    idx = [slice(None)] * x.ndim
    for ax, s, e in zip(a["axes"], a["starts"], a["ends"]):
        # a decreased axis is integer indexing: x[s], which numpy drops from the shape
        idx[ax] = (s % x.shape[ax]) if ax in a["decrease_axis"] else slice(s, e)
    out = x[tuple(idx)]
    return {"Out": np.array(out)}   # (ascontiguousarray would make a 0-D result 1-D)


for _id, _shape, _attrs in [
        ("rows", (4, 3), {"axes": [0], "starts": [1], "ends": [3]}),
        ("negative", (2, 3, 4), {"axes": [1, 2], "starts": [-2, 0], "ends": [10, -1]}),
        ("index", (3, 4), {"axes": [0], "starts": [1], "ends": [2], "decrease_axis": [0]}),
        ("scalar", (4,), {"axes": [0], "starts": [-1], "ends": [4], "decrease_axis": [0]}),
        ("empty", (2, 3), {"axes": [1], "starts": [2], "ends": [1]}),
        ("middle", (2, 5, 3), {"axes": [1], "starts": [1], "ends": [4], "decrease_axis": []})]:
    row("slice", {"Input": uniform(_shape)}, slice_ref, f"slice-{_id}", attrs=_attrs)


# ---------------------------------------------------------------- one_hot
def one_hot_ref(ins, a):
    ids = ins["X"][..., 0]
    out = (ids[..., None] == np.arange(a["depth"])).astype(np.float32)
    return {"Out": out}


row("one_hot", {"X": ints((5, 1), 0, 4)}, one_hot_ref, "one_hot-2d", attrs={"depth": 4},
    dtypes=("float32",))
row("one_hot", {"X": ints((2, 3, 1), 0, 6, "int32")}, one_hot_ref, "one_hot-3d-int32",
    attrs={"depth": 6}, dtypes=("float32",))
row("one_hot", {"X": lambda rng: np.array([[0], [7], [2]])}, lambda ins, a: {
    "Out": np.array([[1, 0, 0], [0, 0, 0], [0, 0, 1]], np.float32)},
    "one_hot-out_of_range", attrs={"depth": 3, "allow_out_of_range": True},
    dtypes=("float32",))


# ---------------------------------------------------------------- top_k
def top_k_ref(ins, a):
    x = ins["X"]
    order = np.argsort(-f64(x), axis=-1, kind="stable")[..., :a["k"]]
    return {"Out": np.take_along_axis(x, order, -1), "Indices": order.astype(np.int64)}


row("top_k", {"X": distinct((3, 5))}, top_k_ref, "top_k-2d", attrs={"k": 2})
row("top_k", {"X": distinct((2, 2, 4))}, top_k_ref, "top_k-3d", attrs={"k": 4})
row("top_k", {"X": lambda rng: np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 2.0, 2.0]])},
    top_k_ref, "top_k-ties", attrs={"k": 3}, grad_inputs=())


# ---------------------------------------------------------------- layer_norm
def layer_norm_ref(ins, a):
    x = f64(ins["X"])
    b = a["begin_norm_axis"]
    x2 = x.reshape(int(np.prod(x.shape[:b])), -1)
    mean, var = x2.mean(1), x2.var(1)
    y = (x2 - mean[:, None]) / np.sqrt(var[:, None] + a["epsilon"])
    if "Scale" in ins:
        y = y * f64(ins["Scale"])
    if "Bias" in ins:
        y = y + f64(ins["Bias"])
    dt = ins["X"].dtype
    return {"Y": y.reshape(x.shape).astype(dt), "Mean": mean.astype(dt),
            "Variance": var.astype(dt)}


row("layer_norm", {"X": uniform((3, 4)), "Scale": uniform((4,), 0.5, 1.5),
                   "Bias": uniform((4,))}, layer_norm_ref, "layer_norm-2d",
    outputs_for_grad=("Y",), grad_rtol=1e-5)
row("layer_norm", {"X": uniform((2, 3, 4)), "Scale": uniform((12,), 0.5, 1.5),
                   "Bias": uniform((12,))}, layer_norm_ref, "layer_norm-axis1-3d",
    outputs_for_grad=("Y",), grad_rtol=1e-5)
row("layer_norm", {"X": uniform((2, 3, 4))}, layer_norm_ref, "layer_norm-axis2-no-affine",
    attrs={"begin_norm_axis": 2, "epsilon": 1e-3}, outputs_for_grad=("Y",), grad_rtol=1e-5)


# ---------------------------------------------------------------- sigmoid cross-entropy
def sigmoid_ce_ref(ins, a):
    x, lab = f64(ins["X"]), f64(ins["Label"])
    p = 1.0 / (1.0 + np.exp(-x))
    out = -lab * np.log(p) - (1.0 - lab) * np.log(1.0 - p)
    out = np.where(lab == a["ignore_index"], 0.0, out)
    return {"Out": out.astype(ins["X"].dtype)}


row("sigmoid_cross_entropy_with_logits", {"X": uniform((3, 4), -3.0, 3.0),
                                          "Label": uniform((3, 4), 0.0, 1.0)},
    sigmoid_ce_ref, "sigmoid_ce-soft")
row("sigmoid_cross_entropy_with_logits",
    {"X": uniform((4, 2), -3.0, 3.0),
     "Label": lambda rng: np.array([[1, 0], [-1, 1], [0, -1], [1, 1]], np.float64)},
    sigmoid_ce_ref, "sigmoid_ce-ignore", attrs={"ignore_index": -1})


# pos_weight w (1 + (pos_weight - 1) * Label) scales the log term; Paddle's gradient,
# (sigmoid(X) * w - Label) * dOut, is not the derivative of that, so its row checks the
# grad op against that formula instead of finite differences
def sigmoid_ce_pos_ref(ins, a):
    x, lab, w = (ins[k].astype(np.float64) for k in ("X", "Label", "pos_weight"))
    out = np.maximum(x, 0) - x * lab + w * np.log1p(np.exp(-np.abs(x)))
    return {"Out": out.astype(ins["X"].dtype)}


def sigmoid_ce_pos_grad_ref(ins, a):
    x, lab, w, d = (ins[k].astype(np.float64) for k in ("X", "Label", "pos_weight", "Out@GRAD"))
    return {"X@GRAD": ((w / (1.0 + np.exp(-x)) - lab) * d).astype(ins["X"].dtype)}


_POS = {"X": uniform((3, 4), -3.0, 3.0), "Label": lambda rng: rng.integers(0, 2, (3, 4)) * 1.0,
        "pos_weight": uniform((3, 4), 0.5, 2.0)}
row("sigmoid_cross_entropy_with_logits", _POS, sigmoid_ce_pos_ref, "sigmoid_ce-pos_weight",
    grad_inputs=())
row("sigmoid_cross_entropy_with_logits_grad", {**_POS, "Out@GRAD": uniform((3, 4))},
    sigmoid_ce_pos_grad_ref, "sigmoid_ce_grad-pos_weight")


# ---------------------------------------------------------------- strided_slice
def strided_slice_ref(ins, a):
    x = ins["Input"]
    idx = [slice(None)] * x.ndim
    for ax, s, e, st in zip(a["axes"], a["starts"], a["ends"], a["strides"]):
        idx[ax] = (s % x.shape[ax]) if ax in a["decrease_axis"] else slice(s, e, st)
    return {"Out": np.array(x[tuple(idx)])}


for _id, _shape, _attrs in [
        ("step2", (5, 3), {"axes": [0], "starts": [0], "ends": [5], "strides": [2]}),
        ("reverse", (4, 3), {"axes": [0, 1], "starts": [2 ** 62, 2], "ends": [-2 ** 62, 0],
                             "strides": [-1, -1]}),
        ("step3-neg-start", (2, 7), {"axes": [1], "starts": [-6], "ends": [7], "strides": [3]}),
        ("reverse-step2-decrease", (4, 5), {"axes": [0, 1], "starts": [1, 4], "ends": [2, -10],
                                            "strides": [1, -2], "decrease_axis": [0]})]:
    row("strided_slice", {"Input": uniform(_shape)}, strided_slice_ref, f"strided_slice-{_id}",
        attrs=_attrs)
row("one_hot_v2", {"X": ints((2, 3), 0, 5)},
    lambda ins, a: {"Out": (ins["X"][..., None] == np.arange(a["depth"])).astype(np.float32)},
    "one_hot_v2-2d", attrs={"depth": 5}, dtypes=("float32",))
row("one_hot_v2", {"X": ints((4,), 0, 3, "int32")},
    lambda ins, a: {"Out": (ins["X"][:, None] == np.arange(3)).astype(np.float32)},
    "one_hot_v2-1d-int32", attrs={"depth": 3}, dtypes=("float32",))
