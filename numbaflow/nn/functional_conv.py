"""Convolution layers: `nn.functional.conv2d`, `static.nn.conv2d`, `fluid.layers.conv2d`;
`nn.functional.conv2d_transpose` (op `conv2d_transpose`) and conv1d / conv1d_transpose
(Paddle's lowering: unsqueeze, the 2-D op, squeeze).

All three append one `conv2d` op, or `depthwise_conv2d` when every input channel has its
own filters (groups == in_channels != 1 and out_channels % in_channels == 0, Paddle's
rule), then the bias as `elementwise_add(axis=1)` and the activation.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import tensor as M
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
    from ..param_init import Normal
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


# ---------------------------------------------------------------- transposed and 1-D
def _ints(v, n, what, fn, low=0):
    vals = [v] * n if isinstance(v, numbers.Integral) else v
    if not isinstance(vals, (list, tuple)) or len(vals) != n or \
            not all(isinstance(i, numbers.Integral) and i >= low for i in vals):
        raise ValueError(f"{fn}: {what} must be an int or {n} ints >= {low}, got {v!r}")
    return [int(i) for i in vals]


def _transpose_paddings(padding, n, fn):
    """(paddings attr, padding_algorithm) of conv*_transpose from Paddle's padding argument."""
    if isinstance(padding, str):
        if padding.upper() not in ("SAME", "VALID"):
            raise ValueError(f"{fn}: padding must be 'SAME', 'VALID', an int or a list, got "
                             f"{padding!r}")
        return [0] * n, padding.upper()
    if isinstance(padding, (list, tuple)) and len(padding) == 2 * n:
        return _ints(padding, 2 * n, "padding", fn), "EXPLICIT"
    return _ints(padding, n, "padding", fn), "EXPLICIT"


def conv2d_transpose(x: Variable, weight: Variable, bias: Variable | None = None,
                     stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
                     output_padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                     groups: int = 1, output_size: int | Sequence[int] | None = None,
                     data_format: str = "NCHW", name: str | None = None) -> Variable:
    """2-D transposed convolution (op `conv2d_transpose`): the adjoint of conv2d, each
    output dim (H - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1 +
    output_padding (or `output_size`).

    Args:
        x (Variable): (N, C_in, H, W).
        weight (Variable): (C_in, C_out / groups, kh, kw).
        bias (Variable, optional): (C_out,), added per output channel.
        stride (int or pair): the stride.
        padding (int, pair, 4 ints, 'SAME' or 'VALID'): the padding cropped from the output.
        output_padding (int or pair): extra rows / columns at the end (< stride).
        dilation (int or pair): the dilation.
        groups (int): the number of channel groups.
        output_size (int or pair, optional): the output's H and W instead of output_padding.
        data_format (str): 'NCHW'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C_out, H', W').

    Example:
        >>> x = static.data('x', [None, 4, 5, 5])
        >>> w = paddle.full([4, 2, 3, 3], 0.1)
        >>> F.conv2d_transpose(x, w, stride=2, padding=1, output_padding=1).shape
        (-1, 2, 10, 10)
    """
    fn = "conv2d_transpose"
    _check_input(x, fn), _check_input(weight, fn, "weight")
    _check_format(data_format, fn)
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, got {groups!r}")
    c_in = x.shape[1]
    if weight.shape[0] != c_in or c_in % groups:
        raise ValueError(f"{fn}: weight {weight.name} {weight.shape} must be [in_channels, "
                         f"out_channels / groups, kh, kw] with in_channels = {c_in} (of "
                         f"{x.name}) divisible by groups={groups}")
    paddings, algo = _transpose_paddings(padding, 2, fn)
    attrs = {"strides": _pair(stride, "stride", fn), "paddings": paddings,
             "padding_algorithm": algo, "dilations": _pair(dilation, "dilation", fn),
             "groups": int(groups), "output_padding": [], "output_size": [],
             "data_format": "NCHW"}
    if output_size is not None:
        if output_padding != 0:
            raise ValueError(f"{fn}: output_padding and output_size are mutually exclusive; "
                             f"give one")
        attrs["output_size"] = _ints(output_size, 2, "output_size", fn, 1)
    elif output_padding != 0:
        attrs["output_padding"] = _ints(output_padding, 2, "output_padding", fn)
    helper = LayerHelper("conv2d_transpose", name)
    out = helper.create_tmp(x.dtype)
    helper.append_op("conv2d_transpose", {"Input": x, "Filter": weight}, {"Output": out}, attrs)
    if bias is not None:
        c_out = weight.shape[1] * groups
        if not isinstance(bias, Variable) or tuple(bias.shape) != (c_out,):
            raise ValueError(f"{fn}: bias must be a Variable of shape ({c_out},), got "
                             f"{getattr(bias, 'shape', type(bias).__name__)}")
        out = _add_bias(helper, out, bias)
    return out


