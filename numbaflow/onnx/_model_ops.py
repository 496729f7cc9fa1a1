"""ONNX mappings of the ops Paddle 2 models use (issue 28): conv2d_transpose
(ConvTranspose), nearest / bilinear_interp_v2 (Resize), instance_norm
(InstanceNormalization), group_norm (Reshape + InstanceNormalization + Reshape, then the
per-channel affine), pad3d (Pad), one_hot_v2 (OneHot), prelu (PRelu), unfold (a one-hot
grouped Conv), adaptive pooling to any size (per-bin Slice + Reduce) and the Paddle 2
activations.
Merged into _ops._MAP; the same `fn(g, op)` contract. _ops.py imports this file (and
its `pads_of`), never the other way."""
import numpy as np

from ._control_flow import Unsupported


def pads_of(op):
    """ONNX pads (every dim's start, then every end) of a 2-D or 3-D conv / pool."""
    p, n = list(op.attrs["paddings"]), len(op.attrs["strides"])
    if op.attrs.get("padding_algorithm", "EXPLICIT") == "VALID":
        return [0] * 2 * n
    if op.attrs.get("padding_algorithm", "EXPLICIT") != "EXPLICIT":
        raise Unsupported(f"padding_algorithm {op.attrs['padding_algorithm']!r}")
    if len(p) == n:
        return p + p
    return p[0::2] + p[1::2]       # Paddle [before, after] per dim ([top, bottom, left, right])


def op_in(op, slot, i=0):
    return op.inputs[slot][i]


def op_out(op, slot="Out"):
    return op.outputs[slot][0].name


def _check_nchw(op, key):
    if op.attrs.get(key, "NCHW") not in ("NCHW", "AnyLayout"):
        raise Unsupported(f"{key} {op.attrs[key]!r} (only NCHW)")


def _conv2d_transpose(g, op):
    _check_nchw(op, "data_format")
    x, w, y = op_in(op, "Input"), op_in(op, "Filter"), op.outputs["Output"][0]
    pads, s, d = pads_of(op), list(op.attrs["strides"]), list(op.attrs["dilations"])
    # output_padding: whatever output_size / output_padding added to the plain size
    extra = []
    for i in range(2):
        n, o = x.shape[2 + i], y.shape[2 + i]
        if n < 0 or o < 0:
            raise Unsupported("conv2d_transpose with unknown spatial dims")
        extra.append(o - ((n - 1) * s[i] - pads[i] - pads[i + 2] + d[i] * (w.shape[2 + i] - 1)
                          + 1))
    g.node("ConvTranspose", [x.name, w.name], [y.name], strides=s, dilations=d, pads=pads,
           group=int(op.attrs["groups"]), output_padding=extra)


def _interp(g, op):
    """Resize: Paddle's half-pixel (align_mode 0) / ratio * k (align_mode 1, nearest) /
    align_corners sources; a Paddle `scale` is passed as ONNX scales (both give
    int(in * scale) and the source in / scale), else the sizes."""
    a, x = op.attrs, op_in(op, "X")
    if a["data_layout"] not in ("NCHW", "AnyLayout"):
        raise Unsupported(f"data_layout {a['data_layout']!r} (only NCHW)")
    nearest = op.type.startswith("nearest")
    if nearest and a["align_corners"]:
        raise Unsupported("nearest with align_corners")
    mode = "align_corners" if a["align_corners"] else \
        "half_pixel" if not nearest and a["align_mode"] == 0 else "asymmetric"
    if a["scale"] and min(a["scale"]) > 0:
        ins = [x.name, "", g.const(np.asarray([1, 1] + list(a["scale"]), np.float32))]
    else:
        y = op.outputs["Out"][0]
        if x.shape[0] < 0:
            n_c = g.node("Slice", [g.node("Shape", [x.name]), g.ints([0]), g.ints([2])])
            sizes = g.node("Concat", [n_c, g.ints(y.shape[2:])], axis=0)
        else:
            sizes = g.ints(y.shape)
        ins = [x.name, "", "", sizes]
    kw = dict(mode="nearest", nearest_mode="floor") if nearest else dict(mode="linear")
    g.node("Resize", ins, [op.outputs["Out"][0].name], coordinate_transformation_mode=mode, **kw)


def _affine_input(g, op, slot, n, fill, dtype):
    if op.inputs.get(slot):
        return op_in(op, slot).name
    return g.const(np.full(n, fill, dtype))


def _instance_norm(g, op):
    x = op_in(op, "X")
    c = x.shape[1]
    g.node("InstanceNormalization",
           [x.name, _affine_input(g, op, "Scale", c, 1.0, x.dtype),
            _affine_input(g, op, "Bias", c, 0.0, x.dtype)], [op_out(op, "Y")],
           epsilon=float(op.attrs["epsilon"]))


