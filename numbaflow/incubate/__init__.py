"""paddle.incubate: the fused attention softmax under Paddle's names.

`softmax_mask_fuse(x, mask)` and `softmax_mask_fuse_upper_triangle(x)` are the op
`fused_softmax_mask` (kernels/fused/softmax_mask.py) with scale 1: softmax over the last axis of
x + mask, or of x with the positions above the diagonal of each [.., Tq, Tk] matrix
left out (probability 0), in one pass over the data forward and backward. Hand-written
attention (`matmul -> scale -> + mask -> softmax`) and F.scaled_dot_product_attention
run the same op.
"""
from __future__ import annotations

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import check_variable

__all__ = ["softmax_mask_fuse", "softmax_mask_fuse_upper_triangle"]


def softmax_mask_fuse(x: Variable, mask: Variable, name: str | None = None) -> Variable:
    """softmax(x + mask) over the last axis, one op (`fused_softmax_mask`); the mask gets
    no gradient (as in Paddle).

    Args:
        x (Variable): the scores, float32 or float64, e.g. [batch, heads, Tq, Tk].
        mask (Variable): x's dtype, broadcast over x's leading dims (e.g. [batch, 1, Tq,
            Tk]) with x's last dim.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape and dtype.

    Example:
        >>> x = static.data('x', [None, 2, 4, 4])
        >>> m = static.data('m', [None, 1, 4, 4])
        >>> paddle.incubate.softmax_mask_fuse(x, m).shape
        (-1, 2, 4, 4)
    """
    check_variable(x, "softmax_mask_fuse")
    check_variable(mask, "softmax_mask_fuse", "mask")
    return LayerHelper("softmax_mask_fuse", name).simple(
        "fused_softmax_mask", {"X": x, "Mask": mask}, {"scale": 1.0, "causal": False})


def softmax_mask_fuse_upper_triangle(x: Variable) -> Variable:
    """softmax over the last axis of x with the upper triangle (j > i of each [.., Tq, Tk]
    matrix) masked out: causal attention weights, one op (`fused_softmax_mask` with
    causal=True), no mask tensor.

    Args:
        x (Variable): the scores, float32 or float64, rank >= 2.

    Returns:
        Variable: x's shape and dtype; row i has zeros after position i.

    Example:
        >>> x = static.data('x', [None, 2, 4, 4])
        >>> paddle.incubate.softmax_mask_fuse_upper_triangle(x).shape
        (-1, 2, 4, 4)
    """
    check_variable(x, "softmax_mask_fuse_upper_triangle")
    return LayerHelper("softmax_mask_fuse_upper_triangle").simple(
        "fused_softmax_mask", {"X": x}, {"scale": 1.0, "causal": True})
