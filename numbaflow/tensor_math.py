"""The math functions of the top-level API (paddle.add, paddle.mean, ...).

Each validates its arguments and appends one registered op (sometimes two); Python
scalars mix with Variables as in Paddle (`x * 2.0` is a `scale` op).
"""
import builtins
import numbers

import numpy as np

from . import dtypes
from .graph.program import Variable
from .layer_helper import LayerHelper


def _var(x, fn, arg="x"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def _rank1(x):
    """max(rank, 1) (this module defines its own `max`)."""
    return builtins.max(x.ndim, 1)


def _const_like(value, like, helper):
    """A shape-(1,) constant of `like`'s dtype (for scalar-on-the-left arithmetic)."""
    c = helper.create_tmp(like.dtype, stop_gradient=True)
    helper.append_op("fill_constant", outputs={"Out": c},
                     attrs={"shape": [1], "value": float(value), "dtype": str(like.dtype)})
    return c


def _binary(op_type, x, y, name=None):
    helper = LayerHelper(op_type, name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        x = _const_like(x, y, helper)
    elif isinstance(y, numbers.Number) and isinstance(x, Variable):
        y = _const_like(y, x, helper)
    _var(x, op_type, "x"), _var(y, op_type, "y")
    if x.dtype != y.dtype:
        raise TypeError(f"{op_type}: x ({x.name}, {x.dtype}) and y ({y.name}, {y.dtype}) must "
                        f"have the same dtype; cast one with paddle.cast")
    return helper.simple(op_type, {"X": x, "Y": y}, {"axis": -1})


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    out = LayerHelper("scale", name).simple(
        "scale", {"X": _var(x, "scale")},
        {"scale": float(scale), "bias": float(bias), "bias_after_scale": bool(bias_after_scale)})
    return _activation(out, act)


def add(x, y, name=None):
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, 1.0, float(y), name=name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        return scale(y, 1.0, float(x), name=name)
    return _binary("elementwise_add", x, y, name)


def subtract(x, y, name=None):
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, 1.0, -float(y), name=name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        return scale(y, -1.0, float(x), name=name)
    return _binary("elementwise_sub", x, y, name)


def multiply(x, y, name=None):
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, float(y), name=name)
    if isinstance(x, numbers.Number) and isinstance(y, Variable):
        return scale(y, float(x), name=name)
    return _binary("elementwise_mul", x, y, name)


def divide(x, y, name=None):
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return scale(x, 1.0 / float(y), name=name)
    return _binary("elementwise_div", x, y, name)


def pow(x, y, name=None):
    if isinstance(y, numbers.Number) and isinstance(x, Variable):
        return LayerHelper("pow", name).simple("pow", {"X": x}, {"factor": float(y)})
    return _binary("elementwise_pow", x, y, name)


def maximum(x, y, name=None):
    return _binary("elementwise_max", x, y, name)


def minimum(x, y, name=None):
    return _binary("elementwise_min", x, y, name)


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    """numpy-style matmul (batch dims broadcast) with optional transposes."""
    _var(x, "matmul", "x"), _var(y, "matmul", "y")
    if x.dtype != y.dtype:
        raise TypeError(f"matmul: x ({x.dtype}) and y ({y.dtype}) must have the same dtype")
    return LayerHelper("matmul_v2", name).simple(
        "matmul_v2", {"X": x, "Y": y}, {"trans_x": bool(transpose_x), "trans_y": bool(transpose_y)})


def _reduce(op_type, layer, x, axis, keepdim, name):
    _var(x, layer)
    if axis is None or (isinstance(axis, (list, tuple)) and len(axis) == 0):
        attrs = {"dim": [0], "keep_dim": bool(keepdim), "reduce_all": True}
    else:
        dims = [axis] if isinstance(axis, int) else [int(a) for a in axis]
        for d in dims:
            if not -_rank1(x) <= d < _rank1(x):
                raise ValueError(f"{layer}: axis {d} is out of range for {x.name} of shape "
                                 f"{x.shape}")
        attrs = {"dim": dims, "keep_dim": bool(keepdim),
                 "reduce_all": len({d % _rank1(x) for d in dims}) == x.ndim}
    return LayerHelper(layer, name).simple(op_type, {"X": x}, attrs)


def mean(x, axis=None, keepdim=False, name=None):
    """Mean over `axis` (all axes by default: a 0-D result), op `reduce_mean`."""
    return _reduce("reduce_mean", "mean", x, axis, keepdim, name)


def sum(x, axis=None, dtype=None, keepdim=False, name=None):
    out = _reduce("reduce_sum", "sum", x, axis, keepdim, name)
    return cast(out, dtype) if dtype is not None and dtypes.convert_dtype(dtype) != x.dtype else out


def max(x, axis=None, keepdim=False, name=None):
    return _reduce("reduce_max", "max", x, axis, keepdim, name)


def min(x, axis=None, keepdim=False, name=None):
    return _reduce("reduce_min", "min", x, axis, keepdim, name)


def _unary(op_type):
    def fn(x, name=None):
        return LayerHelper(op_type, name).simple(op_type, {"X": _var(x, op_type)})
    fn.__name__ = op_type
    fn.__doc__ = f"Elementwise {op_type} (op `{op_type}`)."
    return fn


exp, log, sqrt, square, abs, tanh = (_unary(t) for t in ("exp", "log", "sqrt", "square",
                                                           "abs", "tanh"))


_ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "leaky_relu", "softmax", "log_softmax",
                "exp", "sqrt", "square", "abs")


