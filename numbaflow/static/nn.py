"""numbaflow.static.nn: layers that create parameters (fc, conv2d, batch_norm, embedding,
layer_norm).

>>> x = static.data('x', [None, 4])
>>> static.nn.fc(x, size=2).shape
(-1, 2)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import activation as _activation
from ..utils.hints import renamed_arguments as _renamed_arguments

__all__ = ["fc", "batch_norm", "conv2d", "embedding", "layer_norm", "cond", "while_loop", "case",
           "switch_case", "group_norm", "instance_norm"]

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..param_attr import ParamAttr


@_renamed_arguments("static.nn.fc", act="activation",
                   note="act= is the fluid 1.x name, of fluid.layers.fc")
def fc(x: Variable | Sequence[Variable], size: int, num_flatten_dims: int = 1,
       weight_attr: ParamAttr | None = None, bias_attr: ParamAttr | bool | None = None,
       activation: str | None = None, name: str | None = None) -> Variable:
    """Fully connected layer: ops `mul`, `elementwise_add` (bias), then the activation.

    Creates `fc_N.w_0` of shape [prod(x.shape[num_flatten_dims:]), size] and `fc_N.b_0`.

    Args:
        x (Variable or list of Variable): the input; a list gets one weight each, the
            products summed.
        size (int): the number of output features.
        num_flatten_dims (int): the leading dims kept; the rest are flattened into the
            feature dim.
        weight_attr (ParamAttr, optional): the weight's name / initializer.
        bias_attr (ParamAttr or False, optional): the bias's; False for no bias.
        activation (str, optional): e.g. 'relu', 'tanh', 'softmax'.
        name (str, optional): the layer's name prefix.

    Returns:
        Variable: shape x.shape[:num_flatten_dims] + [size].

    Example:
        >>> x = static.data('x', [None, 4])
        >>> hidden = static.nn.fc(x, size=10, activation='relu')
        >>> hidden.shape
        (-1, 10)
    """
    helper = LayerHelper("fc", name)
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    if not isinstance(size, (int, np.integer)) or size <= 0:
        raise ValueError(f"fc: size must be a positive int, got {size!r}")
    if isinstance(num_flatten_dims, bool) or not isinstance(num_flatten_dims,
                                                             (int, np.integer)):
        raise TypeError(f"fc: num_flatten_dims must be an int (how many leading dims to keep, "
                        f"e.g. 1 for a [batch, features] input), got {num_flatten_dims!r} of "
                        f"type {type(num_flatten_dims).__name__}; pass "
                        f"num_flatten_dims=int({num_flatten_dims!r})")
    products = []
    for i, xi in enumerate(xs):
        if not isinstance(xi, Variable):
            raise TypeError(f"fc: x must be a Variable (or a list of them), got "
                            f"{type(xi).__name__}")
        if not 0 < num_flatten_dims < max(xi.ndim, 1) + (xi.ndim == 0):
            raise ValueError(f"fc: num_flatten_dims={num_flatten_dims} must be in [1, "
                             f"{xi.ndim - 1}] for input {xi.name} of shape {xi.shape}")
        in_dims = xi.shape[num_flatten_dims:]
        if any(d < 0 for d in in_dims):
            raise ValueError(f"fc: input {xi.name} has shape {xi.shape}; the dims after "
                             f"num_flatten_dims={num_flatten_dims} must be known to size the "
                             f"weight")
        w = helper.create_parameter(weight_attr, [int(np.prod(in_dims)), int(size)], xi.dtype)
        out = helper.create_tmp(xi.dtype)
        helper.append_op("mul", {"X": xi, "Y": w}, {"Out": out},
                         {"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1})
        products.append(out)
    pre_bias = products[0]
    if len(products) > 1:
        pre_bias = helper.create_tmp(xs[0].dtype)
        helper.append_op("sum", {"X": products}, {"Out": pre_bias})
    if bias_attr is not False:
        b = helper.create_parameter(bias_attr, [int(size)], xs[0].dtype, is_bias=True)
        pre_act = helper.create_tmp(xs[0].dtype)
        helper.append_op("elementwise_add", {"X": pre_bias, "Y": b}, {"Out": pre_act},
                         {"axis": num_flatten_dims})
    else:
        pre_act = pre_bias
    return _activation(pre_act, activation, helper)


from ..nn.functional_nn import static_batch_norm as batch_norm  # noqa: E402,F401
from ..nn.functional_nn import static_embedding as embedding  # noqa: E402,F401
from ..nn.functional_conv import static_conv2d as conv2d  # noqa: E402,F401
from ..nn.functional_transformer import static_layer_norm as layer_norm  # noqa: E402,F401
from ..nn.functional_norm import static_group_norm as group_norm  # noqa: E402,F401
from ..nn.functional_norm import static_instance_norm as instance_norm  # noqa: E402,F401
from .control_flow import case, cond, switch_case, while_loop  # noqa: E402,F401
