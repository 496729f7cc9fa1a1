"""The volumetric (3-D) functional ops, Paddle 2.6's signatures: `conv3d` (op `conv3d`, the
bias as elementwise_add), `max_pool3d` / `avg_pool3d` / `adaptive_avg_pool3d` /
`adaptive_max_pool3d` (op `pool3d`; return_mask: op `max_pool3d_with_index`).

Paddings as Paddle takes them: an int, [pd, ph, pw], [front, back, top, bottom, left,
right], five [before, after] pairs in data_format order (batch and channel pairs 0), or
'SAME' / 'VALID', which go to the op's `padding_algorithm` as in Paddle.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from ..graph.program import Variable
from ..layer_helper import LayerHelper

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["conv3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]
FORMATS = ("NCDHW", "NDHWC")


def _triple(v, what, fn, allow_none=False):
    vals = list(v) if isinstance(v, (list, tuple)) else [v] * 3
    ok = len(vals) == 3 and all(isinstance(d, numbers.Integral) and d > 0 or
                                (allow_none and d is None) for d in vals)
    if not ok:
        raise ValueError(f"{fn}: {what} must be a positive int or a list of 3 positive ints "
                         f"[d, h, w], got {v!r}")
    return [d if d is None else int(d) for d in vals]


def _padding(padding, data_format, fn):
    """(paddings attr, padding_algorithm attr) from Paddle's padding argument."""
    if isinstance(padding, str):
        algo = padding.upper()
        if algo not in ("SAME", "VALID"):
            raise ValueError(f"{fn}: padding string must be 'SAME' or 'VALID', got {padding!r}")
        return [0, 0, 0], algo
    if isinstance(padding, numbers.Integral):
        pads = [int(padding)] * 3
    elif isinstance(padding, (list, tuple)) and len(padding) == 5 and \
            all(isinstance(p, (list, tuple)) and len(p) == 2 for p in padding):
        spatial = padding[2:] if data_format == "NCDHW" else padding[1:4]
        other = padding[:2] if data_format == "NCDHW" else [padding[0], padding[4]]
        if any(int(p) != 0 for pair in other for p in pair):
            raise ValueError(f"{fn}: padding on the batch and channel dims must be 0, got "
                             f"{padding!r}")
        pads = [int(p) for pair in spatial for p in pair]
    elif isinstance(padding, (list, tuple)) and len(padding) in (3, 6) and \
            all(isinstance(p, numbers.Integral) for p in padding):
        pads = [int(p) for p in padding]
    else:
        raise ValueError(f"{fn}: padding must be 'SAME', 'VALID', an int, [pd, ph, pw], [front, "
                         f"back, top, bottom, left, right] or 5 [before, after] pairs; got "
                         f"{padding!r}")
    if min(pads) < 0:
        raise ValueError(f"{fn}: padding must be >= 0, got {padding!r}")
    return pads, "EXPLICIT"


