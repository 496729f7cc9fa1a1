"""Resizing in paddle.nn.functional (Paddle 2.6 signatures): interpolate / upsample on 4-D
input, one `nearest_interp_v2` or `bilinear_interp_v2` op (mode 'area' is
adaptive_avg_pool2d, as in Paddle). Argument checks follow
python/paddle/nn/functional/common.py.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import check_variable as _var
from ..tensor.generator import shared_doc as _shared_doc
from .functional_pool import adaptive_avg_pool2d

if TYPE_CHECKING:
    from collections.abc import Sequence

_MODES = ("nearest", "bilinear", "area")
_PADDLE_MODES = ("linear", "bilinear", "trilinear", "nearest", "bicubic", "area")


def _size(size, fn):
    if isinstance(size, Variable):
        raise NotImplementedError(f"{fn}: size as a Variable (op input OutSize) is not "
                                  f"supported; give a list of 2 ints")
    if isinstance(size, (list, tuple)) and any(isinstance(s, Variable) for s in size):
        raise NotImplementedError(f"{fn}: size entries as Variables (op input SizeTensor) are "
                                  f"not supported; give a list of 2 ints")
    if not isinstance(size, (list, tuple)) or len(size) != 2 or \
            not all(isinstance(s, numbers.Integral) and s > 0 for s in size):
        raise ValueError(f"{fn}: size must be a list or tuple of 2 positive ints [out_h, "
                         f"out_w] for 4-D x, got {size!r}")
    return [int(s) for s in size]


def _scale(scale_factor, fn):
    if isinstance(scale_factor, Variable):
        raise NotImplementedError(f"{fn}: scale_factor as a Variable (op input Scale) is not "
                                  f"supported; give a number or a list of 2 numbers")
    s = [scale_factor] * 2 if isinstance(scale_factor, numbers.Real) else scale_factor
    if not isinstance(s, (list, tuple)) or len(s) != 2 or \
            not all(isinstance(v, numbers.Real) and v > 0 for v in s):
        raise ValueError(f"{fn}: scale_factor must be a positive number or a list of 2 "
                         f"positive numbers for 4-D x, got {scale_factor!r}")
    return [float(v) for v in s]


# the end of interpolate's and upsample's docstrings, written once
_RESIZE_END = """data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the resized tensor."""


@_shared_doc(resize_end=_RESIZE_END)
def interpolate(x: Variable, size: Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool = False, align_mode: int = 0, data_format: str = "NCHW",
                name: str | None = None) -> Variable:
    """Resize 4-D x to `size` or by `scale_factor` (ops `nearest_interp_v2`,
    `bilinear_interp_v2`, with Paddle's index rules: see kernels/nn/interp.py).

    Args:
        x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        size (list of 2 ints, optional): [out_h, out_w].
        scale_factor (number or 2 numbers, optional): out = int(in * scale); give size or
            scale_factor, not both.
        mode (str): 'nearest', 'bilinear' or 'area' (adaptive average pooling to size).
        align_corners (bool): bilinear only: map the corner pixels onto each other.
        align_mode (int): bilinear without align_corners: 0 half-pixel sources, 1 ratio * k.
        {resize_end}

    Example:
        >>> x = static.data('x', [None, 3, 4, 5])
        >>> F.interpolate(x, scale_factor=2, mode='bilinear').shape
        (-1, 3, 8, 10)
        >>> F.interpolate(x, size=[3, 7]).shape
        (-1, 3, 3, 7)
    """
    fn = "interpolate"
    _var(x, fn)
    if not isinstance(mode, str) or mode.lower() not in _PADDLE_MODES:
        raise ValueError(f"{fn}: mode must be one of {list(_PADDLE_MODES)}, got {mode!r}")
    mode = mode.lower()
    if mode not in _MODES or x.ndim != 4:
        raise NotImplementedError(f"{fn}: mode {mode!r} on a {x.ndim}-D x is not supported; "
                                  f"numbaflow has {list(_MODES)} on 4-D x")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: data_format must be 'NCHW' or 'NHWC' for 4-D x, got "
                         f"{data_format!r}")
    if align_corners and mode != "bilinear":
        raise ValueError(f"{fn}: align_corners option can only be set with the interpolating "
                         f"modes: linear | bilinear | bicubic | trilinear (mode is {mode!r})")
    if align_mode not in (0, 1):
        raise ValueError(f"{fn}: align_mode can only be 0 or 1, got {align_mode!r}")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{fn}: give exactly one of size and scale_factor (got size={size!r}, "
                         f"scale_factor={scale_factor!r})")
    if mode == "area":
        if size is None:
            raise ValueError(f"{fn}: mode 'area' needs size")
        return adaptive_avg_pool2d(x, _size(size, fn), data_format, name)
    attrs = {"data_layout": data_format, "out_d": -1, "out_h": -1, "out_w": -1, "scale": [],
             "interp_method": mode, "align_corners": bool(align_corners),
             "align_mode": int(align_mode)}
    if size is not None:
        attrs["out_h"], attrs["out_w"] = _size(size, fn)
    else:
        attrs["scale"] = _scale(scale_factor, fn)
    op = f"{mode}_interp_v2"
    return LayerHelper(op, name).simple(op, {"X": x}, attrs)


@_shared_doc(resize_end=_RESIZE_END)
def upsample(x: Variable, size: Sequence[int] | None = None,
             scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
             align_corners: bool = False, align_mode: int = 0, data_format: str = "NCHW",
             name: str | None = None) -> Variable:
    """Paddle's alias of `interpolate` (same arguments, same ops).

    Args:
        x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        size (list of 2 ints, optional): [out_h, out_w].
        scale_factor (number or 2 numbers, optional): out = int(in * scale).
        mode (str): 'nearest', 'bilinear' or 'area'.
        align_corners (bool): bilinear only: map the corner pixels onto each other.
        align_mode (int): 0 or 1 (see interpolate).
        {resize_end}

    Example:
        >>> x = static.data('x', [None, 3, 4, 5])
        >>> F.upsample(x, scale_factor=[2, 3]).shape
        (-1, 3, 8, 15)
    """
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format,
                       name)


def zeropad2d(x: Variable, padding: int | Sequence[int], data_format: str = "NCHW",
              name: str | None = None) -> Variable:
    """Zero padding of a 4-D x: F.pad with [left, right, top, bottom] (an int: all four).

    Args:
        x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        padding (int or list of 4 int): [left, right, top, bottom].
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x padded.

    Example:
        >>> x = static.data('x', [None, 3, 4, 4])
        >>> F.zeropad2d(x, [1, 1, 2, 0]).shape
        (-1, 3, 6, 6)
    """
    from .functional_transformer import pad
    pads = [int(padding)] * 4 if isinstance(padding, numbers.Integral) else list(padding)
    return pad(x, pads, mode="constant", value=0.0, data_format=data_format, name=name)


def _shuffle_dims(x, fn, data_format):
    _var(x, fn)
    if x.ndim != 4 or data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: x {x.name} must be 4-D with data_format 'NCHW' or 'NHWC', got "
                         f"shape {x.shape} and {data_format!r}")
    n, c, h, w = (x.shape[i] for i in ((0, 1, 2, 3) if data_format == "NCHW" else (0, 3, 1, 2)))
    if min(c, h, w) < 0:
        raise ValueError(f"{fn}: x {x.name}'s channels, height and width must be known, got "
                         f"{x.shape}")
    return c, h, w


def _rearrange(x, data_format, split, perm, merged):
    """Reshape channels-first x (NHWC transposed there and back) to `split`, permute,
    reshape to `merged`: the pixel/channel shuffles' lowering (Paddle's maths)."""
    from .. import tensor as M
    if data_format == "NHWC":
        x = M.transpose(x, [0, 3, 1, 2])
    y = M.reshape(M.transpose(M.reshape(x, [-1] + split), perm), [-1] + merged)
    return M.transpose(y, [0, 2, 3, 1]) if data_format == "NHWC" else y


def pixel_shuffle(x: Variable, upscale_factor: int, data_format: str = "NCHW",
                  name: str | None = None) -> Variable:
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r): out[n, c, h*r + i, w*r + j] =
    x[n, c*r^2 + i*r + j, h, w] (reshape, transpose, reshape).

    Args:
        x (Variable): 4-D.
        upscale_factor (int): r.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: the rearranged x.

    Example:
        >>> x = static.data('x', [None, 8, 3, 3])
        >>> F.pixel_shuffle(x, 2).shape
        (-1, 2, 6, 6)
    """
    c, h, w = _shuffle_dims(x, "pixel_shuffle", data_format)
    r = int(upscale_factor)
    if r < 1 or c % (r * r):
        raise ValueError(f"pixel_shuffle: the {c} channels must be divisible by "
                         f"upscale_factor^2 = {r * r}")
    return _rearrange(x, data_format, [c // (r * r), r, r, h, w], [0, 1, 4, 2, 5, 3],
                      [c // (r * r), h * r, w * r])


def pixel_unshuffle(x: Variable, downscale_factor: int, data_format: str = "NCHW",
                    name: str | None = None) -> Variable:
    """The inverse of pixel_shuffle: (N, C, H * r, W * r) -> (N, C * r^2, H, W).

    Args:
        x (Variable): 4-D.
        downscale_factor (int): r (must divide H and W).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: the rearranged x.

    Example:
        >>> x = static.data('x', [None, 2, 6, 6])
        >>> F.pixel_unshuffle(x, 2).shape
        (-1, 8, 3, 3)
    """
    c, h, w = _shuffle_dims(x, "pixel_unshuffle", data_format)
    r = int(downscale_factor)
    if r < 1 or h % r or w % r:
        raise ValueError(f"pixel_unshuffle: height {h} and width {w} must be divisible by "
                         f"downscale_factor {r}")
    return _rearrange(x, data_format, [c, h // r, r, w // r, r], [0, 1, 3, 5, 2, 4],
                      [c * r * r, h // r, w // r])


def channel_shuffle(x: Variable, groups: int, data_format: str = "NCHW",
                    name: str | None = None) -> Variable:
    """Interleave the channels of `groups` groups: (N, g, C/g, H, W) transposed to
    (N, C/g, g, H, W) (ShuffleNet's).

    Args:
        x (Variable): 4-D.
        groups (int): g (must divide C).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): accepted for Paddle compatibility.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 6, 2, 2])
        >>> F.channel_shuffle(x, 3).shape
        (-1, 6, 2, 2)
    """
    c, h, w = _shuffle_dims(x, "channel_shuffle", data_format)
    g = int(groups)
    if g < 1 or c % g:
        raise ValueError(f"channel_shuffle: groups {g} must divide the {c} channels")
    return _rearrange(x, data_format, [g, c // g, h, w], [0, 2, 1, 3, 4], [c, h, w])


def _pairs(v, n, what):
    v = [int(v)] * n if isinstance(v, numbers.Integral) else [int(e) for e in v]
    if n == 4 and len(v) == 2:
        v = v * 2                           # [h, w] -> [top, left, bottom, right], as Paddle
    if len(v) != n:
        raise ValueError(f"unfold: {what} must be an int or {n} ints, got {v}")
    return v


def unfold(x: Variable, kernel_sizes: int | Sequence[int], strides: int | Sequence[int] = 1,
           paddings: int | Sequence[int] = 0, dilations: int | Sequence[int] = 1,
           name: str | None = None) -> Variable:
    """im2col: each sliding kernel_sizes block of a 4-D x as a column (op `unfold`, as Paddle).

    Args:
        x (Variable): (N, C, H, W).
        kernel_sizes (int or list of 2 int): the block's [height, width].
        strides (int or list of 2 int): the step between blocks.
        paddings (int or list of 2 or 4 int): zeros around x: [h, w] or [top, left,
            bottom, right].
        dilations (int or list of 2 int): the spacing of a block's cells.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: (N, C * kh * kw, L), L the number of blocks.

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> F.unfold(x, [3, 3], paddings=1).shape
        (-1, 27, 64)
    """
    _var(x, "unfold")
    if x.ndim != 4:
        raise ValueError(f"unfold: x {x.name} must be 4-D (N, C, H, W), got shape {x.shape}")
    attrs = {"kernel_sizes": _pairs(kernel_sizes, 2, "kernel_sizes"),
             "strides": _pairs(strides, 2, "strides"),
             "paddings": _pairs(paddings, 4, "paddings"),
             "dilations": _pairs(dilations, 2, "dilations")}
    return LayerHelper("unfold", name).simple("unfold", {"X": x}, attrs, out_slot="Y")
