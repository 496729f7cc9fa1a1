"""Unary elementwise ops (activations and math functions) with their gradient ops.

Each pair is: forward body, then the `_grad` op's body over (saved forward value,
Out@GRAD). Bodies use the vocabulary of scalar.py and are rendered by the same template.
"""
import math

from .. import scalar as S
from .elementwise import elementwise_op, grad_rule
from ..registry import ACTIVATION, NO_GRAD, Slot

_GRAD_OUT = (Slot("X@GRAD"),)


def unary(type, body, grad_body=None, reads="X", attrs=None, doc=""):
    """Register the activation op `type` (X -> Out) and, when `grad_body` is given, `type_grad`.

    reads: the forward value the gradient needs, "X" or "Out" (relu/sigmoid/tanh save Out).
    """
    grad = grad_rule(f"{type}_grad", reads=(reads,)) if grad_body else None
    elementwise_op(type, ("X",), body, attrs=attrs, grad=grad, traits=(ACTIVATION,), doc=doc)
    if grad_body:
        elementwise_op(f"{type}_grad", (reads, "Out@GRAD"), grad_body, outputs=_GRAD_OUT,
                       attrs=attrs, out_like={"X@GRAD": reads}, traits=(NO_GRAD,))


unary("relu", lambda a, x: S.maximum(x, 0.0),
      lambda a, out, d: S.where(out > 0.0, d, 0.0), reads="Out")
unary("sigmoid", lambda a, x: 1.0 / (1.0 + S.exp(-x)),
      lambda a, out, d: d * out * (1.0 - out), reads="Out")
# Paddle 2's hardswish / hardsigmoid / swish / hardtanh ops (their op names and attributes)
unary("hard_swish",
      lambda a, x: x * S.minimum(S.maximum(x + a["offset"], 0.0), a["threshold"]) / a["scale"],
      lambda a, x, d: S.where(x + a["offset"] <= 0.0, 0.0, S.where(
          x + a["offset"] < a["threshold"], d * (2.0 * x + a["offset"]) / a["scale"], d)),
      attrs={"threshold": 6.0, "scale": 6.0, "offset": 3.0})
unary("hard_sigmoid", lambda a, x: S.minimum(S.maximum(a["slope"] * x + a["offset"], 0.0), 1.0),
      lambda a, out, d: S.where(out > 0.0, S.where(out < 1.0, d * a["slope"], 0.0), 0.0),
      reads="Out", attrs={"slope": 0.2, "offset": 0.5})
unary("swish", lambda a, x: x / (1.0 + S.exp(-x)),
      lambda a, x, d: d * (1.0 + S.exp(-x) + x * S.exp(-x)) / ((1.0 + S.exp(-x)) * (1.0 + S.exp(-x))))
unary("brelu", lambda a, x: S.minimum(S.maximum(x, a["t_min"]), a["t_max"]),
      lambda a, x, d: S.where(x > a["t_min"], S.where(x < a["t_max"], d, 0.0), 0.0),
      attrs={"t_min": 0.0, "t_max": 24.0})
# Paddle 2's other activations (op names and attributes as Paddle's activation_op)
def _softplus(x, beta, threshold):
    # log(1 + exp(b x)) / b, linear above the threshold (Paddle's), stable for large -x
    bx = beta * x
    return S.where(bx > threshold, x, (S.maximum(bx, 0.0) + S.log(1.0 + S.exp(-S.abs_(bx)))) / beta)


def _sigmoid(x):
    e = S.exp(-S.abs_(x))                           # no overflow on either side
    return S.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


def _mish_grad(a, x, d):
    t = S.tanh(_softplus(x, 1.0, a["threshold"]))
    dsp = S.where(x > a["threshold"], 1.0, _sigmoid(x))
    return d * (t + x * (1.0 - t * t) * dsp)


unary("elu", lambda a, x: S.where(x > 0.0, x, a["alpha"] * (S.exp(S.minimum(x, 0.0)) - 1.0)),
      lambda a, x, d: S.where(x > 0.0, d, d * a["alpha"] * S.exp(S.minimum(x, 0.0))),
      attrs={"alpha": 1.0})
unary("celu", lambda a, x: S.where(
    x > 0.0, x, a["alpha"] * (S.exp(S.minimum(x, 0.0) / a["alpha"]) - 1.0)),
    lambda a, x, d: S.where(x > 0.0, d, d * S.exp(S.minimum(x, 0.0) / a["alpha"])),
    attrs={"alpha": 1.0})
