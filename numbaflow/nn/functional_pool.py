"""Pooling: paddle.nn.functional's max_pool2d / avg_pool2d and fluid 1.x's pool2d (op
`pool2d`). Argument handling follows Paddle 2.x (python/paddle/nn/functional/pooling.py)
and fluid 1.x (fluid/layers/nn.py).
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import tensor as M
from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import check_variable as _var
from ..tensor.generator import shared_doc as _shared_doc

if TYPE_CHECKING:
    from collections.abc import Sequence


def _int_pair(v, what, fn):
    vals = list(v) if isinstance(v, (list, tuple)) else [v, v]
    if len(vals) != 2 or not all(isinstance(d, numbers.Integral) for d in vals):
        raise ValueError(f"{fn}: {what} must be an int or a list of 2 ints, got {v!r}")
    if any(d <= 0 for d in vals):
        raise ValueError(f"{fn}: {what} must be positive, got {v!r}")
    return [int(d) for d in vals]


def _padding(padding, data_format, fn):
    """(paddings attr, padding_algorithm attr) from Paddle's padding argument: 'SAME' /
    'VALID', an int, [pad_h, pad_w], [top, bottom, left, right], or 4 [before, after]
    pairs in data_format order (the batch and channel pairs must be 0)."""
    if isinstance(padding, str):
        algo = padding.upper()
        if algo not in ("SAME", "VALID"):
            raise ValueError(f"{fn}: padding string must be 'SAME' or 'VALID', got {padding!r}")
        return [0, 0], algo
    if isinstance(padding, numbers.Integral):
        pads = [int(padding)] * 2
    elif isinstance(padding, (list, tuple)) and len(padding) == 4 and \
            all(isinstance(p, (list, tuple)) for p in padding):
        spatial = padding[2:] if data_format == "NCHW" else padding[1:3]
        other = padding[:2] if data_format == "NCHW" else [padding[0], padding[3]]
        if any(int(p) != 0 for pair in other for p in pair):
            raise ValueError(f"{fn}: padding on the batch and channel dims must be 0, got "
                             f"{padding!r}")
        pads = [int(p) for pair in spatial for p in pair]
    elif isinstance(padding, (list, tuple)) and len(padding) in (2, 4) and \
            all(isinstance(p, numbers.Integral) for p in padding):
        pads = [int(p) for p in padding]
    else:
        raise ValueError(f"{fn}: padding must be 'SAME', 'VALID', an int, [pad_h, pad_w] or "
                         f"[top, bottom, left, right], got {padding!r}")
    if any(p < 0 for p in pads):
        raise ValueError(f"{fn}: padding must be >= 0, got {padding!r}")
    return pads, "EXPLICIT"


# the arguments max_pool2d and avg_pool2d share, documented once
_POOL_ARGS = """x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        kernel_size (int or pair): the window.
        stride (int or pair, optional): default kernel_size.
        padding (int, pair, 4 ints, 'SAME' or 'VALID'): the zero padding.
        ceil_mode (bool): round the output size up."""
# ... and the end of max_pool1d's and avg_pool1d's
_POOL1D_END = """ceil_mode (bool): round the output length up.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C, L_out)."""


def _pool(fn, x, pooling_type, kernel_size, stride, padding, ceil_mode, exclusive,
          data_format, global_pooling=False, name=None):
    _var(x, fn)
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if x.ndim != 4:
        raise ValueError(f"{fn}: x {x.name} must be 4-D ({data_format}), got shape {x.shape}")
    ksize = [1, 1] if global_pooling else _int_pair(kernel_size, "kernel_size", fn)
    strides = ksize if stride is None else _int_pair(stride, "stride", fn)
    paddings, algo = _padding(padding, data_format, fn)
    if algo == "VALID" and ceil_mode:
        raise ValueError(f"{fn}: ceil_mode must be False when padding is 'VALID'")
    return LayerHelper("pool2d", name).simple("pool2d", {"X": x}, {
        "pooling_type": pooling_type, "ksize": ksize, "strides": strides,
        "paddings": paddings, "padding_algorithm": algo, "ceil_mode": bool(ceil_mode),
        "exclusive": bool(exclusive), "global_pooling": bool(global_pooling),
        "adaptive": False, "data_format": data_format})


@_shared_doc(pool_args=_POOL_ARGS)
def max_pool2d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | str | Sequence[int] = 0, ceil_mode: bool = False,
               return_mask: bool = False, data_format: str = "NCHW",
               name: str | None = None) -> Variable:
    """2-D max pooling (op `pool2d`, pooling_type 'max').

    Args:
        {pool_args}
        return_mask (bool): also return the int32 index h * W + w of each maximum
            (op `max_pool2d_with_index`; NCHW, no ceil_mode, symmetric padding).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the pooled tensor (and the mask, with return_mask).

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> F.max_pool2d(x, kernel_size=2, stride=2).shape
        (-1, 3, 4, 4)
    """
    if return_mask:
        return _with_index("max_pool2d", x, kernel_size, stride, padding, ceil_mode,
                           data_format, name)
    return _pool("max_pool2d", x, "max", kernel_size, stride, padding, ceil_mode, True,
                 data_format, name=name)


@_shared_doc(pool_args=_POOL_ARGS)
def avg_pool2d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | str | Sequence[int] = 0, ceil_mode: bool = False,
               exclusive: bool = True, divisor_override: None = None,
               data_format: str = "NCHW", name: str | None = None) -> Variable:
    """2-D average pooling (op `pool2d`, pooling_type 'avg').

    Args:
        {pool_args}
        exclusive (bool): leave padded cells out of the divisor.
        divisor_override: not supported (must be None).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the pooled tensor.

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> F.avg_pool2d(x, kernel_size=2).shape
        (-1, 3, 4, 4)
    """
    if divisor_override is not None:
        raise ValueError("avg_pool2d: divisor_override is not supported; leave it None")
    return _pool("avg_pool2d", x, "avg", kernel_size, stride, padding, ceil_mode, exclusive,
                 data_format, name=name)


def fluid_pool2d(input: Variable, pool_size: int | Sequence[int] = -1, pool_type: str = "max",
                 pool_stride: int | Sequence[int] = 1,
                 pool_padding: int | str | Sequence[int] = 0, global_pooling: bool = False,
                 use_cudnn: bool = True, ceil_mode: bool = False, name: str | None = None,
                 exclusive: bool = True, data_format: str = "NCHW") -> Variable:
    """Paddle 1.x `fluid.layers.pool2d` (op `pool2d`).

    Args:
        input (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        pool_size (int or pair): the window; required unless global_pooling.
        pool_type (str): 'max' or 'avg'.
        pool_stride (int or pair): the stride.
        pool_padding (int, pair, 4 ints, 'SAME' or 'VALID'): the zero padding.
        global_pooling (bool): pool over the whole H x W.
        use_cudnn (bool): accepted and ignored.
        ceil_mode (bool): round the output size up.
        name (str, optional): a prefix for the output's name.
        exclusive (bool): for 'avg', leave padded cells out of the divisor.
        data_format (str): 'NCHW' or 'NHWC'.

    Returns:
        Variable: the pooled tensor.

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> fluid.layers.pool2d(x, pool_size=2, pool_stride=2).shape
        (-1, 3, 4, 4)
        >>> fluid.layers.pool2d(x, pool_type='avg', global_pooling=True).shape
        (-1, 3, 1, 1)
    """
    if pool_type not in ("max", "avg"):
        raise ValueError(f"pool2d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    if not global_pooling and (pool_size == -1 or pool_size is None):
        raise ValueError(f"pool2d: when global_pooling is False, pool_size must be given; "
                         f"received pool_size={pool_size!r}")
    return _pool("pool2d", input, pool_type, pool_size, pool_stride, pool_padding, ceil_mode,
                 exclusive, data_format, global_pooling=global_pooling, name=name)


# ---------------------------------------------------------------- adaptive
def _adaptive(fn, x, output_size, pooling_type, data_format, name, sizes_only=False):
    """One `pool2d` op with adaptive=True and ksize = the output size (Paddle's lowering):
    cell i of an axis of size H covers rows floor(i*H/out) .. ceil((i+1)*H/out)."""
    _var(x, fn)
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if x.ndim != 4:
        raise ValueError(f"{fn}: x {x.name} must be 4-D ({data_format}), got shape {x.shape}")
    hw = x.shape[2:4] if data_format == "NCHW" else x.shape[1:3]
    if isinstance(output_size, numbers.Integral):
        sizes = [int(output_size)] * 2
    elif isinstance(output_size, (list, tuple)) and len(output_size) == 2:
        sizes = [d if o is None else o for o, d in zip(output_size, hw)]
    else:
        raise ValueError(f"{fn}: output_size must be an int or a list of 2 (int or None), got "
                         f"{output_size!r}")
    if not all(isinstance(o, numbers.Integral) and o >= 1 for o in sizes):
        raise ValueError(f"{fn}: output_size must be positive (None keeps a known input "
                         f"size), got {output_size!r} for x of shape {x.shape}")
    if sizes_only:
        return [int(o) for o in sizes]
    return LayerHelper("pool2d", name).simple("pool2d", {"X": x}, {
        "pooling_type": pooling_type, "ksize": [int(o) for o in sizes], "adaptive": True,
        "data_format": data_format})


def _with_index(fn, x, kernel_size, stride, padding, ceil_mode, data_format, name,
                adaptive=False):
    """(Out, Mask) of one `max_pool2d_with_index` op, as Paddle's return_mask=True."""
    _var(x, fn)
    if data_format != "NCHW" or x.ndim != 4 or ceil_mode:
        raise ValueError(f"{fn}: return_mask=True needs a 4-D NCHW x and ceil_mode=False, got "
                         f"{x.name} {x.shape}, data_format {data_format!r}, ceil_mode {ceil_mode}")
    if adaptive:
        ksize, strides, pads = list(kernel_size), [1, 1], [0, 0]
    else:
        ksize = _int_pair(kernel_size, "kernel_size", fn)
        strides = ksize if stride is None else _int_pair(stride, "stride", fn)
        pads, algo = _padding(padding, data_format, fn)
        if algo == "SAME":
            raise ValueError(f"{fn}: padding 'SAME' with return_mask=True is not supported")
        pads = [0, 0] if algo == "VALID" else pads
        if len(pads) == 4:
            if pads[0] != pads[1] or pads[2] != pads[3]:
                raise ValueError(f"{fn}: return_mask=True needs symmetric padding, got {pads}")
            pads = [pads[0], pads[2]]
    helper = LayerHelper("max_pool2d_with_index", name)
    out, mask = helper.create_tmp(x.dtype), helper.create_tmp("int32", stop_gradient=True)
    helper.append_op("max_pool2d_with_index", {"X": x}, {"Out": out, "Mask": mask},
                     {"ksize": ksize, "strides": strides, "paddings": pads,
                      "global_pooling": False, "adaptive": adaptive})
    return out, mask


def adaptive_avg_pool2d(x: Variable, output_size: int | Sequence[int | None],
                        data_format: str = "NCHW", name: str | None = None) -> Variable:
    """Average pooling to a fixed output size with Paddle's adaptive bins (op `pool2d`,
    adaptive=True): cell (i, j) averages rows floor(i*H/oh) .. ceil((i+1)*H/oh) and
    likewise columns, so any input size pools to any output size.

    Args:
        x (Variable): (N, C, H, W) or (N, H, W, C).
        output_size (int or pair): the output's H and W (None keeps that input dim).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C, oh, ow) or (N, oh, ow, C).

    Example:
        >>> x = static.data('x', [None, 3, 7, 7])
        >>> F.adaptive_avg_pool2d(x, 1).shape, F.adaptive_avg_pool2d(x, [3, None]).shape
        ((-1, 3, 1, 1), (-1, 3, 3, 7))
    """
    return _adaptive("adaptive_avg_pool2d", x, output_size, "avg", data_format, name)


def adaptive_max_pool2d(x: Variable, output_size: int | Sequence[int | None],
                        return_mask: bool = False, name: str | None = None) -> Variable:
    """Max pooling of NCHW x to a fixed output size with Paddle's adaptive bins (op
    `pool2d`, adaptive=True, pooling_type 'max').

    Args:
        x (Variable): (N, C, H, W).
        output_size (int or pair): the output's H and W (None keeps that input dim).
        return_mask (bool): also return the int32 index h * W + w of each maximum (op
            `max_pool2d_with_index`, as Paddle).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C, oh, ow) (and the mask, with return_mask).

    Example:
        >>> x = static.data('x', [None, 3, 7, 7])
        >>> F.adaptive_max_pool2d(x, 3).shape
        (-1, 3, 3, 3)
    """
    if return_mask:
        sizes = _adaptive("adaptive_max_pool2d", x, output_size, "max", "NCHW", None,
                          sizes_only=True)
        return _with_index("adaptive_max_pool2d", x, sizes, None, 0, False, "NCHW", name,
                           adaptive=True)
    return _adaptive("adaptive_max_pool2d", x, output_size, "max", "NCHW", name)


def _adaptive_1d(fn, x, output_size, pooling_type, name):
    """Paddle's lowering of the 1-D poolings: unsqueeze (N, C, L) to (N, C, 1, L), pool2d
    to [1, output_size], squeeze."""
    _var(x, fn)
    if x.ndim != 3:
        raise ValueError(f"{fn}: x {x.name} must be 3-D (N, C, L), got shape {x.shape}")
    if not isinstance(output_size, numbers.Integral) or output_size < 1:
        raise ValueError(f"{fn}: output_size must be a positive int, got {output_size!r}")
    y = _adaptive(fn, M.unsqueeze(x, [2]), [1, int(output_size)], pooling_type, "NCHW", None)
    return M.squeeze(y, [2], name=name)


def adaptive_avg_pool1d(x: Variable, output_size: int, name: str | None = None) -> Variable:
    """Average pooling of (N, C, L) x to length `output_size` with Paddle's adaptive bins
    (unsqueeze, `pool2d` adaptive, squeeze).

    Args:
        x (Variable): (N, C, L).
        output_size (int): the output length.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C, output_size).

    Example:
        >>> x = static.data('x', [None, 4, 10])
        >>> F.adaptive_avg_pool1d(x, 3).shape
        (-1, 4, 3)
    """
    return _adaptive_1d("adaptive_avg_pool1d", x, output_size, "avg", name)


def adaptive_max_pool1d(x: Variable, output_size: int, return_mask: bool = False,
                        name: str | None = None) -> Variable:
    """Max pooling of (N, C, L) x to length `output_size` with Paddle's adaptive bins
    (unsqueeze, `pool2d` adaptive, squeeze).

    Args:
        x (Variable): (N, C, L).
        output_size (int): the output length.
        return_mask (bool): also return the int32 index along L of each maximum.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C, output_size) (and the mask, with return_mask).

    Example:
        >>> x = static.data('x', [None, 4, 10])
        >>> F.adaptive_max_pool1d(x, 4).shape
        (-1, 4, 4)
    """
    if return_mask:
        _adaptive_1d("adaptive_max_pool1d", x, output_size, "max", name)   # checks x, size
        out = _with_index("adaptive_max_pool1d", M.unsqueeze(x, [2]), [1, int(output_size)],
                          None, 0, False, "NCHW", None, adaptive=True)
        return tuple(M.squeeze(v, [2]) for v in out)
    return _adaptive_1d("adaptive_max_pool1d", x, output_size, "max", name)


def _pool_1d(fn, x, kernel_size, stride, padding):
    """Paddle's lowering of max_pool1d / avg_pool1d: (N, C, L) unsqueezed to (N, C, 1, L),
    window [1, k], stride [1, s], padding [0, p] or [0, 0, left, right]."""
    _var(x, fn)
    if x.ndim != 3:
        raise ValueError(f"{fn}: x {x.name} must be 3-D (N, C, L), got shape {x.shape}")

    def one(v, what):
        vals = list(v) if isinstance(v, (list, tuple)) else [v]
        if len(vals) != 1 or not isinstance(vals[0], numbers.Integral):
            raise ValueError(f"{fn}: {what} must be an int or a list of 1 int, got {v!r}")
        return [1, int(vals[0])]
    if isinstance(padding, str):
        pads = padding
    elif isinstance(padding, (list, tuple)) and len(padding) == 2:
        pads = [0, 0, *padding]
    else:
        pads = [0, one(padding, "padding")[1]]
    return (M.unsqueeze(x, [2]), one(kernel_size, "kernel_size"),
            None if stride is None else one(stride, "stride"), pads)


@_shared_doc(pool1d_end=_POOL1D_END)
def max_pool1d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None, padding: int | str | Sequence[int] = 0,
               return_mask: bool = False, ceil_mode: bool = False,
               name: str | None = None) -> Variable:
    """1-D max pooling of (N, C, L) x (unsqueeze, `pool2d` 'max' with a [1, k] window,
    squeeze; Paddle's lowering).

    Args:
        x (Variable): (N, C, L).
        kernel_size (int or [int]): the window.
        stride (int or [int], optional): default kernel_size.
        padding (int, [int], [left, right], 'SAME' or 'VALID'): the padding.
        return_mask (bool): also return the int32 index along L of each maximum (op
            `max_pool2d_with_index` on the unsqueezed x, as Paddle).
        {pool1d_end}

    Example:
        >>> x = static.data('x', [None, 3, 8])
        >>> F.max_pool1d(x, kernel_size=2, stride=2).shape
        (-1, 3, 4)
    """
    x4, k, s, p = _pool_1d("max_pool1d", x, kernel_size, stride, padding)
    if return_mask:     # the mask indexes L: the (1, L) plane's h * L + w with h = 0
        out = _with_index("max_pool1d", x4, k, s, p, ceil_mode, "NCHW", None)
        return tuple(M.squeeze(v, [2]) for v in out)
    y = _pool("max_pool1d", x4, "max", k, s, p, ceil_mode, True, "NCHW")
    return M.squeeze(y, [2], name=name)


@_shared_doc(pool1d_end=_POOL1D_END)
def avg_pool1d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None, padding: int | str | Sequence[int] = 0,
               exclusive: bool = True, ceil_mode: bool = False,
               name: str | None = None) -> Variable:
    """1-D average pooling of (N, C, L) x (unsqueeze, `pool2d` 'avg' with a [1, k] window,
    squeeze; Paddle's lowering).

    Args:
        x (Variable): (N, C, L).
        kernel_size (int or [int]): the window.
        stride (int or [int], optional): default kernel_size.
        padding (int, [int], [left, right], 'SAME' or 'VALID'): the zero padding.
        exclusive (bool): leave padded cells out of the divisor.
        {pool1d_end}

    Example:
        >>> x = static.data('x', [None, 3, 8])
        >>> F.avg_pool1d(x, kernel_size=3, stride=1, padding=1).shape
        (-1, 3, 8)
    """
    x4, k, s, p = _pool_1d("avg_pool1d", x, kernel_size, stride, padding)
    y = _pool("avg_pool1d", x4, "avg", k, s, p, ceil_mode, exclusive, "NCHW")
    return M.squeeze(y, [2], name=name)
