"""Table rows for the foundation ops: elementwise, comparisons, activations, creation,
reductions, mul/matmul, optimizers, shape ops, losses and metrics."""
import math

import numpy as np
from scipy.special import erf

from numbaflow.testing.op_test import (away_from_zero, const, distinct, ints,
                                       ref_binary as binary, ref_unary as unary, uniform)

from . import F, f64, prob_rows, row, softmax_np

# ---------------------------------------------------------------- binary elementwise
BROADCASTS = {                 # name: (X shape, Y shape, axis)
    "same": ((3, 4), (3, 4), -1),
    "bias_last": ((3, 4), (4,), -1),
    "axis1": ((2, 3, 4), (3,), 1),           # Paddle alignment, e.g. a bias on channels
    "axis1_2d": ((2, 3, 4), (3, 4), 1),
    "scalar": ((3, 4), (1,), -1),
    "both": ((3, 1), (1, 4), -1),            # both operands broadcast
    "both_rank": ((2, 1, 4), (3, 1), -1),
    "x_smaller": ((4,), (3, 4), -1),
}
BINARY = {   # op: (numpy function, X maker, Y maker, broadcast cases)
    "elementwise_add": (np.add, uniform, uniform, list(BROADCASTS)),
    "elementwise_mul": (np.multiply, uniform, uniform, list(BROADCASTS)),
    "elementwise_sub": (np.subtract, uniform, uniform, ["same", "bias_last", "axis1", "both"]),
    "elementwise_div": (np.divide, uniform, lambda s: away_from_zero(s, 0.5, 2.0),
                        ["same", "bias_last", "axis1", "both"]),
    # d/dY x**y = x**y log x: X > 0
    "elementwise_pow": (np.power, lambda s: uniform(s, 0.5, 2.0), lambda s: uniform(s, -2, 2),
                        ["same", "bias_last", "axis1", "both"]),
    # X on the grid 0.03 + 0.1k, Y on 0.07 + 0.1k: never within 0.04, so no ties
    "elementwise_max": (np.maximum, lambda s: distinct(s, 0.03), lambda s: distinct(s, 0.07),
                        ["same", "bias_last", "axis1", "both"]),
    "elementwise_min": (np.minimum, lambda s: distinct(s, 0.03), lambda s: distinct(s, 0.07),
                        ["same", "bias_last", "axis1", "both"]),
}
for _op, (_fn, _mx, _my, _cases) in BINARY.items():
    for _c in _cases:
        _xs, _ys, _axis = BROADCASTS[_c]
        row(_op, {"X": _mx(_xs), "Y": _my(_ys)}, binary(_fn), f"{_op}-{_c}",
            attrs={"axis": _axis})

# mod (no gradient, as in Paddle): the divisor's sign, numpy's remainder; integers in
# tests/kernels/test_mod.py
for _c in ["same", "bias_last", "axis1", "both"]:
    _xs, _ys, _axis = BROADCASTS[_c]
    row("elementwise_mod", {"X": uniform(_xs, -5, 5), "Y": away_from_zero(_ys, 0.5, 2.0)},
        binary(np.remainder), f"elementwise_mod-{_c}", attrs={"axis": _axis})

# ---------------------------------------------------------------- comparisons (bool, no grad)
_TIES = {"X": lambda rng: rng.integers(0, 3, (3, 4)).astype(F),   # many equal pairs
         "Y": lambda rng: rng.integers(0, 3, (3, 4)).astype(F)}
_TIES_BIAS = {"X": _TIES["X"], "Y": lambda rng: rng.integers(0, 3, (4,)).astype(F)}
for _op, _fn in [("equal", np.equal), ("not_equal", np.not_equal),
                 ("greater_than", np.greater), ("greater_equal", np.greater_equal),
                 ("less_than", np.less), ("less_equal", np.less_equal)]:
    row(_op, _TIES, binary(_fn, bool), f"{_op}-same")
    row(_op, _TIES_BIAS, binary(_fn, bool), f"{_op}-bias_last")