def _group_norm(g, op):
    _check_nchw(op, "data_layout")
    x, G = op_in(op, "X"), int(op.attrs["groups"])
    c = x.shape[1]
    blocks = g.node("Reshape", [x.name, g.ints([0, G, -1])])
    normed = g.node("InstanceNormalization",
                    [blocks, g.const(np.ones(G, x.dtype)), g.const(np.zeros(G, x.dtype))],
                    epsilon=float(op.attrs["epsilon"]))
    y = g.node("Reshape", [normed, g.node("Shape", [x.name])])
    per_channel = [c] + [1] * (len(x.shape) - 2)
    for slot, kind in (("Scale", "Mul"), ("Bias", "Add")):
        if op.inputs.get(slot):
            y = g.node(kind, [y, g.node("Reshape", [op_in(op, slot).name, g.ints(per_channel)])])
    g.node("Identity", [y], [op_out(op, "Y")])


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _pad3d(g, op):
    a, x = op.attrs, op_in(op, "X")
    if a["mode"] not in _PAD_MODES:
        raise Unsupported(f"pad3d mode {a['mode']!r} (opset 17's Pad has no wrap)")
    l_, r, t, b, f, k = (int(v) for v in a["paddings"])
    if a["data_format"] == "NCDHW":
        pads = [0, 0, f, t, l_, 0, 0, k, b, r]
    else:
        pads = [0, f, t, l_, 0, 0, k, b, r, 0]
    ins = [x.name, g.ints(pads)]
    if a["mode"] == "constant":
        ins.append(g.const(np.asarray(a["value"], x.dtype)))
    g.node("Pad", ins, [op_out(op)], mode=_PAD_MODES[a["mode"]])


def _one_hot_v2(g, op):
    dt = np.dtype(op.attrs["dtype"])
    g.node("OneHot", [op_in(op, "X").name, g.ints([int(op.attrs["depth"])]),
                      g.const(np.asarray([0, 1], dt))], [op_out(op)], axis=-1)


def _hard_swish(g, op):
    if [op.attrs[k] for k in ("threshold", "scale", "offset")] != [6.0, 6.0, 3.0]:
        raise Unsupported(f"hard_swish with {op.attrs} (ONNX's HardSwish is 6 / 6 / 3)")
    g.node("HardSwish", [op_in(op, "X").name], [op_out(op)])


def _hard_sigmoid(g, op):
    g.node("HardSigmoid", [op_in(op, "X").name], [op_out(op)],
           alpha=float(op.attrs["slope"]), beta=float(op.attrs["offset"]))


def _swish(g, op):
    x = op_in(op, "X").name
    g.node("Mul", [x, g.node("Sigmoid", [x])], [op_out(op)])


def _clip_to(g, op, lo, hi):
    x = op_in(op, "X")
    g.node("Clip", [x.name, g.const(lo, x.dtype), g.const(hi, x.dtype)], [op_out(op)])


def _brelu(g, op):
    _clip_to(g, op, op.attrs["t_min"], op.attrs["t_max"])


def _relu6(g, op):
    _clip_to(g, op, 0.0, op.attrs["threshold"])


def _unary(onnx_type, **attrs_of):
    """A one-node mapping: ONNX op `onnx_type`, its attributes from op attributes
    (name -> (attribute, transform))."""
    def emit(g, op):
        g.node(onnx_type, [op_in(op, "X").name], [op_out(op)],
               **{k: float(op.attrs[a]) for k, a in attrs_of.items()})
    return emit


def _softplus_node(g, x, op, out=None):
    a = op.attrs
    # ONNX's Softplus has no beta, and no threshold: above it Paddle's is x, which
    # log(1 + exp(x)) equals to float precision only for thresholds >= 15
    if float(a.get("beta", 1.0)) != 1.0 or float(a.get("threshold", 20.0)) < 15.0:
        raise Unsupported(f"{op.type} with {a} (ONNX's Softplus is beta 1, no threshold)")
    return g.node("Softplus", [x], [out] if out else None)


def _softplus(g, op):
    _softplus_node(g, op_in(op, "X").name, op, op_out(op))


def _mish(g, op):
    x = op_in(op, "X").name
    g.node("Mul", [x, g.node("Tanh", [_softplus_node(g, x, op)])], [op_out(op)])


def _logsigmoid(g, op):
    g.node("Neg", [g.node("Softplus", [g.node("Neg", [op_in(op, "X").name])])], [op_out(op)])


def _tanh_shrink(g, op):
    x = op_in(op, "X").name
    g.node("Sub", [x, g.node("Tanh", [x])], [op_out(op)])