unary("selu", lambda a, x: a["scale"] * S.where(
    x > 0.0, x, a["alpha"] * (S.exp(S.minimum(x, 0.0)) - 1.0)),
    lambda a, x, d: d * a["scale"] * S.where(x > 0.0, 1.0, a["alpha"] * S.exp(S.minimum(x, 0.0))),
    attrs={"scale": 1.0507009873554805, "alpha": 1.6732632423543772})
unary("softplus", lambda a, x: _softplus(x, a["beta"], a["threshold"]),
      lambda a, x, d: S.where(a["beta"] * x > a["threshold"], d, d * _sigmoid(a["beta"] * x)),
      attrs={"beta": 1.0, "threshold": 20.0})
unary("softsign", lambda a, x: x / (1.0 + S.abs_(x)),
      lambda a, x, d: d / ((1.0 + S.abs_(x)) * (1.0 + S.abs_(x))))
unary("mish", lambda a, x: x * S.tanh(_softplus(x, 1.0, a["threshold"])), _mish_grad,
      attrs={"threshold": 20.0})
unary("logsigmoid", lambda a, x: S.minimum(x, 0.0) - S.log(1.0 + S.exp(-S.abs_(x))),
      lambda a, x, d: d * (1.0 - _sigmoid(x)))
unary("tanh_shrink", lambda a, x: x - S.tanh(x), lambda a, x, d: d * S.tanh(x) * S.tanh(x))
unary("softshrink", lambda a, x: S.where(x > a["lambda"], x - a["lambda"], S.where(
    x < -a["lambda"], x + a["lambda"], 0.0)),
    lambda a, x, d: S.where(S.abs_(x) > a["lambda"], d, 0.0), attrs={"lambda": 0.5})
unary("hard_shrink", lambda a, x: S.where(S.abs_(x) > a["threshold"], x, 0.0),
      lambda a, x, d: S.where(S.abs_(x) > a["threshold"], d, 0.0), attrs={"threshold": 0.5})
unary("thresholded_relu", lambda a, x: S.where(x > a["threshold"], x, 0.0),
      lambda a, x, d: S.where(x > a["threshold"], d, 0.0), attrs={"threshold": 1.0})


def _tanh(a, x):
    """tanh through exp: glibc's scalar tanhf is ~4x slower than its expf. Near 0, where
    (t - 1) / (t + 1) cancels, a Taylor series (error < 1e-13 relative) takes over."""
    t = S.exp(2.0 * S.minimum(S.maximum(x, -20.0), 20.0))
    x2 = x * x
    series = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))))
    return S.where(S.abs_(x) < 0.03, series, (t - 1.0) / (t + 1.0))


unary("tanh", _tanh, lambda a, out, d: d * (1.0 - out * out), reads="Out")
unary("exp", lambda a, x: S.exp(x), lambda a, out, d: d * out, reads="Out")
unary("sin", lambda a, x: S.sin(x), lambda a, x, d: d * S.cos(x))
unary("cos", lambda a, x: S.cos(x), lambda a, x, d: -d * S.sin(x))
unary("log", lambda a, x: S.log(x), lambda a, x, d: d / x)
unary("sqrt", lambda a, x: S.sqrt(x), lambda a, out, d: d * 0.5 / out, reads="Out")
unary("square", lambda a, x: x * x, lambda a, x, d: d * 2.0 * x)
unary("abs", lambda a, x: S.abs_(x), lambda a, x, d: d * S.sign(x))
unary("leaky_relu", lambda a, x: S.where(x > 0.0, x, a["alpha"] * x),
      lambda a, x, d: S.where(x > 0.0, d, a["alpha"] * d), attrs={"alpha": 0.02})

# Paddle's prelu: leaky_relu with a learned slope Alpha of shape [1] (mode 'all'), [C]
# ('channel': X's dim 1 for NCHW, its last for NHWC) or X's shape without the batch dim
# ('element'); Alpha@GRAD is summed down to Alpha's shape
_PRELU = {"mode": "all", "data_format": "NCHW"}


def _prelu_axis(a):
    return 1 if a["mode"] == "channel" and a["data_format"] == "NCHW" else -1


elementwise_op("prelu", ("X", "Alpha"), lambda a, x, w: S.where(x > 0.0, x, w * x),
               attrs=_PRELU, axis=_prelu_axis,
               grad=grad_rule("prelu_grad", ("X", "Alpha"), reads=("X", "Alpha")),
               doc="Out = X if X > 0 else Alpha * X (Alpha per mode: all, channel, element)")
