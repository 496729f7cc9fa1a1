"""The pooling layers over the functional pooling ops (no parameters)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import functional as F
from .activation import make_layer
from .layers import Layer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...graph.program import Variable

__all__ = ["MaxPool2D", "AvgPool2D", "AdaptiveAvgPool2D"]


class MaxPool2D(Layer):
    """F.max_pool2d as a layer.

    Args:
        kernel_size (int or list of 2 int): the window.
        stride (int or list, optional): default kernel_size.
        padding (int, str or list): as in F.max_pool2d.
        return_mask (bool): also return the int32 indices of the maxima.
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


class AdaptiveMaxPool2D(Layer):
    """F.adaptive_max_pool2d as a layer (Paddle's adaptive bins).

    Args:
        output_size (int or list of 2 int): the output's H, W.
        return_mask (bool): also return the int32 indices of the maxima.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.AdaptiveMaxPool2D(2)(static.data('x', [None, 3, 7, 7])).shape
        (-1, 3, 2, 2)
    """

    _fn = "adaptive_max_pool2d"

    def __init__(self, output_size: int | Sequence[int], return_mask: bool = False,
                 name: str | None = None) -> None:
        super().__init__()
        self._output_size, self._return_mask, self._name = output_size, return_mask, name

    def forward(self, x: Variable) -> Variable:
        """The adaptive pooling of x.

        Args:
            x (Variable): (N, C, *spatial).

        Returns:
            Variable: (N, C, *output_size).
        """
        return getattr(F, self._fn)(x, self._output_size, self._return_mask, name=self._name)

    def extra_repr(self) -> str:
        """The output size.

        Returns:
            str: e.g. 'output_size=2'.
        """
        return f"output_size={self._output_size}"


class AdaptiveMaxPool1D(AdaptiveMaxPool2D):
    """F.adaptive_max_pool1d as a layer.

    Args:
        output_size (int): the output's length.
        return_mask (bool): also return the int32 indices of the maxima.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.AdaptiveMaxPool1D(4)(static.data('x', [None, 3, 9])).shape
        (-1, 3, 4)
    """

    _fn = "adaptive_max_pool1d"


class AdaptiveAvgPool1D(AdaptiveMaxPool2D):
    """F.adaptive_avg_pool1d as a layer.

    Args:
        output_size (int): the output's length.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.AdaptiveAvgPool1D(4)(static.data('x', [None, 3, 9])).shape
        (-1, 3, 4)
    """

    def __init__(self, output_size: int, name: str | None = None) -> None:
        super().__init__(output_size, False, name)

    def forward(self, x: Variable) -> Variable:
        """The adaptive average pooling of x.

        Args:
            x (Variable): (N, C, L).

        Returns:
            Variable: (N, C, output_size).
        """
        return F.adaptive_avg_pool1d(x, self._output_size, name=self._name)


for _cls, _fn in (("AdaptiveMaxPool2D", "adaptive_max_pool2d"),
                  ("AdaptiveMaxPool1D", "adaptive_max_pool1d"),
                  ("AdaptiveAvgPool1D", "adaptive_avg_pool1d")):
    if hasattr(F, _fn):
        __all__.append(_cls)


def _pool1d_doc(cls, fn, extra):
    return (f"F.{fn} as a layer.\n\n    Args:\n"
            f"        kernel_size (int): the window.\n"
            f"        stride (int, optional): default kernel_size.\n"
            f"        padding (int, [left, right] or str): as in F.{fn}.\n{extra}"
            f"        ceil_mode (bool): round the output length up.\n"
            f"        name (str, optional): a prefix for the output's name.\n\n"
            f"    Example:\n        >>> paddle.nn.{cls}(2)(static.data('x', [None, 3, 8])).shape\n"
            f"        (-1, 3, 4)\n")


# (class, functional, constructor arguments in Paddle's order, doc lines of the extra one)
POOLS_1D = [
    ("MaxPool1D", "max_pool1d", "kernel_size: int, stride: int | None = None, "
     "padding: int = 0, return_mask: bool = False, ceil_mode: bool = False",
     "        return_mask (bool): also return the int32 indices of the maxima.\n"),
    ("AvgPool1D", "avg_pool1d", "kernel_size: int, stride: int | None = None, "
     "padding: int = 0, exclusive: bool = True, ceil_mode: bool = False",
     "        exclusive (bool): average over the unpadded elements only.\n"),
]
for _cls, _fn, _sig, _extra in POOLS_1D:
    globals()[_cls] = make_layer(_cls, _fn, _sig, doc=_pool1d_doc(_cls, _fn, _extra))
    globals()[_cls].__module__ = __name__
    __all__.append(_cls)