def _softshrink(g, op):
    t = float(op.attrs["lambda"])
    g.node("Shrink", [op_in(op, "X").name], [op_out(op)], bias=t, lambd=t)


def adaptive_bins(g, op, x, hw, outs, is_max):
    """Adaptive pooling of static `hw` to `outs` bins that do not divide it (ONNX has no
    adaptive pool): Paddle's bin i of a dim n covers [floor(i n / o), ceil((i + 1) n / o));
    a rectangle's mean (max) is the mean (max) over its columns of the means (maxes) over
    its rows, so each dim is one Slice + Reduce per bin and a Concat."""
    reduce = "ReduceMax" if is_max else "ReduceMean"
    for axis, (n, o) in enumerate(zip(hw, outs), start=2):
        bins = [g.node(reduce, [g.node("Slice", [x, g.ints([i * n // o]),
                                                 g.ints([-(-(i + 1) * n // o)]), g.ints([axis])])],
                       axes=[axis], keepdims=1) for i in range(o)]
        x = g.node("Concat", bins, [op_out(op)] if axis == len(hw) + 1 else None, axis=axis)


def _prelu(g, op):
    x, alpha = op_in(op, "X"), op_in(op, "Alpha")
    a = op.attrs
    if a["mode"] == "channel" and a["data_format"] == "NCHW":
        # a [C] slope broadcasts over X's dim 1: shape it [C, 1, ..., 1]
        slope = g.node("Reshape", [alpha.name, g.ints([-1] + [1] * (len(x.shape) - 2))])
    else:
        slope = alpha.name      # [1], [C] on the last dim, or X's shape without the batch
    g.node("PRelu", [x.name, slope], [op_out(op, "Out")])


def _unfold(g, op):
    """im2col as a grouped Conv whose filter picks one kernel cell per output channel:
    channel c * kh * kw + k of group c reads cell k, as Paddle's unfold orders them."""
    x, a = op_in(op, "X"), op.attrs
    kh, kw = (int(k) for k in a["kernel_sizes"])
    c = x.shape[1]
    if c < 0:
        raise Unsupported("unfold of an unknown channel count")
    eye = np.eye(kh * kw, dtype=x.dtype).reshape(kh * kw, 1, kh, kw)
    top, left, bottom, right = (int(p) for p in a["paddings"])
    cols = g.node("Conv", [x.name, g.const(np.tile(eye, (c, 1, 1, 1)))], group=c,
                  strides=list(a["strides"]), dilations=list(a["dilations"]),
                  kernel_shape=[kh, kw], pads=[top, left, bottom, right])
    g.node("Reshape", [cols, g.ints([0, c * kh * kw, -1])], [op_out(op, "Y")])


def _gather(g, op):
    g.node("Gather", [op_in(op, "X").name, op_in(op, "Index").name], [op_out(op)],
           axis=int(op.attrs["axis"]))


def _assign_value(g, op):
    a = op.attrs
    value = np.asarray(a["values"], np.dtype(a["dtype"])).reshape([int(d) for d in a["shape"]])
    g.node("Constant", [], [op_out(op)], value=g.onnx.numpy_helper.from_array(value))


def _rrelu(g, op):
    if not op.attrs["is_test"]:
        raise Unsupported("rrelu in training (random slopes); export the eval() program")
    g.node("LeakyRelu", [op_in(op, "X").name], [op_out(op)],
           alpha=(float(op.attrs["lower"]) + float(op.attrs["upper"])) / 2)


MAP = {"conv2d_transpose": _conv2d_transpose, "depthwise_conv2d_transpose": _conv2d_transpose,
       "nearest_interp_v2": _interp, "bilinear_interp_v2": _interp,
       "instance_norm": _instance_norm, "group_norm": _group_norm, "pad3d": _pad3d,
       "one_hot_v2": _one_hot_v2, "hard_swish": _hard_swish, "hard_sigmoid": _hard_sigmoid,
       "swish": _swish, "silu": _swish, "brelu": _brelu,
       "elu": _unary("Elu", alpha="alpha"), "celu": _unary("Celu", alpha="alpha"),
       "selu": _unary("Selu", alpha="alpha", gamma="scale"), "softsign": _unary("Softsign"),
       "thresholded_relu": _unary("ThresholdedRelu", alpha="threshold"),
       "hard_shrink": _unary("Shrink", lambd="threshold"), "softshrink": _softshrink,
       "softplus": _softplus, "mish": _mish, "logsigmoid": _logsigmoid,
       "tanh_shrink": _tanh_shrink, "prelu": _prelu, "unfold": _unfold,
       "relu6": _relu6, "gather": _gather, "assign_value": _assign_value,
       "rrelu": _rrelu}
