"""2-D convolution layers: `nn.functional.conv2d`, `static.nn.conv2d`, `fluid.layers.conv2d`.

All three append one `conv2d` op, or `depthwise_conv2d` when every input channel has its
own filters (groups == in_channels != 1 and out_channels % in_channels == 0, Paddle's
rule), then the bias as `elementwise_add(axis=1)` and the activation.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import activation as _activation

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..param_attr import ParamAttr


def _pair(v, what, fn):
    if isinstance(v, numbers.Integral):
        v = [int(v)] * 2
    if not isinstance(v, (list, tuple)) or len(v) != 2 or \
            not all(isinstance(i, numbers.Integral) for i in v):
        raise ValueError(f"{fn}: {what} must be an int or a pair of ints, got {v!r}")
    if min(v) < 1:
        raise ValueError(f"{fn}: {what} must be >= 1, got {list(v)}")
    return [int(i) for i in v]


def _same_pads(size, k, s):
    """Paddle's 'SAME': output ceil(size / s); the padding split with the extra at the end."""
    out = (size + s - 1) // s
    total = max((out - 1) * s + k - size, 0)
    return [total // 2, total - total // 2]


def _paddings(padding, x, ksize, strides, dilations, fn):
    """[top, bottom, left, right] (and the dilations, which 'SAME' resets to 1 as in Paddle)."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [0, 0, 0, 0], dilations
        if mode != "SAME":
            raise ValueError(f"{fn}: padding must be 'SAME', 'VALID', an int or a list, got "
                             f"{padding!r}")
        h, w = x.shape[2], x.shape[3]
        if h < 0 or w < 0:
            raise ValueError(f"{fn}: padding='SAME' needs the spatial size of {x.name} "
                             f"{x.shape}; declare its height and width, or pad explicitly")
        return (_same_pads(h, ksize[0], strides[0]) + _same_pads(w, ksize[1], strides[1]),
                [1, 1])
    p = padding
    if isinstance(p, numbers.Integral):
        p = [int(p)] * 2
    p = list(p) if isinstance(p, (list, tuple)) else p
    if isinstance(p, list) and len(p) == 4 and all(isinstance(i, (list, tuple)) for i in p):
        if list(p[0]) != [0, 0] or list(p[1]) != [0, 0]:   # [[0,0],[0,0],[t,b],[l,r]] (NCHW)
            raise ValueError(f"{fn}: padding {padding} pads the batch or channel dims; only "
                             f"the spatial dims (the last two pairs) can be padded")
        p = list(p[2]) + list(p[3])
    if not isinstance(p, list) or len(p) not in (2, 4) or \
            not all(isinstance(i, numbers.Integral) for i in p):
        raise ValueError(f"{fn}: padding must be an int, [pad_h, pad_w], [top, bottom, left, "
                         f"right], 'SAME' or 'VALID'; got {padding!r}")
    p = [int(i) for i in p]
    if min(p) < 0:
        raise ValueError(f"{fn}: padding must be >= 0, got {p}")
    return ([p[0], p[0], p[1], p[1]] if len(p) == 2 else p), dilations


def _check_input(x, fn, arg="x"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"{fn}: {arg} {x.name} must be 4-D (N, C, H, W), got shape {x.shape}")
    if x.shape[1] < 0:
        raise ValueError(f"{fn}: the channel dim of {arg} {x.name} {x.shape} must be known")


def _is_depthwise(c_in, c_out, groups):
    return c_in == groups and c_in != 1 and c_out % c_in == 0


def _append_conv(helper, x, weight, strides, paddings, dilations, groups, op_type):
    out = helper.create_tmp(x.dtype)
    helper.append_op(op_type, {"Input": x, "Filter": weight}, {"Output": out},
                     {"strides": strides, "paddings": paddings, "dilations": dilations,
                      "groups": int(groups), "data_format": "NCHW"})
    return out


def _add_bias(helper, out, bias):
    res = helper.create_tmp(out.dtype)
    helper.append_op("elementwise_add", {"X": out, "Y": bias}, {"Out": res}, {"axis": 1})
    return res


def _check_format(data_format, fn):
    if data_format != "NCHW":
        raise ValueError(f"{fn}: data_format {data_format!r} is not supported; only 'NCHW' "
                         f"is (transpose NHWC input to NCHW first)")


def conv2d(x: Variable, weight: Variable, bias: Variable | None = None,
           stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1, data_format: str = "NCHW",
           name: str | None = None) -> Variable:
    """2-D convolution of `x` with a given `weight` (op `conv2d`, or `depthwise_conv2d`
    when groups == channels).

    Args:
        x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        weight (Variable): (M, C / groups, kh, kw).
        bias (Variable, optional): (M,), added per output channel.
        stride (int or pair): the stride.
        padding (int, pair, 4 ints, 'SAME' or 'VALID'): the zero padding.
        dilation (int or pair): the dilation.
        groups (int): the number of channel groups.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, M, H', W') (or channels-last).

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> w = paddle.full([4, 3, 3, 3], 0.1)
        >>> F.conv2d(x, w, stride=2, padding=1).shape
        (-1, 4, 4, 4)
    """
    fn = "conv2d"
    _check_input(x, fn), _check_input(weight, fn, "weight")
    _check_format(data_format, fn)
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, got {groups!r}")
    c_in, c_out = x.shape[1], weight.shape[0]
    if c_in % groups or c_out % groups:
        raise ValueError(f"{fn}: groups={groups} must divide the input channels ({c_in}, of "
                         f"{x.name}) and the output channels ({c_out}, of {weight.name})")
    if weight.shape[1] * groups != c_in:
        raise ValueError(f"{fn}: channel mismatch: {x.name} has {c_in} channels, but weight "
                         f"{weight.name} {weight.shape} expects {weight.shape[1]} per group x "
                         f"groups={groups}")
    strides, dilations = _pair(stride, "stride", fn), _pair(dilation, "dilation", fn)
    paddings, dilations = _paddings(padding, x, weight.shape[2:], strides, dilations, fn)
    op_type = "depthwise_conv2d" if _is_depthwise(c_in, c_out, groups) else "conv2d"
    helper = LayerHelper(op_type, name)
    out = _append_conv(helper, x, weight, strides, paddings, dilations, groups, op_type)
    if bias is not None:
        if not isinstance(bias, Variable) or tuple(bias.shape) != (c_out,):
            raise ValueError(f"{fn}: bias must be a Variable of shape ({c_out},), got "
                             f"{getattr(bias, 'shape', type(bias).__name__)}")
        out = _add_bias(helper, out, bias)
    return out


def static_conv2d(input: Variable, num_filters: int, filter_size: int | Sequence[int],
                  stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
                  dilation: int | Sequence[int] = 1, groups: int | None = 1,
                  param_attr: ParamAttr | None = None,
                  bias_attr: ParamAttr | bool | None = None, act: str | None = None,
                  name: str | None = None, data_format: str = "NCHW",
                  weight_attr: ParamAttr | None = None) -> Variable:
    """Convolution layer with its own parameters (Paddle's `static.nn.conv2d`).

    Creates `conv2d_N.w_0` [num_filters, C/groups, kh, kw], initialised as in Paddle with
    Normal(0, sqrt(2 / (kh * kw * C))), and `conv2d_N.b_0` [num_filters] (zeros; none with
    bias_attr=False); a depthwise layer is named `depthwise_conv2d_N`, as in Paddle.
    The op output is `.tmp_0`, the bias sum `.tmp_1`, the activation `.tmp_2`.

    Args:
        input (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        num_filters (int): the output channels.
        filter_size (int or pair): the kernel size.
        stride (int or pair): the stride.
        padding (int, pair, 4 ints, 'SAME' or 'VALID'): the zero padding.
        dilation (int or pair): the dilation.
        groups (int): the number of channel groups.
        param_attr (ParamAttr, optional): the weight's (Paddle 1.x name).
        bias_attr (ParamAttr or False, optional): the bias's; False for no bias.
        act (str, optional): an activation applied after.
        name (str, optional): the layer's name prefix.
        data_format (str): 'NCHW' or 'NHWC'.
        weight_attr (ParamAttr, optional): the weight's (Paddle 2.x name).

    Returns:
        Variable: (N, num_filters, H', W') (or channels-last).

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> static.nn.conv2d(x, num_filters=16, filter_size=3, padding=1, act='relu').shape
        (-1, 16, 8, 8)
    """
    from .initializer import Normal
    fn = "static.nn.conv2d"
    _check_input(input, fn, "input")
    _check_format(data_format, fn)
    groups = 1 if groups is None else groups
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, got {groups!r}")
    if not isinstance(num_filters, numbers.Integral) or num_filters < 1:
        raise ValueError(f"{fn}: num_filters must be a positive int, got {num_filters!r}")
    c_in = input.shape[1]
    if c_in % groups or num_filters % groups:
        raise ValueError(f"{fn}: groups={groups} must divide the input channels ({c_in}, of "
                         f"{input.name}) and num_filters ({num_filters})")
    ksize = _pair(filter_size, "filter_size", fn)
    strides, dilations = _pair(stride, "stride", fn), _pair(dilation, "dilation", fn)
    paddings, dilations = _paddings(padding, input, ksize, strides, dilations, fn)
    op_type = "depthwise_conv2d" if _is_depthwise(c_in, num_filters, groups) else "conv2d"
    helper = LayerHelper(op_type, name)
    std = (2.0 / (ksize[0] * ksize[1] * c_in)) ** 0.5
    w = helper.create_parameter(weight_attr if weight_attr is not None else param_attr,
                                [int(num_filters), c_in // groups] + ksize, input.dtype,
                                default_initializer=Normal(0.0, std))
    out = _append_conv(helper, input, w, strides, paddings, dilations, groups, op_type)
    if bias_attr is not False:
        b = helper.create_parameter(bias_attr, [int(num_filters)], input.dtype, is_bias=True)
        out = _add_bias(helper, out, b)
    return _activation(out, act, helper)


def fluid_conv2d(input: Variable, num_filters: int, filter_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
                 dilation: int | Sequence[int] = 1, groups: int | None = None,
                 param_attr: ParamAttr | None = None,
                 bias_attr: ParamAttr | bool | None = None, use_cudnn: bool = True,
                 act: str | None = None, name: str | None = None,
                 data_format: str = "NCHW") -> Variable:
    """Paddle 1.x `fluid.layers.conv2d`: the same layer as `static.nn.conv2d`.

    Args:
        input (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        num_filters (int): the output channels.
        filter_size (int or pair): the kernel size.
        stride (int or pair): the stride.
        padding (int, pair, 4 ints, 'SAME' or 'VALID'): the zero padding.
        dilation (int or pair): the dilation.
        groups (int, optional): the number of channel groups (default 1).
        param_attr (ParamAttr, optional): the weight's.
        bias_attr (ParamAttr or False, optional): the bias's; False for no bias.
        use_cudnn (bool): accepted and ignored (there is no cuDNN on the CPU).
        act (str, optional): an activation applied after.
        name (str, optional): the layer's name prefix.
        data_format (str): 'NCHW' or 'NHWC'.

    Returns:
        Variable: (N, num_filters, H', W') (or channels-last).

    Example:
        >>> x = fluid.layers.data('x', [3, 8, 8])
        >>> fluid.layers.conv2d(x, num_filters=4, filter_size=3).shape
        (-1, 4, 6, 6)
    """
    return static_conv2d(input, num_filters, filter_size, stride, padding, dilation, groups,
                         param_attr, bias_attr, act, name, data_format)