elementwise_op("prelu_grad", ("X", "Alpha", "Out@GRAD"),
               lambda a, x, w, d: (S.where(x > 0.0, d, w * d), S.where(x > 0.0, 0.0, x * d)),
               outputs=(Slot("X@GRAD", optional=True), Slot("Alpha@GRAD", optional=True)),
               attrs=_PRELU, axis=_prelu_axis, out_like={"X@GRAD": "X", "Alpha@GRAD": "Alpha"},
               traits=(NO_GRAD,))
unary("pow", lambda a, x: x ** a["factor"],
      lambda a, x, d: d * a["factor"] * x ** (a["factor"] - 1.0), attrs={"factor": 1.0})
unary("clip", lambda a, x: S.minimum(S.maximum(x, a["min"]), a["max"]),
      lambda a, x, d: S.where(x > a["min"], S.where(x < a["max"], d, 0.0), 0.0),
      attrs={"min": -math.inf, "max": math.inf})

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu(a, x):
    if a["approximate"]:
        return 0.5 * x * (1.0 + S.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + S.erf(x / S.SQRT_2))


def _gelu_grad(a, x, d):
    if a["approximate"]:
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        t = S.tanh(inner)
        dinner = _SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x)
        return d * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dinner)
    return d * (0.5 * (1.0 + S.erf(x / S.SQRT_2)) + x * S.exp(-0.5 * x * x) * S.INV_SQRT_2PI)


unary("gelu", _gelu, _gelu_grad, attrs={"approximate": False})


# scale: Out = scale * X + bias (or scale * (X + bias)); its gradient is itself a scale.
# A ScaleTensor input (one element, Paddle's) takes the place of the `scale` attribute.
def _scale_body(a, x, s=None):
    k = a["scale"] if s is None else s
    if a["bias_after_scale"]:
        return x * k + a["bias"]
    return (x + a["bias"]) * k


def _scale_grad(g):
    st = g.fwd("ScaleTensor")
    g.append("scale", {"X": g.dout("Out"), **({"ScaleTensor": st} if st is not None else {})},
             {"Out": g.dx("X")},
             {"scale": g.attrs["scale"], "bias": 0.0, "bias_after_scale": True})


elementwise_op("scale", ("X", Slot("ScaleTensor", optional=True, no_grad=True)), _scale_body,
               grad=_scale_grad, attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True},
               doc="Out = s * X + bias (bias_after_scale) or s * (X + bias), s = ScaleTensor "
                   "(one element) when given, else the `scale` attribute")


# assign: a copy; cast: a copy into another dtype. Both differentiate to themselves.
def _assign_grad(g):
    g.append("assign", {"X": g.dout("Out")}, {"Out": g.dx("X")})


elementwise_op("assign", ("X",), lambda a, x: x, grad=_assign_grad)


def _cast_grad(g):
    g.append("cast", {"X": g.dout("Out")}, {"Out": g.dx("X")},
             {"in_dtype": g.attrs["out_dtype"], "out_dtype": g.attrs["in_dtype"]})


def _cast_body(a, x):
    return S.cast(x, a["out_dtype"])


elementwise_op("cast", ("X",), _cast_body, grad=_cast_grad,
               attrs={"in_dtype": "float32", "out_dtype": "float32"},
               dtype_rule=lambda a, dts: S.np.dtype(a["out_dtype"]))

# fill_any_like: a constant shaped like X (X's values are not read).
elementwise_op("fill_any_like", ("X",), lambda a, x: a["value"],
               attrs={"value": 0.0, "dtype": None}, traits=(NO_GRAD,),
               dtype_rule=lambda a, dts: S.np.dtype(a["dtype"]) if a["dtype"] else dts[0])


# ---------------------------------------------------------------- math functions, silu, relu6
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
unary("rsqrt", lambda a, x: 1.0 / S.sqrt(x),
      lambda a, out, d: -0.5 * d * out * out * out, reads="Out")
unary("erf", lambda a, x: S.erf(x), lambda a, x, d: d * _TWO_OVER_SQRT_PI * S.exp(-x * x))

unary("silu", lambda a, x: x * _sigmoid(x),
      lambda a, x, d: d * _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))))
unary("sign", lambda a, x: S.sign(x))       # no gradient (0 almost everywhere)
unary("relu6", lambda a, x: S.minimum(S.maximum(x, 0.0), a["threshold"]),
      lambda a, x, d: S.where(x > 0.0, S.where(x < a["threshold"], d, 0.0), 0.0),
      attrs={"threshold": 6.0})
