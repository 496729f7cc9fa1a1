"""Conv2D and the 2-D pooling layers over the functional ops (Paddle 2.6's parameters:
Conv2D's `weight` [out, in / groups, kh, kw] = `conv2d_N.w_0`, `bias` = `conv2d_N.b_0`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import functional as F
from ..initializer import Normal
from .common import check_width
from .layers import Layer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...graph.program import Variable

__all__ = ["Conv2D", "MaxPool2D", "AvgPool2D", "AdaptiveAvgPool2D"]


def _pair(v):
    return [int(v)] * 2 if isinstance(v, (int, np.integer)) else [int(d) for d in v]


class Conv2D(Layer):
    """2-D convolution (F.conv2d) with weight [out_channels, in_channels / groups, kh, kw],
    initialised N(0, sqrt(2 / (kh * kw * in_channels))) as in Paddle, and bias.

    Args:
        in_channels (int): the input's channels.
        out_channels (int): the output's channels.
        kernel_size (int or list of 2 int): the window.
        stride (int or list of 2 int): the step.
        padding (int, str or list): as in F.conv2d ('SAME', 'VALID', ints).
        dilation (int or list of 2 int): the dilation.
        groups (int): channel groups.
        padding_mode (str): 'zeros' (other modes need F.pad's).
        weight_attr (ParamAttr, optional): the weight's name / initializer.
        bias_attr (ParamAttr or False, optional): the bias's; False: no bias.
        data_format (str): 'NCHW' or 'NHWC'.

    Example:
        >>> conv = paddle.nn.Conv2D(3, 8, 3, padding=1)
        >>> conv(static.data('img', [None, 3, 8, 8])).shape
        (-1, 8, 8, 8)
        >>> conv.weight.name, conv.weight.shape
        ('conv2d_0.w_0', (8, 3, 3, 3))
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
                 dilation: int | Sequence[int] = 1, groups: int = 1,
                 padding_mode: str = "zeros", weight_attr: Any = None, bias_attr: Any = None,
                 data_format: str = "NCHW") -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2D: padding_mode={padding_mode!r} is not supported "
                                      f"(F.pad pads with a constant); use 'zeros'")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        self._in_channels, self._out_channels = in_channels, out_channels
        self._kernel_size = _pair(kernel_size)
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = groups, data_format
        std = (2.0 / (np.prod(self._kernel_size) * in_channels)) ** 0.5
        self.weight = self.create_parameter(
            [out_channels, in_channels // groups] + self._kernel_size, weight_attr,
            default_initializer=Normal(0.0, float(std)))
        self.bias = self.create_parameter([out_channels], bias_attr, is_bias=True)

    def forward(self, x: Variable) -> Variable:
        """The convolution of x.

        Args:
            x (Variable): (N, C, H, W) (or NHWC).

        Returns:
            Variable: (N, out_channels, H', W').
        """
        axis = 1 if self._data_format == "NCHW" else 3
        check_width(self, x, x.shape[axis] if x.ndim == 4 else -1, self._in_channels,
                    f"channel dim {axis}")
        return F.conv2d(x, self.weight, self.bias, self._stride, self._padding, self._dilation,
                        self._groups, self._data_format)

    def extra_repr(self) -> str:
        """The channels, kernel size and stride.

        Returns:
            str: e.g. '3, 8, kernel_size=[3, 3]'.
        """
        return (f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}"
                + (f", stride={self._stride}" if self._stride != 1 else "")
                + (f", padding={self._padding}" if self._padding != 0 else ""))


class MaxPool2D(Layer):
    """F.max_pool2d as a layer.

    Args:
        kernel_size (int or list of 2 int): the window.
        stride (int or list, optional): default kernel_size.
        padding (int, str or list): as in F.max_pool2d.
        return_mask (bool): False only.
        ceil_mode (bool): round the output size up.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.MaxPool2D(2)(static.data('x', [None, 3, 8, 8])).shape
        (-1, 3, 4, 4)
    """

    def __init__(self, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 padding: int | str | Sequence[int] = 0, return_mask: bool = False,
                 ceil_mode: bool = False, data_format: str = "NCHW",
                 name: str | None = None) -> None:
        super().__init__()
        self._args = dict(kernel_size=kernel_size, stride=stride, padding=padding,
                          ceil_mode=ceil_mode, return_mask=return_mask,
                          data_format=data_format, name=name)

    def forward(self, x: Variable) -> Variable:
        """The max pooling of x.

        Args:
            x (Variable): 4-D.

        Returns:
            Variable: the pooled x.
        """
        return F.max_pool2d(x, **self._args)

    def extra_repr(self) -> str:
        """The pooling arguments.

        Returns:
            str: e.g. 'kernel_size=2, stride=None, padding=0'.
        """
        return ", ".join(f"{k}={v}" for k, v in list(self._args.items())[:3])


class AvgPool2D(MaxPool2D):
    """F.avg_pool2d as a layer.

    Args:
        kernel_size (int or list of 2 int): the window.
        stride (int or list, optional): default kernel_size.
        padding (int, str or list): as in F.avg_pool2d.
        ceil_mode (bool): round the output size up.
        exclusive (bool): average over the unpadded elements only.
        divisor_override (None): None only.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.AvgPool2D(2, stride=2)(static.data('x', [None, 3, 8, 8])).shape
        (-1, 3, 4, 4)
    """

    def __init__(self, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 padding: int | str | Sequence[int] = 0, ceil_mode: bool = False,
                 exclusive: bool = True, divisor_override: None = None,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        Layer.__init__(self)
        self._args = dict(kernel_size=kernel_size, stride=stride, padding=padding,
                          ceil_mode=ceil_mode, exclusive=exclusive,
                          divisor_override=divisor_override, data_format=data_format, name=name)

    def forward(self, x: Variable) -> Variable:
        """The average pooling of x.

        Args:
            x (Variable): 4-D.

        Returns:
            Variable: the pooled x.
        """
        return F.avg_pool2d(x, **self._args)


class AdaptiveAvgPool2D(Layer):
    """F.adaptive_avg_pool2d as a layer (Paddle's adaptive bins).

    Args:
        output_size (int or list of 2 int): the output's H, W.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.AdaptiveAvgPool2D(1)(static.data('x', [None, 3, 8, 8])).shape
        (-1, 3, 1, 1)
    """

    def __init__(self, output_size: int | Sequence[int], data_format: str = "NCHW",
                 name: str | None = None) -> None:
        super().__init__()
        self._output_size, self._data_format, self._name = output_size, data_format, name

    def forward(self, x: Variable) -> Variable:
        """The adaptive average pooling of x.

        Args:
            x (Variable): 4-D.

        Returns:
            Variable: (N, C, *output_size) (or NHWC).
        """
        return F.adaptive_avg_pool2d(x, self._output_size, self._data_format, name=self._name)

    def extra_repr(self) -> str:
        """The output size.

        Returns:
            str: e.g. 'output_size=1'.
        """
        return f"output_size={self._output_size}"
