"""numbaflow (Paddle) ops -> ONNX nodes, opset 17. One function per op type in `_MAP`:
`fn(g, op)` appends the nodes computing the op's outputs (named as the program's
variables) to the graph builder `g`."""
import itertools

import numpy as np

from ._control_flow import CONTROL_FLOW, Unsupported, emit_block, sub_blocks
from ._control_flow import MAP as _CONTROL_FLOW_HELPERS
# the mappings of issue 28's ops (transposed conv, resize, norms, pad3d, one_hot_v2, ...)
from ._model_ops import MAP as _MODEL_OPS, adaptive_bins as _adaptive_bins, pads_of

_ELEMENTWISE = {"elementwise_add": "Add", "elementwise_sub": "Sub", "elementwise_mul": "Mul",
                "elementwise_div": "Div", "elementwise_max": "Max", "elementwise_min": "Min",
                "elementwise_pow": "Pow", "equal": "Equal", "greater_than": "Greater",
                "less_than": "Less", "greater_equal": "GreaterOrEqual",
                "less_equal": "LessOrEqual"}
_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
          "sqrt": "Sqrt", "abs": "Abs", "assign": "Identity"}
_REDUCE = {"reduce_mean": "ReduceMean", "reduce_sum": "ReduceSum", "reduce_max": "ReduceMax",
           "reduce_min": "ReduceMin"}


class Graph:
    """Collects nodes, constants and fresh names while the ops are mapped."""

    def __init__(self, onnx):
        self.onnx, self.h = onnx, onnx.helper
        self.nodes, self.inits, self._n = [], [], itertools.count(1)
        self.used = set()        # every value name, in every (sub)graph: ONNX is SSA

    def child(self):
        """A graph for a control-flow op's body: its own nodes, the same names and
        constants (outer-scope values are visible in a subgraph)."""
        sub = Graph.__new__(Graph)
        sub.__dict__.update(self.__dict__, nodes=[])
        return sub

    def name(self, hint):
        return f"_onnx/{hint}_{next(self._n)}"

    def node(self, type, inputs, outputs=None, **attrs):
        outputs = outputs or [self.name(type.lower())]
        self.nodes.append(self.h.make_node(type, list(inputs), list(outputs), **attrs))
        return outputs[0]

    def const(self, value, dtype=None, hint="const"):
        a = np.asarray(value, dtype=dtype)
        name = self.name(hint)
        self.inits.append(self.onnx.numpy_helper.from_array(a, name))
        return name

    def ints(self, values):
        return self.const(np.asarray(list(values), "int64"), hint="ints")


def _in(op, slot, i=0):
    return op.inputs[slot][i]


def _out(op, slot="Out"):
    return op.outputs[slot][0].name


def _elementwise(g, op):
    x, y = _in(op, "X"), _in(op, "Y")
    axis = op.attrs.get("axis", -1)
    yname = y.name
    if axis != -1 and len(y.shape) < len(x.shape):
        # Paddle aligns Y with X's dims from `axis`: pad Y's shape with trailing ones
        axis = axis % len(x.shape)
        trail = len(x.shape) - axis - len(y.shape)
        if trail > 0:
            yname = g.node("Reshape", [y.name, g.ints(list(y.shape) + [1] * trail)])
    g.node(_ELEMENTWISE[op.type], [x.name, yname], [_out(op)])


def _unary(g, op):
    g.node(_UNARY[op.type], [_in(op, "X").name], [_out(op)])


def _square(g, op):
    x = _in(op, "X").name
    g.node("Mul", [x, x], [_out(op)])


def _leaky_relu(g, op):
    g.node("LeakyRelu", [_in(op, "X").name], [_out(op)], alpha=float(op.attrs["alpha"]))


def _gelu(g, op):
    x = _in(op, "X")
    dt = x.dtype
    if op.attrs.get("approximate"):     # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.node("Mul", [x.name, g.node("Mul", [x.name, x.name])])
        inner = g.node("Add", [x.name, g.node("Mul", [cube, g.const(0.044715, dt)])])
        t = g.node("Tanh", [g.node("Mul", [inner, g.const(np.sqrt(2 / np.pi), dt)])])
    else:                               # 0.5 x (1 + erf(x / sqrt 2))
        t = g.node("Erf", [g.node("Div", [x.name, g.const(np.sqrt(2.0), dt)])])
    half = g.node("Mul", [x.name, g.const(0.5, dt)])
    g.node("Mul", [half, g.node("Add", [t, g.const(1.0, dt)])], [_out(op)])


