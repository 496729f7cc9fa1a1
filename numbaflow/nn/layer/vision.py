"""Rearranging and similarity layers, thin over their functionals: PixelShuffle,
PixelUnshuffle, ChannelShuffle (one table), Softmax2D, CosineSimilarity,
PairwiseDistance and Unfold (im2col)."""
from __future__ import annotations

from .. import functional as F
from ...graph.program import Variable
from .activation import make_layer
from .layers import Layer

# (class, functional, constructor arguments in Paddle's order, example input, its output)
SHUFFLES = [
    ("PixelShuffle", "pixel_shuffle", "upscale_factor: int, data_format: str = 'NCHW'",
     "2", "[None, 8, 3, 3]", "(-1, 2, 6, 6)"),
    ("PixelUnshuffle", "pixel_unshuffle", "downscale_factor: int, data_format: str = 'NCHW'",
     "2", "[None, 2, 6, 6]", "(-1, 8, 3, 3)"),
    ("ChannelShuffle", "channel_shuffle", "groups: int, data_format: str = 'NCHW'",
     "3", "[None, 6, 2, 2]", "(-1, 6, 2, 2)"),
]

__all__ = ["Softmax2D", "CosineSimilarity", "PairwiseDistance", "Unflatten"]
for _cls, _fn, _sig, _arg, _shape, _out in SHUFFLES:
    globals()[_cls] = make_layer(_cls, _fn, _sig, doc=(
        f"F.{_fn} as a layer.\n\n    Args:\n"
        f"        {_sig.split(':')[0]} (int): as in F.{_fn}.\n"
        f"        data_format (str): 'NCHW' or 'NHWC'.\n"
        f"        name (str, optional): a prefix for the output's name.\n\n"
        f"    Example:\n        >>> layer = paddle.nn.{_cls}({_arg})\n"
        f"        >>> layer(static.data('x', {_shape})).shape\n        {_out}\n"))
    globals()[_cls].__module__ = __name__
    __all__.append(_cls)


class Softmax2D(Layer):
    """Softmax over the channels of a 3-D (C, H, W) or 4-D (N, C, H, W) input (axis -3).

    Args:
        name (str, optional): a prefix for the output's name.

    Example:
        >>> paddle.nn.Softmax2D()(static.data('x', [None, 3, 2, 2])).shape
        (-1, 3, 2, 2)
    """

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        self._name = name

    def forward(self, x: Variable) -> Variable:
        """The channel softmax of x.

        Args:
            x (Variable): 3-D or 4-D.

        Returns:
            Variable: x's shape.
        """
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2D: x {x.name} must be 3-D or 4-D, got {x.shape}")
        return F.softmax(x, axis=-3, name=self._name)


class CosineSimilarity(Layer):
    """F.cosine_similarity as a layer.

    Args:
        axis (int): the vector dim.
        eps (float): keeps the division finite.

    Example:
        >>> a, b = static.data('a', [None, 4]), static.data('b', [None, 4])
        >>> paddle.nn.CosineSimilarity()(a, b).shape
        (-1,)
    """

    def __init__(self, axis: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self._axis, self._eps = axis, eps

    def forward(self, x1: Variable, x2: Variable) -> Variable:
        """The cosine similarity of x1 and x2.

        Args:
            x1 (Variable): the first vectors.
            x2 (Variable): the second.

        Returns:
            Variable: x1's shape without `axis`.
        """
        return F.cosine_similarity(x1, x2, axis=self._axis, eps=self._eps)


PairwiseDistance = make_layer(
    "PairwiseDistance", "pairwise_distance",
    "p: float = 2.0, epsilon: float = 1e-6, keepdim: bool = False", ("x", "y"), doc=(
        "F.pairwise_distance as a layer.\n\n    Args:\n"
        "        p (float): the norm's order.\n        epsilon (float): added to x - y.\n"
        "        keepdim (bool): keep the last dim.\n"
        "        name (str, optional): accepted for Paddle compatibility.\n\n"
        "    Example:\n        >>> a, b = static.data('a', [None, 4]), static.data('b', [None, 4])\n"
        "        >>> paddle.nn.PairwiseDistance()(a, b).shape\n        (-1,)\n"))
PairwiseDistance.__module__ = __name__


class Unflatten(Layer):
    """Split dim `axis` of the input into `shape` (Paddle's paddle.unflatten; one reshape2,
    unknown leading dims copied with 0).

    Args:
        axis (int): the dim to split.
        shape (list of int): its new dims (one may be -1).
        name (str, optional): accepted for Paddle compatibility.

    Example:
        >>> paddle.nn.Unflatten(1, [2, 3])(static.data('x', [None, 6, 4])).shape
        (-1, 2, 3, 4)
    """

    def __init__(self, axis: int, shape: list[int] | tuple[int, ...],
                 name: str | None = None) -> None:
        super().__init__()
        self.axis, self.shape = axis, list(shape)

    def forward(self, input: Variable) -> Variable:
        """input with dim `axis` split.

        Args:
            input (Variable): the input.

        Returns:
            Variable: the reshaped input.
        """
        from ... import tensor as M
        dims, axis = list(input.shape), self.axis % max(input.ndim, 1)
        if not 0 <= self.axis + (input.ndim if self.axis < 0 else 0) < input.ndim:
            raise ValueError(f"Unflatten: axis {self.axis} is not a dim of {input.name} "
                             f"(shape {tuple(dims)})")
        after = dims[axis + 1:]
        if any(d < 0 for d in after) and (-1 in self.shape or sum(d < 0 for d in after) > 1):
            raise ValueError(f"Unflatten: {input.name} (shape {tuple(dims)}) has unknown dims "
                             f"after axis {self.axis}; numbaflow's reshape needs them known")
        target = [0 if d < 0 else d for d in dims[:axis]] + self.shape + after
        return M.reshape(input, target)

    def extra_repr(self) -> str:
        """axis and shape.

        Returns:
            str: e.g. 'axis=1, shape=[2, 3]'.
        """
        return f"axis={self.axis}, shape={self.shape}"


Unfold = make_layer(
    "Unfold", "unfold", "kernel_sizes: int | list[int], dilations: int | list[int] = 1, "
    "paddings: int | list[int] = 0, strides: int | list[int] = 1", doc=(
        "F.unfold (im2col) as a layer, with Paddle's argument order.\n\n    Args:\n"
        "        kernel_sizes (int or list of 2 int): the block's size.\n"
        "        dilations (int or list of 2 int): the spacing of a block's cells.\n"
        "        paddings (int or list of 2 or 4 int): zeros around the input.\n"
        "        strides (int or list of 2 int): the step between blocks.\n"
        "        name (str, optional): a prefix for the output's name.\n\n"
        "    Example:\n        >>> paddle.nn.Unfold([2, 2], strides=2)(static.data('x', "
        "[None, 3, 4, 4])).shape\n        (-1, 12, 4)\n"))
Unfold.__module__ = __name__
__all__.append("Unfold")