# what cross_entropy's mean emits: int64 labels != a (1,) ignore_index constant
row("not_equal", {"X": ints((4, 1), 0, 3), "Y": const([1], "int64")}, binary(np.not_equal, bool),
    "not_equal-int64_scalar", dtypes=("float64",))

# ---------------------------------------------------------------- unary activations and math
X34 = (3, 4)
_gelu_tanh = (lambda x, a: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                   (x + 0.044715 * x ** 3))))
for _op, _maker, _fn, _attrs, _id in [
        ("relu", away_from_zero(X34), lambda x, a: np.where(x > 0, x, 0.0), {}, None),
        ("sigmoid", uniform(X34, -3, 3), lambda x, a: 1 / (1 + np.exp(-x)), {}, None),
        ("tanh", uniform(X34, -2, 2), lambda x, a: np.tanh(x), {}, None),
        ("gelu", uniform(X34, -3, 3), lambda x, a: 0.5 * x * (1 + erf(x / math.sqrt(2))),
         {"approximate": False}, "gelu-exact"),
        ("gelu", uniform(X34, -3, 3), _gelu_tanh, {"approximate": True}, "gelu-approximate"),
        ("leaky_relu", away_from_zero(X34), lambda x, a: np.where(x > 0, x, a["alpha"] * x),
         {"alpha": 0.1}, None),
        ("exp", uniform(X34, -2, 2), lambda x, a: np.exp(x), {}, None),
        ("log", uniform(X34, 0.5, 3), lambda x, a: np.log(x), {}, None),
        ("sqrt", uniform(X34, 0.5, 3), lambda x, a: np.sqrt(x), {}, None),
        ("square", uniform(X34, -2, 2), lambda x, a: x * x, {}, None),
        ("abs", away_from_zero(X34), lambda x, a: np.abs(x), {}, None),
        ("pow", uniform(X34, -2, 2), lambda x, a: x ** 3, {"factor": 3.0}, "pow-cube"),
        ("pow", uniform(X34, 0.5, 2), lambda x, a: x ** 2.5, {"factor": 2.5}, "pow-fractional"),
        # clip's kinks at +-0.5: inputs stay 0.1 away from them
        ("clip", lambda rng: away_from_zero(X34, 0.1, 0.4)(rng) + rng.choice([-0.5, 0.5], X34),
         lambda x, a: np.clip(x, -0.5, 0.5), {"min": -0.5, "max": 0.5}, None),
        ("scale", uniform(X34), lambda x, a: x * 2.0 + 0.5,
         {"scale": 2.0, "bias": 0.5, "bias_after_scale": True}, "scale-bias_after"),
        ("scale", uniform(X34), lambda x, a: (x + 0.5) * 2.0,
         {"scale": 2.0, "bias": 0.5, "bias_after_scale": False}, "scale-bias_before"),
        ("assign", uniform(X34), lambda x, a: x, {}, None)]:
    row(_op, {"X": _maker}, unary(_fn), _id or _op, attrs=_attrs)

# Paddle's ScaleTensor (one element) replaces the `scale` attribute
row("scale", {"X": uniform(X34), "ScaleTensor": uniform((1,), 0.5, 2.0)},
    lambda ins, a: {"Out": (ins["X"] * ins["ScaleTensor"] + 0.5).astype(ins["X"].dtype)},
    "scale-scale_tensor", attrs={"scale": 9.0, "bias": 0.5}, grad_inputs=("X",))
row("assign", {"X": ints(X34, -5, 5)}, lambda ins, a: {"Out": ins["X"].copy()}, "assign-int64",
    dtypes=("float64",))
row("cast", {"X": uniform(X34)}, unary(lambda x, a: x, "float64"), "cast-f32_to_f64",
    attrs={"in_dtype": "float32", "out_dtype": "float64"}, dtypes=("float32",), grad_inputs=())
