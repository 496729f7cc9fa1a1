"""Activation layers, generated from one table: each is a thin Layer over its
`paddle.nn.functional` op (no math of its own). A row whose functional op this tree does
not have yet is skipped (it then raises numbaflow.nn's missing-name error).
"""
from __future__ import annotations

from typing import Any

from .. import functional as F
from ...graph.program import Variable  # noqa: F401  (the generated annotations name it)
from ..initializer import Constant
from .layers import Layer

# (class, functional, extra constructor arguments as Python source, Paddle's order)
ACTIVATIONS = [
    ("ReLU", "relu", ""),
    ("ReLU6", "relu6", ""),
    ("Sigmoid", "sigmoid", ""),
    ("Tanh", "tanh", ""),
    ("GELU", "gelu", "approximate: bool = False"),
    ("LeakyReLU", "leaky_relu", "negative_slope: float = 0.01"),
    ("Softmax", "softmax", "axis: int = -1"),
    ("LogSoftmax", "log_softmax", "axis: int = -1"),
    ("Silu", "silu", ""),
    ("ELU", "elu", "alpha: float = 1.0"),
    ("CELU", "celu", "alpha: float = 1.0"),
    ("SELU", "selu", "scale: float = 1.0507009873554804934193349852946, "
                     "alpha: float = 1.6732632423543772848170429916717"),
    ("Hardswish", "hardswish", ""),
    ("Hardsigmoid", "hardsigmoid", ""),
    ("Hardtanh", "hardtanh", "min: float = -1.0, max: float = 1.0"),
    ("Softplus", "softplus", "beta: float = 1, threshold: float = 20"),
    ("Softsign", "softsign", ""),
    ("Mish", "mish", ""),
    ("LogSigmoid", "log_sigmoid", ""),
    ("Tanhshrink", "tanhshrink", ""),
    ("Softshrink", "softshrink", "threshold: float = 0.5"),
    ("Hardshrink", "hardshrink", "threshold: float = 0.5"),
    ("ThresholdedReLU", "thresholded_relu", "threshold: float = 1.0"),
    ("GLU", "glu", "axis: int = -1"),
    ("Maxout", "maxout", "groups: int, axis: int = 1"),
]
# Paddle's swish is x * sigmoid(x), the same op as silu
ALIASES = {"Swish": "Silu"}

_TEMPLATE = '''
def __init__(self{sig}, name: str | None = None) -> None:
    Layer.__init__(self)
    {store}self._name = name

def forward(self, {inputs}) -> Variable:
    return F.{fn}({args}{call}, name=self._name)

def extra_repr(self) -> str:
    return ", ".join(f"{{k}}={{getattr(self, '_' + k)!r}}" for k in {names!r})
'''


def _doc(cls, fn, args):
    lines = "".join(f"        {a.split(':')[0].strip()} ({a.split(':')[1].split('=')[0].strip()})"
                    f": as in F.{fn}.\n" for a in args)
    return (f"The layer of `paddle.nn.functional.{fn}` (no parameters).\n\n"
            f"    Args:\n{lines}        name (str, optional): a prefix for the output's name.\n\n"
            f"    Example:\n        >>> act = paddle.nn.{cls}()\n"
            f"        >>> act(static.data('x', [None, 3])).shape\n        (-1, 3)\n")


def make_layer(cls, fn, sig, inputs=("x",), doc=None):
    """A Layer class `cls` whose forward is F.`fn`(*inputs, <its constructor arguments>)."""
    args = [a.strip() for a in sig.split(",") if a.strip()]
    names = [a.split(":")[0].strip() for a in args]
    src = _TEMPLATE.format(sig="".join(", " + a for a in args), fn=fn, names=names,
                           store="".join(f"self._{n} = {n}\n    " for n in names),
                           call="".join(f", {n}=self._{n}" for n in names),
                           inputs=", ".join(f"{i}: Variable" for i in inputs),
                           args=", ".join(inputs))
    ns = {}
    exec(compile(src, f"<nn.{cls}>", "exec", dont_inherit=False), globals(), ns)  # noqa: S102
    ns["forward"].__doc__ = (f"F.{fn}({', '.join(inputs)}) with this layer's arguments.\n\n"
                             f"        Args:\n" + "".join(f"            {i} (Variable): as in "
                                                       f"F.{fn}.\n" for i in inputs) +
                             "\n        Returns:\n            Variable: F." + fn + "'s output.\n")
    ns["extra_repr"].__doc__ = ("The arguments repr() shows.\n\n        Returns:\n"
                                "            str: e.g. 'axis=-1'.\n        ")
    for f in ns.values():
        f.__qualname__ = f"{cls}.{f.__name__}"
    ns["__init__"].__doc__ = None
    return type(cls, (Layer,), {"__module__": __name__, "__doc__": doc or _doc(cls, fn, args), **ns})


