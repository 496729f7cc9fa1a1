"""Batch norm (BatchNorm, BatchNorm1D/2D/3D, SyncBatchNorm) and LayerNorm over the
functional ops, with Paddle 2.6's parameters: `weight` (w_0), `bias` (b_0), and for batch
norm the running statistics `_mean` (w_1) and `_variance` (w_2), non-trainable."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...param_attr import ParamAttr
from ...tensor._helpers import activation as _activation
from .. import functional as F
from ...param_init import Constant
from .common import check_width
from .layers import Layer, camel_to_snake

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...graph.program import Variable

__all__ = ["BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "SyncBatchNorm",
           "LayerNorm"]


class _BatchNormBase(Layer):
    """Paddle's _BatchNormBase: the parameters and F.batch_norm with the layer's mode."""

    _formats = ("NCHW", "NHWC")

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-05,
                 weight_attr: Any = None, bias_attr: Any = None, data_format: str | None = None,
                 use_global_stats: bool | None = None, name: str | None = None) -> None:
        super().__init__()
        data_format = data_format or self._formats[0]   # NCHW, NCL (1D), NCDHW (3D)
        if data_format not in self._formats:
            raise ValueError(f"{type(self).__name__}: data_format must be one of "
                             f"{self._formats}, got {data_format!r}")
        shape = [num_features]
        # weight_attr / bias_attr=False: fixed at 1 / 0 (not trained), as in Paddle
        self.weight = self.create_parameter(shape, None if weight_attr is False else weight_attr,
                                            default_initializer=Constant(1.0))
        self.bias = self.create_parameter(shape, None if bias_attr is False else bias_attr,
                                          is_bias=True)
        for p, attr in ((self.weight, weight_attr), (self.bias, bias_attr)):
            if attr is False:
                p.stop_gradient, p.trainable = True, False
        mean_name, var_name = (f"{name}_mean", f"{name}_variance") if name else (None, None)
        self._mean = self.create_parameter(shape, ParamAttr(
            name=mean_name, initializer=Constant(0.0), trainable=False))
        self._variance = self.create_parameter(shape, ParamAttr(
            name=var_name, initializer=Constant(1.0), trainable=False))
        self._num_features, self._momentum, self._epsilon = num_features, momentum, epsilon
        self._data_format, self._use_global_stats, self._name = (data_format,
                                                                  use_global_stats, name)

    def forward(self, input: Variable) -> Variable:
        """Batch norm with the batch statistics in training (updating `_mean` /
        `_variance`), with the running ones after eval().

        Args:
            input (Variable): (N, C, ...) or channels-last.

        Returns:
            Variable: input's shape.
        """
        axis = 1 if self._data_format.startswith("NC") else len(input.shape) - 1
        check_width(self, input, input.shape[axis] if input.ndim > axis else -1,
                    self._num_features, f"channel dim {axis}")
        return F.batch_norm(input, self._mean, self._variance, self.weight, self.bias,
                            training=self.training, momentum=self._momentum,
                            epsilon=self._epsilon, data_format=self._data_format,
                            use_global_stats=self._use_global_stats, name=self._name)

    def extra_repr(self) -> str:
        """num_features, momentum, epsilon.

        Returns:
            str: e.g. 'num_features=16, momentum=0.9, epsilon=1e-05'.
        """
        return (f"num_features={self._num_features}, momentum={self._momentum}, "
                f"epsilon={self._epsilon}")


def _bn_doc(cls, shape, fmt):
    return f"""Batch normalisation of {fmt} input as a layer (F.batch_norm), parameters
    `weight`, `bias`, `_mean`, `_variance`
    (`{camel_to_snake(cls)}_N.w_0`, `.b_0`, `.w_1`, `.w_2`).

    Args:
        num_features (int): the channels C.
        momentum (float): running statistics = momentum * old + (1 - momentum) * batch.
        epsilon (float): added to the variance.
        weight_attr (ParamAttr or False, optional): the scale's; False: fixed at 1.
        bias_attr (ParamAttr or False, optional): the shift's; False: fixed at 0.
        data_format (str, optional): {fmt}; default the first.
        use_global_stats (bool, optional): None follows train() / eval().
        name (str, optional): names the running statistics `name_mean` / `name_variance`.

    Example:
        >>> bn = paddle.nn.{cls}(4)
        >>> bn(static.data('x', {shape})).shape
        {tuple(-1 if d is None else d for d in shape)}
    """


class BatchNorm1D(_BatchNormBase):
    __doc__ = _bn_doc("BatchNorm1D", [None, 4, 5], "'NCL' / 'NLC' (or 2-D (N, C))")
    _formats = ("NCL", "NLC", "NC")

    def forward(self, input: Variable) -> Variable:
        """Batch norm over (N, C) or (N, C, L).

        Args:
            input (Variable): 2-D or 3-D.

        Returns:
            Variable: input's shape.
        """
        fmt = self._data_format
        self._data_format = "NCHW" if fmt.startswith("NC") else "NHWC"
        try:
            return _BatchNormBase.forward(self, input)
        finally:
            self._data_format = fmt


class BatchNorm2D(_BatchNormBase):
    __doc__ = _bn_doc("BatchNorm2D", [None, 4, 5, 5], "'NCHW' / 'NHWC'")


class BatchNorm3D(_BatchNormBase):
    __doc__ = _bn_doc("BatchNorm3D", [None, 4, 2, 3, 3], "'NCDHW' / 'NDHWC'")
    _formats = ("NCDHW", "NDHWC")

    forward = BatchNorm1D.forward


class SyncBatchNorm(_BatchNormBase):
    __doc__ = _bn_doc("SyncBatchNorm", [None, 4, 5, 5], "'NCHW' / 'NHWC'") + """
    Over data-parallel replicas the statistics are each replica's own (as BatchNorm2D).
    """


class BatchNorm(_BatchNormBase):
    """The fluid-style batch norm layer (`batch_norm_N.w_0` ...), with an activation.

    Args:
        num_channels (int): the channels C.
        act (str, optional): an activation after the normalisation.
        is_test (bool): always use the running statistics.
        momentum (float): the running statistics' momentum.
        epsilon (float): added to the variance.
        param_attr (ParamAttr, optional): the scale's.
        bias_attr (ParamAttr, optional): the shift's.
        dtype (str): the parameters' dtype.
        data_layout (str): 'NCHW' or 'NHWC'.
        in_place (bool): accepted.
        moving_mean_name (str, optional): the running mean's name.
        moving_variance_name (str, optional): the running variance's name.
        do_model_average_for_mean_and_var (bool): accepted.
        use_global_stats (bool): always use the running statistics.
        trainable_statistics (bool): accepted.

    Example:
        >>> bn = paddle.nn.BatchNorm(4, act='relu')
        >>> bn(static.data('x', [None, 4, 3, 3])).shape
        (-1, 4, 3, 3)
    """

    def __init__(self, num_channels: int, act: str | None = None, is_test: bool = False,
                 momentum: float = 0.9, epsilon: float = 1e-05, param_attr: Any = None,
                 bias_attr: Any = None, dtype: str = "float32", data_layout: str = "NCHW",
                 in_place: bool = False, moving_mean_name: str | None = None,
                 moving_variance_name: str | None = None,
                 do_model_average_for_mean_and_var: bool = True,
                 use_global_stats: bool = False, trainable_statistics: bool = False) -> None:
        super().__init__(num_channels, momentum, epsilon, param_attr, bias_attr, data_layout,
                         True if (use_global_stats or is_test) else None)
        for p, n in ((self._mean, moving_mean_name), (self._variance, moving_variance_name)):
            if n:
                raise NotImplementedError(
                    f"BatchNorm: moving_mean_name / moving_variance_name ({n!r}) are not "
                    f"supported; use paddle.nn.BatchNorm2D(..., name='bn') for "
                    f"'bn_mean' / 'bn_variance'")
        self._act = act

    def forward(self, input: Variable) -> Variable:
        """Batch norm, then the activation.

        Args:
            input (Variable): (N, C, ...).

        Returns:
            Variable: input's shape.
        """
        return _activation(super().forward(input), self._act)


class LayerNorm(Layer):
    """Normalise over the last dims `normalized_shape`, then `* weight + bias` (F.layer_norm;
    parameters `layer_norm_N.w_0` (ones) and `.b_0` of size prod(normalized_shape)).

    Args:
        normalized_shape (int or list of int): the trailing dims normalised.
        epsilon (float): added to the variance.
        weight_attr (ParamAttr or False, optional): the scale's; False: none.
        bias_attr (ParamAttr or False, optional): the shift's; False: none.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> ln = paddle.nn.LayerNorm(8)
        >>> ln(static.data('x', [None, 3, 8])).shape
        (-1, 3, 8)
    """

    def __init__(self, normalized_shape: int | Sequence[int], epsilon: float = 1e-05,
                 weight_attr: Any = None, bias_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self._normalized_shape = [normalized_shape] if isinstance(normalized_shape, int) \
            else list(normalized_shape)
        shape = [int(np.prod(self._normalized_shape))]
        self._epsilon, self._name = epsilon, name
        self.weight = self.create_parameter(shape, weight_attr, default_initializer=Constant(1.0))
        self.bias = self.create_parameter(shape, bias_attr, is_bias=True)

    def forward(self, input: Variable) -> Variable:
        """Layer norm of input.

        Args:
            input (Variable): [..., *normalized_shape].

        Returns:
            Variable: input's shape.
        """
        n = len(self._normalized_shape)
        got = [int(d) for d in input.shape[-n:]]
        if got != self._normalized_shape and all(d >= 0 for d in got):
            raise ValueError(f"{self.full_name()} (LayerNorm({self._normalized_shape})): "
                             f"input {input.name} has shape {tuple(input.shape)}, its last "
                             f"{n} dim(s) {got} are not normalized_shape "
                             f"{self._normalized_shape}")
        return F.layer_norm(input, self._normalized_shape, self.weight, self.bias,
                            self._epsilon, name=self._name)

    def extra_repr(self) -> str:
        """normalized_shape and epsilon.

        Returns:
            str: e.g. 'normalized_shape=[8], epsilon=1e-05'.
        """
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class GroupNorm(Layer):
    """F.group_norm with `weight` (ones) and `bias` of [num_channels]
    (`group_norm_N.w_0`, `.b_0`).

    Args:
        num_groups (int): channel groups normalised together.
        num_channels (int): the channels C.
        epsilon (float): added to the variance.
        weight_attr (ParamAttr or False, optional): the scale's; False: none.
        bias_attr (ParamAttr or False, optional): the shift's; False: none.
        data_format (str): 'NCHW' (or 'NCL', ...).
        name (str, optional): a prefix for the output's name.

    Example:
        >>> gn = paddle.nn.GroupNorm(2, 4)
        >>> gn(static.data('x', [None, 4, 3, 3])).shape
        (-1, 4, 3, 3)
    """

    def __init__(self, num_groups: int, num_channels: int, epsilon: float = 1e-05,
                 weight_attr: Any = None, bias_attr: Any = None, data_format: str = "NCHW",
                 name: str | None = None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible "
                             f"by num_groups ({num_groups})")
        self._num_groups, self._num_channels, self._epsilon = num_groups, num_channels, epsilon
        self._data_format, self._name = data_format, name
        self.weight = self.create_parameter([num_channels], weight_attr,
                                            default_initializer=Constant(1.0))
        self.bias = self.create_parameter([num_channels], bias_attr, is_bias=True)

    def forward(self, input: Variable) -> Variable:
        """Group norm of input.

        Args:
            input (Variable): (N, C, ...).

        Returns:
            Variable: input's shape.
        """
        check_width(self, input, input.shape[1], self._num_channels, "channel dim 1")
        return F.group_norm(input, self._num_groups, self._epsilon, self.weight, self.bias,
                            self._data_format, name=self._name)

    def extra_repr(self) -> str:
        """num_groups, num_channels, epsilon.

        Returns:
            str: e.g. 'num_groups=2, num_channels=4, epsilon=1e-05'.
        """
        return (f"num_groups={self._num_groups}, num_channels={self._num_channels}, "
                f"epsilon={self._epsilon}")


class InstanceNorm2D(Layer):
    """F.instance_norm (per sample and channel) with `scale` (ones) and `bias` of
    [num_features], Paddle's attribute names (`instance_norm2d_N.w_0`, `.b_0`).

    Args:
        num_features (int): the channels C.
        epsilon (float): added to the variance.
        momentum (float): accepted (no running statistics are kept, as in Paddle).
        weight_attr (ParamAttr or False, optional): the scale's; False (with
            bias_attr=False): no affine parameters.
        bias_attr (ParamAttr or False, optional): the shift's.
        data_format (str): 'NCHW'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> inorm = paddle.nn.InstanceNorm2D(3)
        >>> inorm(static.data('x', [None, 3, 4, 4])).shape
        (-1, 3, 4, 4)
    """

    _format = "NCHW"

    def __init__(self, num_features: int, epsilon: float = 1e-05, momentum: float = 0.9,
                 weight_attr: Any = None, bias_attr: Any = None, data_format: str | None = None,
                 name: str | None = None) -> None:
        super().__init__()
        self._num_features, self._epsilon, self._name = num_features, epsilon, name
        self._data_format = data_format or self._format
        if weight_attr is False and bias_attr is False:
            self.scale = self.bias = None
        else:
            self.scale = self.create_parameter([num_features], weight_attr,
                                               default_initializer=Constant(1.0))
            self.bias = self.create_parameter([num_features], bias_attr, is_bias=True)

    def forward(self, input: Variable) -> Variable:
        """Instance norm of input.

        Args:
            input (Variable): (N, C, ...).

        Returns:
            Variable: input's shape.
        """
        check_width(self, input, input.shape[1], self._num_features, "channel dim 1")
        return F.instance_norm(input, weight=self.scale, bias=self.bias, eps=self._epsilon,
                               data_format=self._data_format, name=self._name)


class InstanceNorm1D(InstanceNorm2D):
    """F.instance_norm of (N, C, L) input, parameters as InstanceNorm2D's.

    Args:
        num_features (int): the channels C.
        epsilon (float): added to the variance.
        momentum (float): accepted.
        weight_attr (ParamAttr or False, optional): the scale's.
        bias_attr (ParamAttr or False, optional): the shift's.
        data_format (str): 'NCL'.
        name (str, optional): a prefix for the output's name.

    Example:
        >>> inorm = paddle.nn.InstanceNorm1D(3)
        >>> inorm(static.data('x', [None, 3, 8])).shape
        (-1, 3, 8)
    """

    _format = "NCL"


if hasattr(F, "group_norm"):
    __all__.append("GroupNorm")
if hasattr(F, "instance_norm"):
    __all__ += ["InstanceNorm1D", "InstanceNorm2D"]