row("cast", {"X": uniform(X34)}, unary(lambda x, a: x, "float32"), "cast-f64_to_f32",
    attrs={"in_dtype": "float64", "out_dtype": "float32"}, dtypes=("float64",),
    # cast is linear, so a large eps costs no truncation error; the float32 rounding of the
    # output (~6e-8 relative) over 2*eps leaves ~3e-6 in the numeric gradient
    eps=1e-2, grad_rtol=1e-4, grad_atol=1e-6)
row("cast", {"X": uniform(X34, -5, 5)}, lambda ins, a: {"Out": ins["X"].astype("int64")},
    "cast-float_to_int64", attrs={"out_dtype": "int64"}, grad_inputs=())
row("cast", {"X": ints(X34, -5, 5, "int32")}, lambda ins, a: {"Out": ins["X"].astype("float32")},
    "cast-int32_to_f32", attrs={"in_dtype": "int32", "out_dtype": "float32"}, dtypes=("float64",))
row("cast", {"X": lambda rng: rng.random(X34) < 0.5},
    lambda ins, a: {"Out": ins["X"].astype("float32")}, "cast-bool_to_f32",
    attrs={"in_dtype": "bool", "out_dtype": "float32"}, dtypes=("float64",))

row("sum", {"X": [uniform(X34)] * 3}, lambda ins, a: {"Out": sum(ins["X"][1:], ins["X"][0])},
    "sum-3_inputs")
row("sum", {"X": [uniform(X34)]}, lambda ins, a: {"Out": ins["X"][0].copy()}, "sum-1_input")

# ---------------------------------------------------------------- creation (no grad)
row("fill_any_like", {"X": uniform(X34)}, lambda ins, a: {"Out": np.full(X34, 3.5, ins["X"].dtype)},
    "fill_any_like-float", attrs={"value": 3.5})
row("fill_any_like", {"X": uniform(X34)}, lambda ins, a: {"Out": np.full(X34, 7, "int64")},
    "fill_any_like-int64", attrs={"value": 7.0, "dtype": "int64"})
for _dt, _shape, _v in [("float32", [2, 3], 1.25), ("float64", [4], -2.5), ("int64", [2, 2], 3),
                        ("float32", [], 1.0)]:
    row("fill_constant", {}, (lambda s, v, d: lambda ins, a: {"Out": np.full(s, v, d)})(
        tuple(_shape), _v, _dt), f"fill_constant-{_dt}-{len(_shape)}d",
        attrs={"shape": _shape, "value": float(_v), "dtype": _dt}, dtypes=("float64",))
for _dt, _vals, _shape in [("float32", [0.5, -1.0, 2.0, 3.25, 0.0, 1e-3], [2, 3]),
                           ("int64", [3, -1, 7, 0], [4]), ("int32", [1, 2], [2, 1])]:
    row("assign_value", {}, (lambda v, s, d: lambda ins, a: {
        "Out": np.array(v, d).reshape(s)})(_vals, _shape, _dt), f"assign_value-{_dt}",
        attrs={"shape": _shape, "dtype": _dt, "values": _vals}, dtypes=("float64",))

# ---------------------------------------------------------------- reductions
X234 = (2, 3, 4)
_NP_RED = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
           "reduce_min": np.min}


def reduce_ref(ins, a):
    x = ins["X"]
    dims = a["dim"] if isinstance(a["dim"], (list, tuple)) else [a["dim"]]
    axes = None if a["reduce_all"] or not dims else tuple(d % x.ndim for d in dims)
    out = _NP_RED[a["_op"]](f64(x), axis=axes, keepdims=a["keep_dim"])
    return {"Out": np.asarray(out).astype(x.dtype)}


_RED_CASES = {   # id: attrs; (0, 2) is not contiguous: the numpy fallback path
    "dim1": {"dim": [1]}, "last_keep": {"dim": [-1], "keep_dim": True}, "dims01": {"dim": [0, 1]},
    "dims02": {"dim": [0, 2]}, "dims02_keep": {"dim": [0, 2], "keep_dim": True},
    "all": {"reduce_all": True}, "all_keep": {"reduce_all": True, "keep_dim": True},
    "empty_dim": {"dim": []}}