def _scale(g, op):
    x = _in(op, "X")
    s, b = g.const(op.attrs["scale"], x.dtype), g.const(op.attrs["bias"], x.dtype)
    if op.attrs["bias_after_scale"]:
        g.node("Add", [g.node("Mul", [x.name, s]), b], [_out(op)])
    else:
        g.node("Mul", [g.node("Add", [x.name, b]), s], [_out(op)])


def _softmax(g, op, kind="Softmax"):
    g.node(kind, [_in(op, "X").name], [_out(op)], axis=int(op.attrs["axis"]))


def _fused_softmax_mask(g, op):
    """softmax(scale * X + Mask) over the last axis; the causal rule as a constant
    -inf upper triangle (it needs X's last two dims)."""
    x = _in(op, "X")
    z = g.node("Mul", [x.name, g.const(op.attrs["scale"], x.dtype)])
    if op.inputs.get("Mask"):
        z = g.node("Add", [z, _in(op, "Mask").name])
    if op.attrs["causal"]:
        tq, tk = x.shape[-2:]
        if -1 in (tq, tk):
            raise Unsupported(f"fused_softmax_mask causal=True over unknown sizes {x.shape}")
        z = g.node("Add", [z, g.const(np.triu(np.full((tq, tk), -np.inf), 1), x.dtype)])
    g.node("Softmax", [z], [_out(op)], axis=-1)


def _mul(g, op):
    x, y = _in(op, "X"), _in(op, "Y")
    xn, yn = op.attrs["x_num_col_dims"], op.attrs["y_num_col_dims"]
    x2 = x.name if len(x.shape) == 2 and xn == 1 else g.node("Flatten", [x.name], axis=xn)
    y2 = y.name if len(y.shape) == 2 and yn == 1 else g.node("Flatten", [y.name], axis=yn)
    out_shape = list(x.shape[:xn]) + list(y.shape[yn:])
    if len(out_shape) == 2:
        g.node("MatMul", [x2, y2], [_out(op)])
        return
    if sum(d == -1 for d in out_shape) > 1:
        raise Unsupported(f"mul output {out_shape} has more than one unknown dim")
    g.node("Reshape", [g.node("MatMul", [x2, y2]), g.ints(out_shape)], [_out(op)])


def _matmul_v2(g, op):
    names = []
    for slot, flag in (("X", "trans_x"), ("Y", "trans_y")):
        v = _in(op, slot)
        if op.attrs[flag] and len(v.shape) >= 2:
            perm = list(range(len(v.shape)))
            perm[-2], perm[-1] = perm[-1], perm[-2]
            names.append(g.node("Transpose", [v.name], perm=perm))
        else:
            names.append(v.name)
    g.node("MatMul", names, [_out(op)])


def _check_nchw(op, key):
    if op.attrs.get(key, "NCHW") not in ("NCHW", "NCDHW", "AnyLayout"):
        raise Unsupported(f"{key} {op.attrs[key]!r} (only NCHW / NCDHW)")


def _conv2d(g, op):
    _check_nchw(op, "data_format")
    g.node("Conv", [_in(op, "Input").name, _in(op, "Filter").name], [_out(op, "Output")],
           strides=list(op.attrs["strides"]), dilations=list(op.attrs["dilations"]),
           group=int(op.attrs["groups"]), pads=pads_of(op))