def _check_x(x, fn, data_format, arg="x"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    if data_format not in FORMATS:
        raise ValueError(f"{fn}: data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    if x.ndim != 5:
        raise ValueError(f"{fn}: {arg} {x.name} must be 5-D ({data_format}), got shape "
                         f"{x.shape}")


def conv3d(x: Variable, weight: Variable, bias: Variable | None = None,
           stride: int | Sequence[int] = 1, padding: int | str | Sequence[int] = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1, data_format: str = "NCDHW",
           name: str | None = None) -> Variable:
    """3-D convolution of `x` with a given `weight` (op `conv3d`), then the bias.

    Args:
        x (Variable): (N, C, D, H, W), or (N, D, H, W, C) with data_format='NDHWC'.
        weight (Variable): (M, C / groups, kd, kh, kw).
        bias (Variable, optional): (M,), added per output channel.
        stride (int or 3 ints): the stride.
        padding (int, 3 or 6 ints, 5 pairs, 'SAME' or 'VALID'): the zero padding.
        dilation (int or 3 ints): the dilation.
        groups (int): the number of channel groups.
        data_format (str): 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, M, D', H', W') (or channels-last).

    Example:
        >>> x = static.data('x', [None, 3, 8, 8, 8])
        >>> w = paddle.full([4, 3, 3, 3, 3], 0.1)
        >>> F.conv3d(x, w, stride=2, padding=1).shape
        (-1, 4, 4, 4, 4)
    """
    fn = "conv3d"
    _check_x(x, fn, data_format)
    if not isinstance(weight, Variable) or weight.ndim != 5:
        raise ValueError(f"{fn}: weight must be a 5-D Variable [out_channels, in_channels / "
                         f"groups, kd, kh, kw], got {getattr(weight, 'shape', weight)!r}")
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, got {groups!r}")
    c_in = x.shape[1] if data_format == "NCDHW" else x.shape[4]
    c_out = weight.shape[0]
    if c_in < 0:
        raise ValueError(f"{fn}: the channel dim of x {x.name} {x.shape} must be known")
    if c_in % groups or c_out % groups or weight.shape[1] * groups != c_in:
        raise ValueError(f"{fn}: x {x.name} has {c_in} channels and weight {weight.name} "
                         f"{weight.shape} {c_out} filters of {weight.shape[1]} channels; with "
                         f"groups={groups} the filters' channels x groups must equal {c_in} "
                         f"and groups must divide both")
    paddings, algo = _padding(padding, data_format, fn)
    helper = LayerHelper(fn, name)
    out = helper.create_tmp(x.dtype)
    helper.append_op(fn, {"Input": x, "Filter": weight}, {"Output": out},
                     {"strides": _triple(stride, "stride", fn), "paddings": paddings,
                      "padding_algorithm": algo, "dilations": _triple(dilation, "dilation", fn),
                      "groups": int(groups), "data_format": data_format})
    if bias is None:
        return out
    if not isinstance(bias, Variable) or tuple(bias.shape) != (c_out,):
        raise ValueError(f"{fn}: bias must be a Variable of shape ({c_out},), got "
                         f"{getattr(bias, 'shape', type(bias).__name__)}")
    res = helper.create_tmp(out.dtype)
    helper.append_op("elementwise_add", {"X": out, "Y": bias}, {"Out": res},
                     {"axis": 1 if data_format == "NCDHW" else 4})
    return res


def _pool3d(fn, x, pooling_type, ksize, stride, padding, ceil_mode, exclusive, data_format,
            name, adaptive=False):
    _check_x(x, fn, data_format)
    if adaptive:
        strides, paddings, algo = [1, 1, 1], [0, 0, 0], "EXPLICIT"
    else:
        ksize = _triple(ksize, "kernel_size", fn)
        strides = ksize if stride is None else _triple(stride, "stride", fn)
        paddings, algo = _padding(padding, data_format, fn)
        if algo == "VALID" and ceil_mode:
            raise ValueError(f"{fn}: ceil_mode must be False when padding is 'VALID'")
    return LayerHelper(fn, name).simple("pool3d", {"X": x}, {
        "pooling_type": pooling_type, "ksize": ksize, "strides": strides,
        "paddings": paddings, "padding_algorithm": algo, "ceil_mode": bool(ceil_mode),
        "exclusive": bool(exclusive), "global_pooling": False, "adaptive": adaptive,
        "data_format": data_format})


def _with_index(fn, x, ksize, stride, padding, ceil_mode, data_format, name, adaptive):
    """max_pool3d_with_index: (Out, int32 Mask of d * H * W + h * W + w), as Paddle."""
    _check_x(x, fn, data_format)
    if data_format != "NCDHW" or ceil_mode:
        raise ValueError(f"{fn}: return_mask=True needs data_format='NCDHW' and "
                         f"ceil_mode=False (as Paddle); got {data_format!r}, {ceil_mode}")
    if adaptive:
        strides, pads = [1, 1, 1], [0, 0, 0]
    else:
        ksize = _triple(ksize, "kernel_size", fn)
        strides = ksize if stride is None else _triple(stride, "stride", fn)
        pads, algo = _padding(padding, data_format, fn)
        if algo == "SAME":
            raise ValueError(f"{fn}: padding 'SAME' with return_mask=True is not supported; "
                             f"give the padding as ints")
        pads = [0, 0, 0] if algo == "VALID" else pads
        if len(pads) == 6:
            if pads[0::2] != pads[1::2]:
                raise ValueError(f"{fn}: return_mask=True needs symmetric padding, got {pads}")
            pads = pads[0::2]
    helper = LayerHelper("max_pool3d_with_index", name)
    out, mask = helper.create_tmp(x.dtype), helper.create_tmp("int32", stop_gradient=True)
    helper.append_op("max_pool3d_with_index", {"X": x}, {"Out": out, "Mask": mask},
                     {"ksize": ksize, "strides": strides, "paddings": pads,
                      "global_pooling": False, "adaptive": adaptive})
    return out, mask


def max_pool3d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | str | Sequence[int] = 0, return_mask: bool = False,
               ceil_mode: bool = False, data_format: str = "NCDHW",
               name: str | None = None) -> Variable:
    """3-D max pooling (op `pool3d`, pooling_type 'max').

    Args:
        x (Variable): (N, C, D, H, W), or (N, D, H, W, C) with data_format='NDHWC'.
        kernel_size (int or 3 ints): the window.
        stride (int or 3 ints, optional): default kernel_size.
        padding (int, 3 or 6 ints, 5 pairs, 'SAME' or 'VALID'): the padding.
        return_mask (bool): also return the int32 index d * H * W + h * W + w of each
            maximum (op `max_pool3d_with_index`; NCDHW, no ceil_mode).
        ceil_mode (bool): round the output size up.
        data_format (str): 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the pooled tensor (and the mask, with return_mask).

    Example:
        >>> x = static.data('x', [None, 3, 8, 8, 8])
        >>> F.max_pool3d(x, kernel_size=2, stride=2).shape
        (-1, 3, 4, 4, 4)
    """
    if return_mask:
        return _with_index("max_pool3d", x, kernel_size, stride, padding, ceil_mode,
                           data_format, name, False)
    return _pool3d("max_pool3d", x, "max", kernel_size, stride, padding, ceil_mode, True,
                   data_format, name)


def avg_pool3d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | str | Sequence[int] = 0, ceil_mode: bool = False,
               exclusive: bool = True, divisor_override: None = None,
               data_format: str = "NCDHW", name: str | None = None) -> Variable:
    """3-D average pooling (op `pool3d`, pooling_type 'avg').

    Args:
        x (Variable): (N, C, D, H, W), or (N, D, H, W, C) with data_format='NDHWC'.
        kernel_size (int or 3 ints): the window.
        stride (int or 3 ints, optional): default kernel_size.
        padding (int, 3 or 6 ints, 5 pairs, 'SAME' or 'VALID'): the padding.
        ceil_mode (bool): round the output size up.
        exclusive (bool): divide by the window's cells inside the input (else the padded
            window's).
        divisor_override (None): None only (numbaflow's pool3d op has no divisor).
        data_format (str): 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the pooled tensor.

    Example:
        >>> x = static.data('x', [None, 3, 8, 8, 8])
        >>> F.avg_pool3d(x, kernel_size=3, stride=2, padding=1).shape
        (-1, 3, 4, 4, 4)
    """
    if divisor_override is not None:
        raise NotImplementedError(f"avg_pool3d: divisor_override={divisor_override!r} is not "
                                  f"supported; scale the output instead (x * window / divisor)")
    return _pool3d("avg_pool3d", x, "avg", kernel_size, stride, padding, ceil_mode, exclusive,
                   data_format, name)