_RED_USE = {"reduce_sum": list(_RED_CASES), "reduce_mean": ["dim1", "last_keep", "dims02", "all"],
            "reduce_max": ["dim1", "last_keep", "dims02", "all"],
            "reduce_min": ["dim1", "dims02_keep", "all"]}
for _op, _cases in _RED_USE.items():
    for _c in _cases:
        # max/min: distinct values, so the gradient (to the one arg-extremum) is defined
        _mk = distinct(X234) if _op in ("reduce_max", "reduce_min") else uniform(X234)
        row(_op, {"X": _mk}, (lambda op: lambda ins, a: reduce_ref(ins, dict(a, _op=op)))(_op),
            f"{_op}-{_c}", attrs=_RED_CASES[_c])


def argmax_ref(ins, a):
    x = ins["X"]
    if a["flatten"]:
        out = np.argmax(x.reshape(-1)).reshape((1,) * x.ndim if a["keepdims"] else ())
    else:
        out = np.argmax(x, axis=a["axis"])
        out = np.expand_dims(out, a["axis"]) if a["keepdims"] else out
    return {"Out": np.asarray(out).astype(a["dtype"])}


for _id, _attrs in [("last", {}), ("axis0_keep", {"axis": 0, "keepdims": True}),
                    ("axis1", {"axis": 1}), ("flatten", {"flatten": True}),
                    ("int32", {"axis": 2, "dtype": "int32"})]:
    row("arg_max", {"X": distinct(X234)}, argmax_ref, f"arg_max-{_id}", attrs=_attrs)

for _op in ("softmax", "log_softmax"):
    _fn = softmax_np if _op == "softmax" else (lambda x, ax: np.log(softmax_np(x, ax)))
    for _ax in (-1, 0, 1):
        row(_op, {"X": uniform(X234, -2, 2)},
            (lambda fn: unary(lambda x, a: fn(x, a["axis"])))(_fn),
            f"{_op}-axis{_ax}", attrs={"axis": _ax})
    row(_op, {"X": uniform((3, 5), -2, 2)}, (lambda fn: unary(lambda x, a: fn(x, -1)))(_fn),
        f"{_op}-2d")

# ---------------------------------------------------------------- mul and matmul_v2


def mul_ref(ins, a):
    x, y = ins["X"], ins["Y"]
    xn, yn = a["x_num_col_dims"], a["y_num_col_dims"]
    x2 = f64(x).reshape(int(np.prod(x.shape[:xn])), -1)
    y2 = f64(y).reshape(int(np.prod(y.shape[:yn])), -1)
    return {"Out": (x2 @ y2).reshape(x.shape[:xn] + y.shape[yn:]).astype(x.dtype)}


row("mul", {"X": uniform((3, 4)), "Y": uniform((4, 5))}, mul_ref, "mul-2d")
row("mul", {"X": uniform((2, 3, 4)), "Y": uniform((4, 5))}, mul_ref, "mul-x_num_col_dims2",
    attrs={"x_num_col_dims": 2})
row("mul", {"X": uniform((2, 3, 4)), "Y": uniform((3, 4, 2))}, mul_ref, "mul-flatten_both",
    attrs={"x_num_col_dims": 1, "y_num_col_dims": 2})


def matmul_ref(ins, a):
    x, y = f64(ins["X"]), f64(ins["Y"])
    if a["trans_x"] and x.ndim > 1:
        x = np.swapaxes(x, -1, -2)
    if a["trans_y"] and y.ndim > 1:
        y = np.swapaxes(y, -1, -2)
    return {"Out": np.asarray(np.matmul(x, y)).astype(ins["X"].dtype)}


