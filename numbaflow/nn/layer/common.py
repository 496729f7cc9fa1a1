"""Linear, Embedding, Dropout, Flatten, Identity, Pad2D: thin Layers over the functional
ops, with Paddle 2.6's parameter names and attributes (`weight`, `bias`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import tensor as M
from .. import functional as F
from ...tensor.generator import shared_doc as _shared_doc
from .layers import Layer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...graph.program import Variable

__all__ = ["Linear", "Embedding", "Dropout", "Dropout2D", "Dropout3D", "Flatten", "Identity", "Pad1D", "Pad2D", "Pad3D",
           "ZeroPad2D"]


def check_width(layer, x, got, want, what):
    """Raise, naming the layer and both sizes, when an input's `what` is not `want`."""
    if got >= 0 and got != want:
        raise ValueError(f"{layer.full_name()} ({type(layer).__name__}({layer.extra_repr()})): "
                         f"input {x.name} has shape {tuple(x.shape)}, its {what} {got} is not "
                         f"the layer's {want}; build the layer with {got}, or reshape the input")


class Linear(Layer):
    """y = x @ weight + bias, weight [in_features, out_features] (`linear_N.w_0`), bias
    [out_features] (`linear_N.b_0`).

    Args:
        in_features (int): the input's last dim.
        out_features (int): the output's last dim.
        weight_attr (ParamAttr, optional): the weight's name / initializer (Xavier).
        bias_attr (ParamAttr or False, optional): the bias's; False: no bias.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> fc = paddle.nn.Linear(4, 2)
        >>> fc(static.data('x', [None, 4])).shape
        (-1, 2)
        >>> fc.weight.name, fc.bias.shape
        ('linear_0.w_0', (2,))
    """

    def __init__(self, in_features: int, out_features: int, weight_attr: Any = None,
                 bias_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self.weight = self.create_parameter([in_features, out_features], weight_attr)
        self.bias = self.create_parameter([out_features], bias_attr, is_bias=True)
        self.name = name

    def forward(self, input: Variable) -> Variable:
        """input @ weight + bias.

        Args:
            input (Variable): [..., in_features].

        Returns:
            Variable: [..., out_features].
        """
        check_width(self, input, input.shape[-1], self.weight.shape[0], "last dim")
        return F.linear(input, self.weight, self.bias, name=self.name)

    def extra_repr(self) -> str:
        """in_features, out_features and dtype.

        Returns:
            str: e.g. 'in_features=4, out_features=2, dtype=float32'.
        """
        return (f"in_features={self.weight.shape[0]}, out_features={self.weight.shape[1]}, "
                f"dtype={self._dtype}")


class Embedding(Layer):
    """Rows of weight [num_embeddings, embedding_dim] (`embedding_N.w_0`) picked by ids.

    Args:
        num_embeddings (int): the vocabulary size.
        embedding_dim (int): the row size.
        padding_idx (int, optional): this id gives a zero row and no gradient.
        sparse (bool): accepted (dense gradient).
        weight_attr (ParamAttr, optional): the weight's name / initializer.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> emb = paddle.nn.Embedding(10, 3)
        >>> emb(static.data('ids', [None, 5], 'int64')).shape
        (-1, 5, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 sparse: bool = False, weight_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self._num_embeddings, self._embedding_dim = num_embeddings, embedding_dim
        self._padding_idx, self._sparse, self._name = padding_idx, sparse, name
        self.weight = self.create_parameter([num_embeddings, embedding_dim], weight_attr)

    def forward(self, x: Variable) -> Variable:
        """The rows of weight for the ids x.

        Args:
            x (Variable): int ids.

        Returns:
            Variable: x.shape + [embedding_dim].
        """
        return F.embedding(x, self.weight, padding_idx=self._padding_idx, sparse=self._sparse,
                           name=self._name)

    def extra_repr(self) -> str:
        """num_embeddings and embedding_dim.

        Returns:
            str: e.g. '10, 3'.
        """
        return f"{self._num_embeddings}, {self._embedding_dim}"


class Dropout(Layer):
    """F.dropout with the layer's mode: active after train(), the identity (or the
    downscale of mode='downgrade_in_infer') when called after eval().

    Args:
        p (float): the probability of zeroing an element.
        axis (None): accepted (None only).
        mode (str): 'upscale_in_train' or 'downgrade_in_infer'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> drop = paddle.nn.Dropout(0.5)
        >>> drop(static.data('x', [None, 3])).shape
        (-1, 3)
    """

    def __init__(self, p: float = 0.5, axis: None = None, mode: str = "upscale_in_train",
                 name: str | None = None) -> None:
        super().__init__()
        self.p, self.axis, self.mode, self.name = p, axis, mode, name

    def forward(self, input: Variable) -> Variable:
        """Dropout in training, its inference op after eval().

        Args:
            input (Variable): the input.

        Returns:
            Variable: input's shape.
        """
        return F.dropout(input, p=self.p, axis=self.axis, training=self.training,
                         mode=self.mode, name=self.name)

    def extra_repr(self) -> str:
        """p and mode.

        Returns:
            str: e.g. 'p=0.5, mode=upscale_in_train'.
        """
        return f"p={self.p}, axis={self.axis}, mode={self.mode}"



class Dropout2D(Layer):
    """F.dropout2d (whole channels) as a layer: active after train(), the identity after
    eval().

    Args:
        p (float): the probability of zeroing a channel.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.Dropout2D(0.5)(static.data('x', [None, 3, 4, 4])).shape
        (-1, 3, 4, 4)
    """

    _fn, _format = "dropout2d", "NCHW"

    def __init__(self, p: float = 0.5, data_format: str | None = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.p, self.data_format, self.name = p, data_format or self._format, name

    def forward(self, input: Variable) -> Variable:
        """Channel dropout in training, the identity after eval().

        Args:
            input (Variable): the input.

        Returns:
            Variable: input's shape.
        """
        return getattr(F, self._fn)(input, p=self.p, training=self.training,
                                    data_format=self.data_format, name=self.name)

    def extra_repr(self) -> str:
        """p and data_format.

        Returns:
            str: e.g. 'p=0.5, data_format=NCHW'.
        """
        return f"p={self.p}, data_format={self.data_format}"


class Dropout3D(Dropout2D):
    """F.dropout3d (whole channels of a 5-D input) as a layer.

    Args:
        p (float): the probability of zeroing a channel.
        data_format (str): 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.Dropout3D(0.5)(static.data('x', [None, 3, 2, 4, 4])).shape
        (-1, 3, 2, 4, 4)
    """

    _fn, _format = "dropout3d", "NCDHW"

class Flatten(Layer):
    """paddle.flatten(x, start_axis, stop_axis) as a layer.

    Args:
        start_axis (int): the first axis merged.
        stop_axis (int): the last axis merged.

    Example:
        >>> paddle.nn.Flatten()(static.data('x', [None, 2, 3])).shape
        (-1, 6)
    """

    def __init__(self, start_axis: int = 1, stop_axis: int = -1) -> None:
        super().__init__()
        self.start_axis, self.stop_axis = start_axis, stop_axis

    def forward(self, input: Variable) -> Variable:
        """Merge axes start_axis..stop_axis.

        Args:
            input (Variable): the input.

        Returns:
            Variable: the flattened input.
        """
        return M.flatten(input, self.start_axis, self.stop_axis)


class Identity(Layer):
    """Returns its input (a placeholder, e.g. a removed classifier head).

    Args:
        *args: ignored (as in Paddle).
        **kwargs: ignored.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> paddle.nn.Identity()(x) is x
        True
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Variable) -> Variable:
        """The input itself.

        Args:
            input (Variable): the input.

        Returns:
            Variable: input.
        """
        return input