def _pool2d(g, op):
    _check_nchw(op, "data_format")
    is_max = op.attrs["pooling_type"] == "max"
    x = _in(op, "X").name
    if op.attrs["global_pooling"] or op.attrs["adaptive"] and set(op.attrs["ksize"]) == {1}:
        g.node("GlobalMaxPool" if is_max else "GlobalAveragePool", [x], [_out(op)])
        return
    if op.attrs["adaptive"]:
        # Paddle's bins are equal windows when the output size divides the input size
        hw, outs = _in(op, "X").shape[2:], list(op.attrs["ksize"])
        if -1 in hw:
            raise Unsupported(f"adaptive pooling of unknown spatial dims {list(hw)} (ONNX "
                              f"has no adaptive pool: the bins need the input's size)")
        if any(d % o for d, o in zip(hw, outs)):
            _adaptive_bins(g, op, x, hw, outs, is_max)
            return
        k = [d // o for d, o in zip(hw, outs)]
        g.node("MaxPool" if is_max else "AveragePool", [x], [_out(op)], kernel_shape=k,
               strides=k)
        return
    kw = dict(kernel_shape=list(op.attrs["ksize"]), strides=list(op.attrs["strides"]),
              pads=pads_of(op), ceil_mode=int(bool(op.attrs["ceil_mode"])))
    if not is_max:
        kw["count_include_pad"] = int(not op.attrs["exclusive"])
    g.node("MaxPool" if is_max else "AveragePool", [x], [_out(op)], **kw)


def _batch_norm(g, op):
    _check_nchw(op, "data_layout")
    if not (op.attrs["is_test"] or op.attrs["use_global_stats"]):
        raise Unsupported("batch_norm in training mode (export a program cloned "
                          "for_test, as save_inference_model does)")
    g.node("BatchNormalization", [_in(op, s).name for s in ("X", "Scale", "Bias", "Mean",
                                                            "Variance")],
           [_out(op, "Y")], epsilon=float(op.attrs["epsilon"]))


def _layer_norm(g, op):
    x = _in(op, "X")
    axis = op.attrs["begin_norm_axis"]
    norm = list(x.shape[axis:])
    if -1 in norm:
        raise Unsupported(f"layer_norm over unknown dims {norm}")
    ins = [x.name]
    for slot, fill in (("Scale", 1.0), ("Bias", 0.0)):
        if op.inputs.get(slot):
            v = _in(op, slot).name
            ins.append(g.node("Reshape", [v, g.ints(norm)]) if len(norm) > 1 else v)
        else:
            ins.append(g.const(np.full(norm, fill, x.dtype)))
    g.node("LayerNormalization", ins, [_out(op, "Y")], axis=int(axis),
           epsilon=float(op.attrs["epsilon"]))


def _reshape2(g, op):
    g.node("Reshape", [_in(op, "X").name, g.ints(op.attrs["shape"])], [_out(op)])


def _transpose2(g, op):
    g.node("Transpose", [_in(op, "X").name], [_out(op)], perm=list(op.attrs["axis"]))


def _flatten(g, op):
    x = _in(op, "X")
    nd = max(len(x.shape), 1)
    start, stop = op.attrs["start_axis"] % nd, op.attrs["stop_axis"] % nd
    if stop == nd - 1:
        if start == 0:
            g.node("Reshape", [x.name, g.ints([-1])], [_out(op)])
        else:
            g.node("Flatten", [x.name], [_out(op)], axis=start) if start == 1 else \
                g.node("Reshape", [x.name, g.ints([0] * start + [-1])], [_out(op)])
        return
    tail = list(x.shape[stop + 1:])
    if -1 in tail:
        raise Unsupported("flatten with unknown dims after stop_axis")
    g.node("Reshape", [x.name, g.ints([0] * start + [-1] + tail)], [_out(op)])


def _slice(g, op):
    x = _in(op, "Input")
    out = _out(op)
    dec = list(op.attrs.get("decrease_axis") or [])
    sliced = g.node("Slice", [x.name, g.ints(op.attrs["starts"]), g.ints(op.attrs["ends"]),
                              g.ints(op.attrs["axes"])], None if dec else [out])
    if dec:
        g.node("Squeeze", [sliced, g.ints(dec)], [out])


def _squeeze(g, op, kind):
    g.node(kind, [_in(op, "X").name, g.ints(op.attrs["axes"])], [_out(op)])


def _reduce(g, op):
    x = _in(op, "X")
    axes = list(range(len(x.shape))) if op.attrs["reduce_all"] else list(op.attrs["dim"])
    keep = int(bool(op.attrs["keep_dim"]))
    kind = _REDUCE[op.type]
    if kind == "ReduceSum":      # opset 13+: axes is an input for ReduceSum only
        g.node(kind, [x.name, g.ints(axes)], [_out(op)], keepdims=keep)
    else:
        g.node(kind, [x.name], [_out(op)], axes=axes, keepdims=keep)


def _concat(g, op):
    g.node("Concat", [v.name for v in op.inputs["X"]], [_out(op)], axis=int(op.attrs["axis"]))


def _dropout(g, op):
    x = _in(op, "X").name
    if op.attrs["dropout_implementation"] == "upscale_in_train":
        g.node("Identity", [x], [_out(op)])
    else:
        keep = g.const(1.0 - float(op.attrs["dropout_prob"]), _in(op, "X").dtype)
        g.node("Mul", [x, keep], [_out(op)])


def _cast(g, op):
    g.node("Cast", [_in(op, "X").name], [_out(op)],
           to=g.h.np_dtype_to_tensor_dtype(np.dtype(op.attrs["out_dtype"])))


def _lookup(g, op):
    if op.attrs.get("padding_idx") not in (None, -1):
        raise Unsupported(f"padding_idx {op.attrs['padding_idx']} (the row is not zeroed)")
    g.node("Gather", [_in(op, "W").name, _in(op, "Ids").name], [_out(op)], axis=0)


def _sum(g, op):
    g.node("Sum", [v.name for v in op.inputs["X"]], [_out(op)])


def _clip(g, op):
    x = _in(op, "X")
    g.node("Clip", [x.name, g.const(op.attrs["min"], x.dtype), g.const(op.attrs["max"], x.dtype)],
           [_out(op)])


def _pow(g, op):
    x = _in(op, "X")
    g.node("Pow", [x.name, g.const(op.attrs["factor"], x.dtype)], [_out(op)])


def _arg_max(g, op):
    x = _in(op, "X").name
    axis = int(op.attrs["axis"])
    if op.attrs["flatten"]:
        x, axis = g.node("Reshape", [x, g.ints([-1])]), 0
    out = _out(op)
    dt = np.dtype(op.attrs["dtype"])
    idx = g.node("ArgMax", [x], None if dt != np.int64 else [out], axis=axis,
                 keepdims=int(bool(op.attrs["keepdims"])))
    if dt != np.int64:
        g.node("Cast", [idx], [out], to=g.h.np_dtype_to_tensor_dtype(dt))


def _split(g, op):
    x = _in(op, "X")
    axis = op.attrs["axis"] % len(x.shape)
    dim, outs = x.shape[axis], [v.name for v in op.outputs["Out"]]
    sections = list(op.attrs["sections"]) or ([dim // len(outs)] * len(outs) if dim >= 0
                                              else [])
    if -1 in sections and dim >= 0:
        sections[sections.index(-1)] = dim - (sum(sections) + 1)
    if not sections or -1 in sections:
        raise Unsupported(f"split of an unknown dim {dim} into {op.attrs}")
    g.node("Split", [x.name, g.ints(sections)], outs, axis=axis)


_MAP = {**{k: _elementwise for k in _ELEMENTWISE}, **{k: _unary for k in _UNARY},
        **{k: _reduce for k in _REDUCE},
        "square": _square, "leaky_relu": _leaky_relu, "gelu": _gelu, "scale": _scale,
        "softmax": _softmax, "log_softmax": lambda g, op: _softmax(g, op, "LogSoftmax"),
        "fused_softmax_mask": _fused_softmax_mask,
        "mul": _mul, "matmul_v2": _matmul_v2, "conv2d": _conv2d, "depthwise_conv2d": _conv2d,
        "pool2d": _pool2d, "batch_norm": _batch_norm, "layer_norm": _layer_norm,
        "conv3d": _conv2d, "pool3d": _pool2d,       # ONNX Conv / *Pool are N-d
        "reshape2": _reshape2, "transpose2": _transpose2, "flatten_contiguous_range": _flatten,
        "slice": _slice, "squeeze2": lambda g, op: _squeeze(g, op, "Squeeze"),
        "unsqueeze2": lambda g, op: _squeeze(g, op, "Unsqueeze"), "concat": _concat,
        "dropout": _dropout, "cast": _cast, "lookup_table_v2": _lookup, "sum": _sum,
        "clip": _clip, "pow": _pow, "arg_max": _arg_max, "split": _split}


_MAP.update(_MODEL_OPS)
_MAP.update(_CONTROL_FLOW_HELPERS)

def _value_info(onnx, v):
    dims = [d if d >= 0 else "N" for d in v.shape]
    return onnx.helper.make_tensor_value_info(
        v.name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(v.dtype)), dims)


def build_model(onnx, program, feed_names, fetch_names, params, opset):
    """The ONNX ModelProto of the pruned inference `program`."""
    block = program.global_block()
    missing = sorted({op.type for op in sub_blocks(block.ops)
                      if op.type not in _MAP and op.type not in CONTROL_FLOW})
    if missing:
        raise NotImplementedError(f"export: these ops have no ONNX mapping in numbaflow: "
                                  f"{missing}")
    g = Graph(onnx)
    env = {block.var(n): n for n in feed_names}
    g.used.update(feed_names)
    g.used.update(params)
    problems = []
    emit_block(g, block.ops, env, _MAP, problems)
    for n in fetch_names:        # a variable written twice: its last value under its name
        v = block.var(n)
        if v.is_tensor_array:
            problems.append(f"fetch {n!r}: a tensor array (fetch what is read from it)")
        elif env.get(v, n) != n:
            if n in g.used:
                problems.append(f"fetch {n!r}: a fed variable the program overwrites")
            else:
                g.node("Identity", [env[v]], [n])
    if problems:
        raise NotImplementedError("export: ONNX cannot express:\n  " + "\n  ".join(problems))
    inits = [onnx.numpy_helper.from_array(np.ascontiguousarray(a), name)
             for name, a in sorted(params.items())] + g.inits
    graph = onnx.helper.make_graph(
        g.nodes, "numbaflow", [_value_info(onnx, block.var(n)) for n in feed_names],
        [_value_info(onnx, block.var(n)) for n in fetch_names], inits)
    return onnx.helper.make_model(graph, producer_name="numbaflow",
                                  opset_imports=[onnx.helper.make_opsetid("", opset)])
