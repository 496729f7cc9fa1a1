"""Convolution layers over the functional ops, with Paddle 2.6's parameters: `weight`
[out, in / groups, *k] (transposed: [in, out / groups, *k]) = `conv2d_N.w_0`, `bias` =
`conv2d_N.b_0`; a plain convolution's weight starts N(0, sqrt(2 / (prod(k) * in))) as in
Paddle, a transposed one's XavierUniform."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import functional as F
from ...param_init import Normal
from .common import check_width
from .layers import Layer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...graph.program import Variable

__all__ = ["Conv2D", "Conv3D"] + [n for n, fn in (("Conv1D", "conv1d"),
                                        ("Conv2DTranspose", "conv2d_transpose"),
                                        ("Conv1DTranspose", "conv1d_transpose"))
                        if hasattr(F, fn)]

IntOrList = Any


class _ConvNd(Layer):
    """Paddle's _ConvNd: the parameters, the channel check and the functional call."""

    _dims, _transposed, _fn = 2, False, "conv2d"

    def _setup(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
               padding_mode, weight_attr, bias_attr, data_format, output_padding=0):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: padding_mode={padding_mode!r} is not "
                                      f"supported; use 'zeros' (or pad first with F.pad)")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        self._in_channels, self._out_channels = in_channels, out_channels
        k = kernel_size
        self._kernel_size = [int(k)] * self._dims if isinstance(k, (int, np.integer)) \
            else [int(d) for d in k]
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = groups, data_format
        self._output_padding = output_padding
        if self._transposed:
            shape, init = [in_channels, out_channels // groups] + self._kernel_size, None
        else:
            std = (2.0 / (np.prod(self._kernel_size) * in_channels)) ** 0.5
            shape = [out_channels, in_channels // groups] + self._kernel_size
            init = Normal(0.0, float(std))
        self.weight = self.create_parameter(shape, weight_attr, default_initializer=init)
        self.bias = self.create_parameter([out_channels], bias_attr, is_bias=True)

    def forward(self, x: Variable, output_size: IntOrList = None) -> Variable:
        """The convolution of x.

        Args:
            x (Variable): (N, C, *spatial) (or channels-last per data_format).
            output_size (int or list, optional): a transposed convolution's output size.

        Returns:
            Variable: (N, out_channels, *spatial').
        """
        axis = 1 if self._data_format.startswith("NC") else self._dims + 1
        check_width(self, x, x.shape[axis] if x.ndim == self._dims + 2 else -1,
                    self._in_channels, f"channel dim {axis}")
        fn = getattr(F, self._fn)
        if not self._transposed:
            return fn(x, self.weight, self.bias, self._stride, self._padding, self._dilation,
                      self._groups, self._data_format)
        return fn(x, self.weight, self.bias, stride=self._stride, padding=self._padding,
                  output_padding=self._output_padding, dilation=self._dilation,
                  groups=self._groups, output_size=output_size, data_format=self._data_format)

    def extra_repr(self) -> str:
        """The channels, kernel size and stride.

        Returns:
            str: e.g. '3, 8, kernel_size=[3, 3]'.
        """
        return (f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}"
                + (f", stride={self._stride}" if self._stride != 1 else "")
                + (f", padding={self._padding}" if self._padding != 0 else ""))


class Conv2D(_ConvNd):
    """2-D convolution (F.conv2d) with weight [out_channels, in_channels / groups, kh, kw]
    and bias.

    Args:
        in_channels (int): the input's channels.
        out_channels (int): the output's channels.
        kernel_size (int or list of 2 int): the window.
        stride (int or list of 2 int): the step.
        padding (int, str or list): as in F.conv2d ('SAME', 'VALID', ints).
        dilation (int or list of 2 int): the dilation.
        groups (int): channel groups.
        padding_mode (str): 'zeros'.
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

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrList,
                 stride: IntOrList = 1, padding: IntOrList = 0, dilation: IntOrList = 1,
                 groups: int = 1, padding_mode: str = "zeros", weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW") -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    padding_mode, weight_attr, bias_attr, data_format)


class Conv1D(_ConvNd):
    """1-D convolution (F.conv1d) with weight [out_channels, in_channels / groups, k].

    Args:
        in_channels (int): the input's channels.
        out_channels (int): the output's channels.
        kernel_size (int): the window.
        stride (int): the step.
        padding (int, str or list): as in F.conv1d.
        dilation (int): the dilation.
        groups (int): channel groups.
        padding_mode (str): 'zeros'.
        weight_attr (ParamAttr, optional): the weight's name / initializer.
        bias_attr (ParamAttr or False, optional): the bias's; False: no bias.
        data_format (str): 'NCL' or 'NLC'.

    Example:
        >>> conv = paddle.nn.Conv1D(4, 6, 3, padding=1)
        >>> conv(static.data('seq', [None, 4, 10])).shape
        (-1, 6, 10)
    """

    _dims, _fn = 1, "conv1d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrList,
                 stride: IntOrList = 1, padding: IntOrList = 0, dilation: IntOrList = 1,
                 groups: int = 1, padding_mode: str = "zeros", weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCL") -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    padding_mode, weight_attr, bias_attr, data_format)


class Conv2DTranspose(_ConvNd):
    """2-D transposed convolution (F.conv2d_transpose) with weight
    [in_channels, out_channels / groups, kh, kw].

    Args:
        in_channels (int): the input's channels.
        out_channels (int): the output's channels.
        kernel_size (int or list of 2 int): the window.
        stride (int or list of 2 int): the step.
        padding (int, str or list): as in F.conv2d_transpose.
        output_padding (int or list): added to one side of the output.
        groups (int): channel groups.
        dilation (int or list of 2 int): the dilation.
        weight_attr (ParamAttr, optional): the weight's name / initializer.
        bias_attr (ParamAttr or False, optional): the bias's; False: no bias.
        data_format (str): 'NCHW' or 'NHWC'.

    Example:
        >>> up = paddle.nn.Conv2DTranspose(4, 2, 2, stride=2)
        >>> up(static.data('x', [None, 4, 5, 5])).shape
        (-1, 2, 10, 10)
    """

    _transposed, _fn = True, "conv2d_transpose"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrList,
                 stride: IntOrList = 1, padding: IntOrList = 0, output_padding: IntOrList = 0,
                 groups: int = 1, dilation: IntOrList = 1, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW") -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    "zeros", weight_attr, bias_attr, data_format, output_padding)


class Conv1DTranspose(_ConvNd):
    """1-D transposed convolution (F.conv1d_transpose) with weight
    [in_channels, out_channels / groups, k].

    Args:
        in_channels (int): the input's channels.
        out_channels (int): the output's channels.
        kernel_size (int): the window.
        stride (int): the step.
        padding (int, str or list): as in F.conv1d_transpose.
        output_padding (int): added to one side of the output.
        groups (int): channel groups.
        dilation (int): the dilation.
        weight_attr (ParamAttr, optional): the weight's name / initializer.
        bias_attr (ParamAttr or False, optional): the bias's; False: no bias.
        data_format (str): 'NCL' or 'NLC'.

    Example:
        >>> up = paddle.nn.Conv1DTranspose(4, 2, 2, stride=2)
        >>> up(static.data('x', [None, 4, 5])).shape
        (-1, 2, 10)
    """

    _dims, _transposed, _fn = 1, True, "conv1d_transpose"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrList,
                 stride: IntOrList = 1, padding: IntOrList = 0, output_padding: IntOrList = 0,
                 groups: int = 1, dilation: IntOrList = 1, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCL") -> None:
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    "zeros", weight_attr, bias_attr, data_format, output_padding)


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