class Pad2D(Layer):
    """F.pad of the last two dims (NCHW) by `padding` as a layer.

    Args:
        padding (int or list of 4 int): (left, right, top, bottom); an int pads all four.
        mode (str): 'constant', 'reflect', 'replicate' or 'circular' (as F.pad).
        value (float): the fill value.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.Pad2D(1)(static.data('x', [None, 1, 2, 3])).shape
        (-1, 1, 4, 5)
    """

    _n = 4

    def __init__(self, padding: int | Sequence[int], mode: str = "constant", value: float = 0.0,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self._pad = [padding] * self._n if isinstance(padding, int) else list(padding)
        self._mode, self._value, self._data_format, self._name = mode, value, data_format, name

    def forward(self, x: Variable) -> Variable:
        """x padded.

        Args:
            x (Variable): 4-D.

        Returns:
            Variable: the padded x.
        """
        return F.pad(x, self._pad, mode=self._mode, value=self._value,
                     data_format=self._data_format, name=self._name)


class Pad1D(Pad2D):
    """F.pad of the last dim (NCL) as a layer.

    Args:
        padding (int or list of 2 int): (left, right); an int pads both.
        mode (str): 'constant', 'reflect', 'replicate' or 'circular'.
        value (float): the fill value.
        data_format (str): 'NCL' or 'NLC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.Pad1D([1, 2])(static.data('x', [None, 2, 3])).shape
        (-1, 2, 6)
    """

    _n = 2

    def __init__(self, padding: int | Sequence[int], mode: str = "constant", value: float = 0.0,
                 data_format: str = "NCL", name: str | None = None) -> None:
        super().__init__(padding, mode, value, data_format, name)


class Pad3D(Pad2D):
    """F.pad of the last three dims (NCDHW) as a layer.

    Args:
        padding (int or list of 6 int): (left, right, top, bottom, front, back).
        mode (str): 'constant', 'reflect', 'replicate' or 'circular'.
        value (float): the fill value.
        data_format (str): 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.Pad3D(1)(static.data('x', [None, 1, 2, 2, 2])).shape
        (-1, 1, 4, 4, 4)
    """

    _n = 6

    def __init__(self, padding: int | Sequence[int], mode: str = "constant", value: float = 0.0,
                 data_format: str = "NCDHW", name: str | None = None) -> None:
        super().__init__(padding, mode, value, data_format, name)


class ZeroPad2D(Pad2D):
    """Pad2D with zeros.

    Args:
        padding (int or list of 4 int): (left, right, top, bottom).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.ZeroPad2D([1, 1, 0, 0])(static.data('x', [None, 1, 2, 3])).shape
        (-1, 1, 2, 5)
    """

    def __init__(self, padding: int | Sequence[int], data_format: str = "NCHW",
                 name: str | None = None) -> None:
        super().__init__(padding, "constant", 0.0, data_format, name)


class Upsample(Layer):
    """F.interpolate as a layer (ops `nearest_interp_v2` / `bilinear_interp_v2`).

    Args:
        size (list of int, optional): the output's spatial size.
        scale_factor (float or list, optional): or the scale.
        mode (str): 'nearest' or 'bilinear'.
        align_corners (bool): bilinear's corner alignment.
        align_mode (int): bilinear's source-index rule (0 or 1).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> up = paddle.nn.Upsample(scale_factor=2)
        >>> up(static.data('x', [None, 3, 4, 4])).shape
        (-1, 3, 8, 8)
    """

    def __init__(self, size: Sequence[int] | None = None, scale_factor: Any = None,
                 mode: str = "nearest", align_corners: bool = False, align_mode: int = 0,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self._args = dict(size=size, scale_factor=scale_factor, mode=mode,
                          align_corners=align_corners, align_mode=align_mode,
                          data_format=data_format, name=name)

    def forward(self, x: Variable) -> Variable:
        """x resized.

        Args:
            x (Variable): 4-D.

        Returns:
            Variable: x resized to size (or scaled).
        """
        return F.interpolate(x, **self._args)


# the arguments of UpsamplingNearest2D and UpsamplingBilinear2D, documented once
_UPSAMPLING_ARGS = """size (list of int, optional): the output's spatial size.
        scale_factor (float or list, optional): or the scale.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name."""


@_shared_doc(upsampling_args=_UPSAMPLING_ARGS)
class UpsamplingNearest2D(Upsample):
    """Nearest-neighbour Upsample.

    Args:
        {upsampling_args}

    Example:
        >>> paddle.nn.UpsamplingNearest2D(size=[6, 6])(static.data('x', [None, 1, 3, 3])).shape
        (-1, 1, 6, 6)
    """

    def __init__(self, size: Sequence[int] | None = None, scale_factor: Any = None,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__(size, scale_factor, "nearest", False, 0, data_format, name)


@_shared_doc(upsampling_args=_UPSAMPLING_ARGS)
class UpsamplingBilinear2D(Upsample):
    """Bilinear Upsample with align_corners=True (as Paddle's).

    Args:
        {upsampling_args}

    Example:
        >>> paddle.nn.UpsamplingBilinear2D(scale_factor=2)(static.data('x', [None, 1, 3, 3])).shape
        (-1, 1, 6, 6)
    """

    def __init__(self, size: Sequence[int] | None = None, scale_factor: Any = None,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__(size, scale_factor, "bilinear", True, 0, data_format, name)


if hasattr(F, "interpolate"):
    __all__ += ["Upsample", "UpsamplingNearest2D", "UpsamplingBilinear2D"]