def _ncl(x, weight, data_format, fn):
    """x as (N, C, L) (NLC transposed); checks x and weight are 3-D."""
    for v, arg in ((x, "x"), (weight, "weight")):
        if not isinstance(v, Variable):
            raise TypeError(f"{fn}: {arg} must be a Variable, got {type(v).__name__}")
        if v.ndim != 3:
            raise ValueError(f"{fn}: {arg} {v.name} must be 3-D, got shape {v.shape}")
    if data_format not in ("NCL", "NLC"):
        raise ValueError(f"{fn}: data_format must be 'NCL' or 'NLC', got {data_format!r}")
    return M.transpose(x, [0, 2, 1]) if data_format == "NLC" else x


def _back(y, axis, data_format, name):
    y = M.squeeze(y, [axis], name=None if data_format == "NLC" else name)
    return M.transpose(y, [0, 2, 1], name=name) if data_format == "NLC" else y


def _pad1d(padding, fn):
    """conv1d's padding as conv2d's over (N, C, 1, L): 'SAME' / 'VALID' as they are."""
    if isinstance(padding, str):
        return padding
    p = _ints(padding, 2, "padding", fn) if isinstance(padding, (list, tuple)) and \
        len(padding) == 2 else _ints(padding, 1, "padding", fn) * 2
    return [0, 0] + p


def conv1d(x: Variable, weight: Variable, bias: Variable | None = None,
           stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1, data_format: str = "NCL",
           name: str | None = None) -> Variable:
    """1-D convolution, lowered as Paddle does: unsqueeze to (N, C, 1, L), `conv2d` (or
    `depthwise_conv2d`) with a (M, C / groups, 1, k) filter, squeeze.

    Args:
        x (Variable): (N, C, L), or (N, L, C) with data_format='NLC'.
        weight (Variable): (M, C / groups, k).
        bias (Variable, optional): (M,).
        stride (int or [int]): the stride.
        padding (int, [int], [left, right], 'SAME' or 'VALID'): the zero padding.
        dilation (int or [int]): the dilation.
        groups (int): the number of channel groups.
        data_format (str): 'NCL' or 'NLC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, M, L') (or (N, L', M)).

    Example:
        >>> x = static.data('x', [None, 4, 10])
        >>> w = paddle.full([6, 4, 3], 0.1)
        >>> F.conv1d(x, w, padding=1).shape
        (-1, 6, 10)
    """
    fn = "conv1d"
    x = _ncl(x, weight, data_format, fn)
    y = conv2d(M.unsqueeze(x, [2]), M.unsqueeze(weight, [2]), bias,
               [1] + _ints(stride, 1, "stride", fn, 1), _pad1d(padding, fn),
               [1] + _ints(dilation, 1, "dilation", fn, 1), groups)
    return _back(y, 2, data_format, name)


def conv1d_transpose(x: Variable, weight: Variable, bias: Variable | None = None,
                     stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
                     output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1,
                     output_size: int | Sequence[int] | None = None, data_format: str = "NCL",
                     name: str | None = None) -> Variable:
    """1-D transposed convolution, lowered as Paddle does: unsqueeze to (N, C, L, 1),
    `conv2d_transpose` with a (C, M / groups, k, 1) filter, squeeze.

    Args:
        x (Variable): (N, C, L), or (N, L, C) with data_format='NLC'.
        weight (Variable): (C, M / groups, k).
        bias (Variable, optional): (M,).
        stride (int or [int]): the stride.
        padding (int, [int], [left, right], 'SAME' or 'VALID'): cropped from the output.
        output_padding (int or [int]): extra length at the end (< stride).
        groups (int): the number of channel groups.
        dilation (int or [int]): the dilation.
        output_size (int or [int], optional): the output length instead of output_padding.
        data_format (str): 'NCL' or 'NLC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, M, L') (or (N, L', M)).

    Example:
        >>> x = static.data('x', [None, 4, 7])
        >>> w = paddle.full([4, 2, 3], 0.1)
        >>> F.conv1d_transpose(x, w, stride=2).shape
        (-1, 2, 15)
    """
    fn = "conv1d_transpose"
    x = _ncl(x, weight, data_format, fn)
    if isinstance(padding, str):
        pad = padding
    elif isinstance(padding, (list, tuple)) and len(padding) == 2:
        pad = _ints(padding, 2, "padding", fn) + [0, 0]
    else:
        pad = _ints(padding, 1, "padding", fn) + [0]
    size = None if output_size is None else _ints(output_size, 1, "output_size", fn, 1) + [1]
    y = conv2d_transpose(M.unsqueeze(x, [3]), M.unsqueeze(weight, [3]), bias,
                         _ints(stride, 1, "stride", fn, 1) + [1], pad,
                         0 if output_padding == 0 else
                         _ints(output_padding, 1, "output_padding", fn) + [0],
                         _ints(dilation, 1, "dilation", fn, 1) + [1], groups, size)
    return _back(y, 3, data_format, name)