def _output_size(fn, x, output_size, data_format):
    _check_x(x, fn, data_format)
    sizes = _triple(output_size, "output_size", fn, allow_none=True)
    dims = x.shape[2:] if data_format == "NCDHW" else x.shape[1:4]
    for i, s in enumerate(sizes):
        if s is None:
            if dims[i] < 0:
                raise ValueError(f"{fn}: output_size None keeps input dim {i}, but x {x.name} "
                                 f"{x.shape} does not declare it")
            sizes[i] = int(dims[i])
    return sizes


def adaptive_avg_pool3d(x: Variable, output_size: int | Sequence[int | None],
                        data_format: str = "NCDHW", name: str | None = None) -> Variable:
    """Average pooling to a fixed output size with Paddle's adaptive bins (op `pool3d`,
    adaptive=True): cell (a, b, e) averages depths floor(a*D/od) .. ceil((a+1)*D/od), and
    likewise rows and columns.

    Args:
        x (Variable): (N, C, D, H, W) or (N, D, H, W, C).
        output_size (int or 3 ints): the output's D, H, W (None keeps that input dim).
        data_format (str): 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C, od, oh, ow) (or channels-last).

    Example:
        >>> x = static.data('x', [None, 3, 5, 7, 7])
        >>> F.adaptive_avg_pool3d(x, [2, 3, None]).shape
        (-1, 3, 2, 3, 7)
    """
    fn = "adaptive_avg_pool3d"
    return _pool3d(fn, x, "avg", _output_size(fn, x, output_size, data_format), None, 0,
                   False, True, data_format, name, adaptive=True)


def adaptive_max_pool3d(x: Variable, output_size: int | Sequence[int | None],
                        return_mask: bool = False, name: str | None = None) -> Variable:
    """Max pooling of NCDHW x to a fixed output size with Paddle's adaptive bins (op
    `pool3d`, adaptive=True, pooling_type 'max').

    Args:
        x (Variable): (N, C, D, H, W).
        output_size (int or 3 ints): the output's D, H, W (None keeps that input dim).
        return_mask (bool): also return the int32 index of each maximum (op
            `max_pool3d_with_index`, as Paddle).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C, od, oh, ow) (and the mask, with return_mask).

    Example:
        >>> x = static.data('x', [None, 3, 5, 7, 7])
        >>> F.adaptive_max_pool3d(x, 2).shape
        (-1, 3, 2, 2, 2)
    """
    fn = "adaptive_max_pool3d"
    sizes = _output_size(fn, x, output_size, "NCDHW")
    if return_mask:
        return _with_index(fn, x, sizes, None, 0, False, "NCDHW", name, True)
    return _pool3d(fn, x, "max", sizes, None, 0, False, True, "NCDHW", name, adaptive=True)