for _id, _xs, _ys, _tx, _ty in [
        ("2d", (3, 4), (4, 5), False, False), ("2d-tx", (4, 3), (4, 5), True, False),
        ("2d-ty", (3, 4), (5, 4), False, True), ("2d-tx_ty", (4, 3), (5, 4), True, True),
        ("batched", (2, 3, 4), (2, 4, 5), False, False),
        ("batched-tx_ty", (2, 4, 3), (2, 5, 4), True, True),
        ("broadcast_batch", (2, 1, 3, 4), (3, 4, 5), False, False),
        ("broadcast_batch-tx", (2, 4, 3), (4, 5), True, False),     # Y shared by the batch
        ("broadcast_batch-ty", (1, 3, 4), (2, 5, 4), False, True),  # X's batch of 1 broadcast
        ("vec_mat", (4,), (4, 5), False, False), ("mat_vec", (3, 4), (4,), False, False),
        ("vec_vec", (4,), (4,), False, False), ("batched_mat_vec", (2, 3, 4), (4,), False, False),
        ("vec_batched_mat", (4,), (2, 4, 5), False, False),
        ("vec_mat-tx_ty", (4,), (5, 4), True, True)]:               # trans of a 1-D: no-op
    row("matmul_v2", {"X": uniform(_xs), "Y": uniform(_ys)}, matmul_ref, f"matmul_v2-{_id}",
        attrs={"trans_x": _tx, "trans_y": _ty})

# ---------------------------------------------------------------- optimizers (one update)
P34 = {"Param": uniform(X34), "Grad": uniform(X34), "LearningRate": const([0.1])}


def sgd_ref(ins, a):
    return {"ParamOut": (f64(ins["Param"]) - f64(ins["LearningRate"]) * f64(ins["Grad"]))
            .astype(ins["Param"].dtype)}


def momentum_ref(ins, a):
    p, g, v, lr = (f64(ins[k]) for k in ("Param", "Grad", "Velocity", "LearningRate"))
    v_new = a["mu"] * v + g
    p_new = p - lr * (g + a["mu"] * v_new) if a["use_nesterov"] else p - lr * v_new
    dt = ins["Param"].dtype
    return {"ParamOut": p_new.astype(dt), "VelocityOut": v_new.astype(dt)}


def adam_ref(ins, a):
    """Paddle's adam: bias correction folded into lr, epsilon scaled by sqrt(1 - beta2^t)."""
    p, g, lr, m1, m2, b1p, b2p = (f64(ins[k]) for k in (
        "Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"))
    b1, b2, eps = a["beta1"], a["beta2"], a["epsilon"]
    m1 = b1 * m1 + (1 - b1) * g
    m2 = b2 * m2 + (1 - b2) * g ** 2
    lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
    p = p - lr_t * m1 / (np.sqrt(m2) + eps * np.sqrt(1 - b2p))
    dt = ins["Param"].dtype
    return {"ParamOut": p.astype(dt), "Moment1Out": m1.astype(dt), "Moment2Out": m2.astype(dt),
            **beta_pows_ref(b1p, b2p, a, ins["Beta1Pow"].dtype)}


def beta_pows_ref(b1p, b2p, a, dt):
    """The beta powers after the step (adam's and adamw's Beta1PowOut / Beta2PowOut)."""
    return {"Beta1PowOut": (b1p * a["beta1"]).astype(dt),
            "Beta2PowOut": (b2p * a["beta2"]).astype(dt)}


row("sgd", P34, sgd_ref)
for _nest in (False, True):
    row("momentum", dict(P34, Velocity=uniform(X34)), momentum_ref,
        f"momentum-{'nesterov' if _nest else 'plain'}", attrs={"mu": 0.9, "use_nesterov": _nest})
row("adam", dict(P34, Moment1=uniform(X34), Moment2=uniform(X34, 0.0, 0.5),
                 Beta1Pow=const([0.9 ** 3]), Beta2Pow=const([0.999 ** 3])), adam_ref,
    attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8})

# ---------------------------------------------------------------- shape ops


def reshape_ref(ins, a):
    x = ins["X"]
    return {"Out": x.reshape([x.shape[i] if d == 0 else d for i, d in enumerate(a["shape"])])}