def _activation(x, act, helper=None):
    """Apply activation `act` (a name) to x; with `helper`, the output is named after the
    layer (fc's activation output is `fc_0.tmp_2`, as in Paddle)."""
    if act is None:
        return x
    if act not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {act!r}; use one of {', '.join(_ACTIVATIONS)}")
    return (helper or LayerHelper(act)).simple(act, {"X": x})


def clip(x, min=None, max=None, name=None):
    lo = float("-inf") if min is None else float(min)
    hi = float("inf") if max is None else float(max)
    if lo > hi:
        raise ValueError(f"clip: min ({lo}) must be <= max ({hi})")
    return LayerHelper("clip", name).simple("clip", {"X": _var(x, "clip")}, {"min": lo, "max": hi})


def cast(x, dtype):
    _var(x, "cast")
    dt = dtypes.convert_dtype(dtype)
    return LayerHelper("cast").simple("cast", {"X": x},
                                      {"in_dtype": str(x.dtype), "out_dtype": str(dt)}, dtype=dt)


def assign(x, output=None):
    """Copy a Variable (or a numpy array / list, as a constant) into `output` or a new var."""
    helper = LayerHelper("assign")
    if isinstance(x, Variable):
        out = output or helper.create_tmp(x.dtype)
        helper.append_op("assign", {"X": x}, {"Out": out})
        return out
    arr = np.asarray(x)
    if arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    out = output or helper.create_tmp(arr.dtype, stop_gradient=True)
    helper.append_op("assign_value", outputs={"Out": out},
                     attrs={"shape": list(arr.shape), "dtype": str(arr.dtype),
                            "values": arr.reshape(-1).tolist()})
    return out


def full(shape, fill_value, dtype=None, name=None):
    dt = dtypes.convert_dtype(dtype or "float32")
    shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
    helper = LayerHelper("full", name)
    out = helper.create_tmp(dt, stop_gradient=True)
    helper.append_op("fill_constant", outputs={"Out": out},
                     attrs={"shape": shape, "value": float(fill_value), "dtype": str(dt)})
    return out


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    _var(x, "argmax")
    attrs = {"axis": -1 if axis is None else int(axis), "keepdims": bool(keepdim),
             "flatten": axis is None, "dtype": str(dtypes.convert_dtype(dtype))}
    return LayerHelper("arg_max", name).simple("arg_max", {"X": x}, attrs, dtype=attrs["dtype"])