__all__ = []
for _cls, _fn, _sig in ACTIVATIONS:
    if hasattr(F, _fn):
        _args = [a.strip() for a in _sig.split(",") if a.strip()]
        _d = _doc(_cls, _fn, _args)
        if _cls == "GLU":       # halves the last dim
            _d = _d.replace("[None, 3]", "[None, 4]").replace("(-1, 3)", "(-1, 2)")
        if _cls == "Maxout":    # 4-D, groups of channels
            _d = _d.replace("Maxout()", "Maxout(groups=2)").replace(
                "[None, 3]", "[None, 4, 2, 2]").replace("(-1, 3)", "(-1, 2, 2, 2)")
        globals()[_cls] = make_layer(_cls, _fn, _sig, doc=_d)
        __all__.append(_cls)
for _alias, _target in ALIASES.items():
    if _target in globals():
        globals()[_alias] = type(_alias, (globals()[_target],), {
            "__module__": __name__,
            "__doc__": globals()[_target].__doc__.replace(f"nn.{_target}()", f"nn.{_alias}()")})
        __all__.append(_alias)


class PReLU(Layer):
    """F.prelu with a learned slope: `num_parameters` values (1, or the channel count),
    `init` each (parameter `p_re_lu_N.w_0`, state key `_weight`, as Paddle).

    Args:
        num_parameters (int): 1 (one slope) or x's channel count.
        init (float): the slopes' initial value.
        weight_attr (ParamAttr, optional): the slope parameter's name / initializer.
        data_format (str): where x's channel dim is, as in F.prelu.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> act = paddle.nn.PReLU(3)
        >>> act(static.data('x', [None, 3, 4, 4])).shape
        (-1, 3, 4, 4)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, weight_attr: Any = None,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self._num_parameters, self._init = num_parameters, init
        self._data_format, self._name = data_format, name
        self._weight = self.create_parameter([num_parameters], weight_attr,
                                             default_initializer=Constant(init))

    def forward(self, x: Variable) -> Variable:
        """F.prelu(x, the slopes).

        Args:
            x (Variable): the input.

        Returns:
            Variable: x's shape.
        """
        return F.prelu(x, self._weight, data_format=self._data_format, name=self._name)

    def extra_repr(self) -> str:
        """The arguments repr() shows.

        Returns:
            str: e.g. 'num_parameters=3, data_format=NCHW, init=0.25'.
        """
        return (f"num_parameters={self._num_parameters}, data_format={self._data_format}, "
                f"init={self._init}")


__all__.append("PReLU")


class RReLU(make_layer("RReLU", "rrelu", "lower: float = 0.125, upper: float = 1.0 / 3.0")):
    """F.rrelu as a layer: random slopes in [lower, upper) in training, their mean
    (lower + upper) / 2 after `eval()` (no parameters).

    Args:
        lower (float): the least slope, as in F.rrelu.
        upper (float): the greatest slope, as in F.rrelu.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> act = paddle.nn.RReLU(0.1, 0.3)
        >>> act(static.data('x', [None, 3])).shape
        (-1, 3)
    """

    def forward(self, x: Variable) -> Variable:
        """F.rrelu(x, lower, upper, training=self.training).

        Args:
            x (Variable): the input.

        Returns:
            Variable: x's shape.
        """
        return F.rrelu(x, self._lower, self._upper, training=self.training, name=self._name)


__all__.append("RReLU")