for _id, _shape in [("2d", [6, 4]), ("copy_dim", [0, -1]), ("flat", [-1]), ("4d", [2, 3, 2, 2])]:
    row("reshape2", {"X": uniform(X234)}, reshape_ref, f"reshape2-{_id}", attrs={"shape": _shape})
for _id, _perm, _shape in [("3d", [2, 0, 1], X234), ("2d", [1, 0], (3, 4)),
                           ("negative_axes", [-1, 0, 1], X234)]:
    row("transpose2", {"X": uniform(_shape)},
        lambda ins, a: {"Out": np.ascontiguousarray(np.transpose(ins["X"], a["axis"]))},
        f"transpose2-{_id}", attrs={"axis": _perm})
for _id, _shapes, _ax in [("axis1", [(2, 3), (2, 1), (2, 2)], 1), ("axis0", [(1, 4), (2, 4)], 0),
                          ("axis_neg", [(2, 1, 3), (2, 2, 3)], -2)]:
    row("concat", {"X": [uniform(s) for s in _shapes]},
        lambda ins, a: {"Out": np.concatenate(ins["X"], axis=a["axis"])},
        f"concat-{_id}", attrs={"axis": _ax})


def split_ref(ins, a):
    x, ax = ins["X"], a["axis"] % ins["X"].ndim
    if a["sections"]:
        secs = list(a["sections"])
        if -1 in secs:
            secs[secs.index(-1)] = x.shape[ax] - (sum(secs) + 1)
        return {"Out": np.split(x, np.cumsum(secs)[:-1], axis=ax)}
    return {"Out": np.split(x, a["num"], axis=ax)}


for _id, _attrs in [("num", {"num": 2, "axis": 1}),
                    ("sections", {"sections": [1, 2, 3], "axis": 1}),
                    ("axis0", {"num": 4, "axis": 0}),
                    ("infer_section", {"sections": [2, -1], "axis": -1})]:
    row("split", {"X": uniform((4, 6))}, split_ref, f"split-{_id}", attrs=_attrs)


def flatten_ref(ins, a):
    x = ins["X"]
    s, e = a["start_axis"] % x.ndim, a["stop_axis"] % x.ndim
    return {"Out": x.reshape(x.shape[:s] + (-1,) + x.shape[e + 1:])}


for _s, _e in [(1, 2), (0, -1), (0, 1)]:
    row("flatten_contiguous_range", {"X": uniform(X234)}, flatten_ref,
        f"flatten_contiguous_range-{_s}_{_e}", attrs={"start_axis": _s, "stop_axis": _e})


def squeeze_ref(ins, a):
    """Paddle: no axes squeezes every size-1 dim; a listed axis of size != 1 is kept."""
    x = ins["X"]
    axes = [d % x.ndim for d in a["axes"]] or list(range(x.ndim))
    return {"Out": x.reshape([n for d, n in enumerate(x.shape) if not (d in axes and n == 1)])}


for _id, _axes, _shape in [("all", [], (2, 1, 3, 1)), ("axis1", [1], (2, 1, 3, 1)),
                           ("negative", [-1], (2, 1, 3, 1)), ("keeps_non_1", [0, 1], (2, 1, 3))]:
    row("squeeze2", {"X": uniform(_shape)}, squeeze_ref, f"squeeze2-{_id}", attrs={"axes": _axes})


def unsqueeze_ref(ins, a):
    """Paddle inserts the axes one after another, a negative one counted in the grown rank."""
    shape = list(ins["X"].shape)
    for ax in a["axes"]:
        shape.insert(ax + len(shape) + 1 if ax < 0 else ax, 1)
    return {"Out": ins["X"].reshape(shape)}


for _id, _axes in [("front", [0]), ("back", [-1]), ("two", [0, 2])]:
    row("unsqueeze2", {"X": uniform((2, 3))}, unsqueeze_ref, f"unsqueeze2-{_id}",
        attrs={"axes": _axes})

# ---------------------------------------------------------------- losses and metrics


