"""The 3-D (volumetric) layers: Conv3D (conv.py's _ConvNd with three spatial dims: weight
[out, in / groups, kd, kh, kw] = `conv3d_N.w_0`, N(0, sqrt(2 / (kd kh kw in))) as in
Paddle) and the pooling layers, generated from a table over nn/functional_3d.py."""
from __future__ import annotations

from typing import Any

from .activation import make_layer
from .conv import _ConvNd

__all__ = ["Conv3D"]


class Conv3D(_ConvNd):
    """3-D convolution (F.conv3d) with weight [out_channels, in_channels / groups, kd, kh,
    kw] and bias.

    Args:
        in_channels (int): the input's channels.
        out_channels (int): the output's channels.
        kernel_size (int or list of 3 int): the window.
        stride (int or list of 3 int): the step.
        padding (int, str or list): as in F.conv3d ('SAME', 'VALID', ints).
        dilation (int or list of 3 int): the dilation.
        groups (int): channel groups.
        padding_mode (str): 'zeros'.
        weight_attr (ParamAttr, optional): the weight's name / initializer.
        bias_attr (ParamAttr or False, optional): the bias's; False: no bias.
        data_format (str): 'NCDHW' or 'NDHWC'.

    Example:
        >>> conv = paddle.nn.Conv3D(3, 8, 3, padding=1)
        >>> conv(static.data('vol', [None, 3, 4, 8, 8])).shape
        (-1, 8, 4, 8, 8)
        >>> conv.weight.name, conv.weight.shape
        ('conv3d_0.w_0', (8, 3, 3, 3, 3))
    """

    _dims, _fn = 3, "conv3d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
                 padding_mode: str = "zeros", weight_attr: Any = None, bias_attr: Any = None,
                 data_format: str = "NCDHW") -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    padding_mode, weight_attr, bias_attr, data_format)


_SIZES = "kernel_size: int | list, stride: int | list | None = None, padding: int | str | list = 0"
# (class, functional, constructor arguments in Paddle's order, the example's layer, its shape)
POOLS_3D = [
    ("MaxPool3D", "max_pool3d", _SIZES + ", return_mask: bool = False, ceil_mode: bool = False, "
     "data_format: str = 'NCDHW'", "MaxPool3D(2)", "(-1, 3, 2, 4, 4)"),
    ("AvgPool3D", "avg_pool3d", _SIZES + ", ceil_mode: bool = False, exclusive: bool = True, "
     "divisor_override: None = None, data_format: str = 'NCDHW'", "AvgPool3D(2, stride=2)",
     "(-1, 3, 2, 4, 4)"),
    ("AdaptiveAvgPool3D", "adaptive_avg_pool3d", "output_size: int | list, "
     "data_format: str = 'NCDHW'", "AdaptiveAvgPool3D(1)", "(-1, 3, 1, 1, 1)"),
    ("AdaptiveMaxPool3D", "adaptive_max_pool3d", "output_size: int | list, "
     "return_mask: bool = False", "AdaptiveMaxPool3D([2, 3, 3])", "(-1, 3, 2, 3, 3)"),
]


def _doc(cls, fn, sig, example, shape):
    args = "".join(f"        {a.split(':')[0].strip()}: as in F.{fn}.\n"
                   for a in sig.split(", ") if ":" in a)
    return (f"F.{fn} as a layer (no parameters).\n\n    Args:\n{args}"
            f"        name (str, optional): a prefix for the output's name.\n\n"
            f"    Example:\n        >>> pool = paddle.nn.{example}\n"
            f"        >>> pool(static.data('vol', [None, 3, 4, 8, 8])).shape\n        {shape}\n")


for _cls, _fn, _sig, _example, _shape in POOLS_3D:
    globals()[_cls] = make_layer(_cls, _fn, _sig, doc=_doc(_cls, _fn, _sig, _example, _shape))
    globals()[_cls].__module__ = __name__
    __all__.append(_cls)