# ---------------------------------------------------------------- shape ops
def reshape(x, shape, name=None):
    """Reshape; 0 copies the input dim, -1 is inferred (one at most)."""
    shape = [int(d) for d in shape]
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 in shape, got {shape}")
    return LayerHelper("reshape2", name).simple("reshape2", {"X": _var(x, "reshape")},
                                                {"shape": shape})


def transpose(x, perm, name=None):
    _var(x, "transpose")
    perm = [int(p) for p in perm]
    if sorted(p % _rank1(x) for p in perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: perm {perm} is not a permutation of the {x.ndim} axes of "
                         f"{x.name} {x.shape}")
    return LayerHelper("transpose2", name).simple("transpose2", {"X": x}, {"axis": perm})


def concat(x, axis=0, name=None):
    xs = list(x)
    if not xs:
        raise ValueError("concat: needs at least one input")
    for i, v in enumerate(xs):
        _var(v, "concat", f"x[{i}]")
    return LayerHelper("concat", name).simple("concat", {"X": xs}, {"axis": int(axis)})


def split(x, num_or_sections, axis=0, name=None):
    _var(x, "split")
    if isinstance(num_or_sections, int):
        attrs, n = {"num": num_or_sections, "sections": [], "axis": int(axis)}, num_or_sections
    else:
        secs = [int(s) for s in num_or_sections]
        attrs, n = {"num": 0, "sections": secs, "axis": int(axis)}, len(secs)
    helper = LayerHelper("split", name)
    outs = [helper.create_tmp(x.dtype) for _ in range(n)]
    helper.append_op("split", {"X": x}, {"Out": outs}, attrs)
    return outs


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    return LayerHelper("flatten_contiguous_range", name).simple(
        "flatten_contiguous_range", {"X": _var(x, "flatten")},
        {"start_axis": int(start_axis), "stop_axis": int(stop_axis)})


def squeeze(x, axis=None, name=None):
    axes = [] if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    return LayerHelper("squeeze2", name).simple("squeeze2", {"X": _var(x, "squeeze")},
                                                {"axes": axes})


def unsqueeze(x, axis, name=None):
    axes = [axis] if isinstance(axis, int) else list(axis)
    return LayerHelper("unsqueeze2", name).simple("unsqueeze2", {"X": _var(x, "unsqueeze")},
                                                  {"axes": axes})


# ---------------------------------------------------------------- creation
def zeros(shape, dtype=None, name=None):
    """A constant Variable of `shape` filled with 0 (op fill_constant)."""
    return full(shape, 0.0, dtype, name)


def ones(shape, dtype=None, name=None):
    """A constant Variable of `shape` filled with 1 (op fill_constant)."""
    return full(shape, 1.0, dtype, name)


def full_like(x, fill_value, dtype=None, name=None):
    """A Variable shaped like `x` (batch dim included) filled with `fill_value` (op
    fill_any_like; x's values are not read)."""
    _var(x, "full_like")
    if not isinstance(fill_value, (numbers.Number, bool)):
        raise TypeError(f"full_like: fill_value must be a number, got "
                        f"{type(fill_value).__name__}")
    dt = dtypes.convert_dtype(dtype) if dtype is not None else x.dtype
    return LayerHelper("full_like", name).simple(
        "fill_any_like", {"X": x}, {"value": float(fill_value), "dtype": str(dt)}, dtype=dt)


def zeros_like(x, dtype=None, name=None):
    return full_like(x, 0.0, dtype, name)


def ones_like(x, dtype=None, name=None):
    return full_like(x, 1.0, dtype, name)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    """A trainable parameter of `shape` in the main program, initialised in the startup
    program (Xavier for weights, 0 for biases unless `default_initializer` or `attr` say).

    >>> w = paddle.create_parameter(shape=[784, 10], dtype='float32')
    """
    import copy
    from .param_attr import ParamAttr
    shape = [int(d) for d in shape]
    attr = copy.copy(ParamAttr._to_attr(attr))     # the caller's ParamAttr is not changed
    if name is not None and attr.name is None:
        attr.name = name
    helper = LayerHelper("create_parameter")
    return helper.create_parameter(attr, shape, dtypes.convert_dtype(dtype), is_bias,
                                   default_initializer)