def swce_ref(ins, a):
    z, lab, ax = f64(ins["Logits"]), ins["Label"], a["axis"] % ins["Logits"].ndim
    sm = softmax_np(z, ax)
    logsm = np.log(sm)
    if a["soft_label"]:
        loss = -(f64(lab) * logsm).sum(axis=ax, keepdims=True)
    else:
        ignored = lab == a["ignore_index"]
        loss = -np.take_along_axis(logsm, np.where(ignored, 0, lab), axis=ax)
        loss = np.where(ignored, 0.0, loss)
    dt = ins["Logits"].dtype
    return {"Softmax": sm.astype(dt), "Loss": loss.astype(dt)}


_SWCE = {"soft_label": False, "ignore_index": -100, "axis": -1}
_LOGITS = uniform((4, 5), -2, 2)
_HARD = ints((4, 1), 0, 5)
row("softmax_with_cross_entropy", {"Logits": _LOGITS, "Label": _HARD}, swce_ref,
    "softmax_with_cross_entropy-hard", attrs=_SWCE, grad_inputs=("Logits",))
row("softmax_with_cross_entropy", {"Logits": _LOGITS, "Label": _HARD}, swce_ref,
    "softmax_with_cross_entropy-hard-loss_only", attrs=_SWCE, grad_inputs=("Logits",),
    outputs_for_grad=("Loss",))
row("softmax_with_cross_entropy",
    {"Logits": _LOGITS, "Label": const([[2], [0], [2], [4]], "int64")}, swce_ref,
    "softmax_with_cross_entropy-ignore_index", attrs=dict(_SWCE, ignore_index=2),
    grad_inputs=("Logits",))
row("softmax_with_cross_entropy", {"Logits": _LOGITS, "Label": prob_rows((4, 5))}, swce_ref,
    "softmax_with_cross_entropy-soft", attrs=dict(_SWCE, soft_label=True), grad_inputs=("Logits",))
row("softmax_with_cross_entropy", {"Logits": uniform(X234, -2, 2), "Label": ints((2, 1, 4), 0, 3)},
    swce_ref, "softmax_with_cross_entropy-axis1", attrs=dict(_SWCE, axis=1),
    grad_inputs=("Logits",))


def cross_entropy_ref(ins, a):
    x, lab = f64(ins["X"]), ins["Label"]
    if a["soft_label"]:
        y = -(f64(lab) * np.log(x)).sum(axis=-1, keepdims=True)
    else:
        ignored = lab == a["ignore_index"]
        y = np.where(ignored, 0.0, -np.log(np.take_along_axis(x, np.where(ignored, 0, lab), -1)))
    return {"Y": y.astype(ins["X"].dtype)}


_CE = {"soft_label": False, "ignore_index": -100}
row("cross_entropy", {"X": prob_rows((4, 5)), "Label": _HARD}, cross_entropy_ref,
    "cross_entropy-hard", attrs=_CE, grad_inputs=("X",))
row("cross_entropy", {"X": prob_rows((4, 5)), "Label": const([[1], [3], [1], [0]], "int64")},
    cross_entropy_ref, "cross_entropy-ignore_index", attrs=dict(_CE, ignore_index=1),
    grad_inputs=("X",))
row("cross_entropy", {"X": prob_rows((4, 5)), "Label": prob_rows((4, 5))}, cross_entropy_ref,
    "cross_entropy-soft", attrs=dict(_CE, soft_label=True), grad_inputs=("X",))


def accuracy_ref(ins, a):
    scores, lab = ins["Out"], ins["Label"]
    topk = np.argsort(-f64(scores), axis=1, kind="stable")[:, :a["k"]]
    correct = int(np.sum(np.any(topk == lab.reshape(-1, 1), axis=1)))
    n = scores.shape[0]
    return {"Accuracy": np.array(correct / n, np.float32), "Correct": np.array(correct, np.int64),
            "Total": np.array(n, np.int64)}


for _k in (1, 2):
    row("accuracy", {"Out": distinct((6, 5)), "Label": ints((6, 1), 0, 5)}, accuracy_ref,
        f"accuracy-top{_k}", attrs={"k": _k})
