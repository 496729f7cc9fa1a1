"""More fluid.layers functions with Paddle 1.8's names, arguments and output shapes."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import static
from ... import tensor as M
from ...graph.program import Variable
from ...layer_helper import LayerHelper
from ...tensor._helpers import activation as _activation
from ...tensor.generator import named

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import DTypeLike

__all__ = ["embedding", "one_hot", "topk", "layer_norm", "sigmoid_cross_entropy_with_logits",
           "transpose", "scale", "split", "squeeze", "unsqueeze", "flatten", "exp", "log",
           "sqrt", "square", "abs", "leaky_relu", "clip", "log_softmax", "reduce_max",
           "reduce_min", "reduce_mean", "reduce_sum"]


def _var(x, fn, arg="input"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


def scalar_1d(v):
    """Paddle 1.x gives a full reduction shape [1], not 0-D: reshape a 0-D result to (1,)."""
    if v.ndim:
        return v
    return LayerHelper("reshape2").simple("reshape2", {"X": v}, {"shape": [1]})


def embedding(input: Variable, size: Sequence[int], is_sparse: bool = False,
              is_distributed: bool = False, padding_idx: int | None = None,
              param_attr: object = None, dtype: DTypeLike = "float32") -> Variable:
    """Paddle 1.8's fluid.layers.embedding (op lookup_table): int ids of shape (..., 1) ->
    (..., emb_dim). `fluid.embedding` takes ids without the trailing 1.

    Args:
        input (Variable): int64 ids whose last dim is 1.
        size (list of int): [vocab_size, emb_dim]; creates the table `embedding_N.w_0`.
        is_sparse (bool): accepted; gradients are dense.
        is_distributed (bool): accepted for Paddle compatibility.
        padding_idx (int, optional): this id looks up zeros and gets no gradient.
        param_attr (ParamAttr or str, optional): the table's attributes; a name shares it.
        dtype (str): the table's dtype.

    Returns:
        Variable: input.shape[:-1] + (emb_dim,).

    Example:
        >>> ids = fluid.layers.data('ids', [1], dtype='int64')
        >>> fluid.layers.embedding(ids, size=[100, 8]).shape
        (-1, 8)
    """
    _var(input, "embedding")
    if input.ndim < 1 or input.shape[-1] != 1:
        raise ValueError(f"fluid.layers.embedding: ids {input.name} must have a last dim of 1 "
                         f"(shape (N, 1)), got {input.shape}; use fluid.embedding for ids "
                         f"without it")
    ids = M.squeeze(input, [-1]) if input.ndim > 1 else input
    return static.nn.embedding(ids, size, is_sparse, is_distributed, padding_idx, param_attr,
                               dtype)


def one_hot(input: Variable, depth: int, allow_out_of_range: bool = False) -> Variable:
    """Int ids of shape (..., 1) -> float32 one-hot rows (..., depth) (op one_hot).

    Args:
        input (Variable): int32 / int64 ids whose last dim is 1.
        depth (int): the number of classes.
        allow_out_of_range (bool): an id outside [0, depth) gives a row of zeros instead
            of a ValueError at run time.

    Returns:
        Variable: float32, input.shape[:-1] + (depth,).

    Example:
        >>> label = fluid.layers.data('label', [1], dtype='int64')
        >>> fluid.layers.one_hot(label, depth=10).shape
        (-1, 10)
    """
    _var(input, "one_hot")
    return LayerHelper("one_hot").simple(
        "one_hot", {"X": input}, {"depth": int(depth), "dtype": "float32",
                                  "allow_out_of_range": bool(allow_out_of_range)},
        dtype="float32")


def topk(input: Variable, k: int, name: str | None = None) -> tuple[Variable, Variable]:
    """The k largest entries along the last axis, descending (op top_k); equal values keep
    index order. Differentiable in the values.

    Args:
        input (Variable): the scores.
        k (int): how many.
        name (str, optional): a prefix for the outputs' names.

    Returns:
        tuple: (values, indices), each input.shape[:-1] + (k,); indices are int64.

    Example:
        >>> x = fluid.layers.data('x', [10])
        >>> values, indices = fluid.layers.topk(x, k=3)
        >>> values.shape, str(indices.dtype)
        ((-1, 3), 'int64')
    """
    _var(input, "topk")
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"topk: k must be a positive int, got {k!r}")
    helper = LayerHelper("top_k", name)
    values, indices = helper.create_tmp(input.dtype), helper.create_tmp("int64", True)
    helper.append_op("top_k", {"X": input}, {"Out": values, "Indices": indices}, {"k": k})
    return values, indices


def sigmoid_cross_entropy_with_logits(x: Variable, label: Variable, ignore_index: int = -100,
                                      name: str | None = None,
                                      normalize: bool = False) -> Variable:
    """Elementwise logistic loss of logits `x` against targets `label` in [0, 1]:
    max(x, 0) - x * label + log(1 + exp(-|x|)); 0 where label == ignore_index.

    Args:
        x (Variable): logits.
        label (Variable): targets of x's shape and dtype.
        ignore_index (int): a label value that contributes no loss.
        name (str, optional): a prefix for the output's name.
        normalize (bool): divide by the number of labels that are not ignore_index.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [5])
        >>> y = fluid.layers.data('y', [5])
        >>> fluid.layers.sigmoid_cross_entropy_with_logits(x, y).shape
        (-1, 5)
    """
    _var(x, "sigmoid_cross_entropy_with_logits", "x")
    _var(label, "sigmoid_cross_entropy_with_logits", "label")
    if x.dtype != label.dtype:
        raise TypeError(f"sigmoid_cross_entropy_with_logits: label {label.name} ({label.dtype}) "
                        f"must have the dtype of x {x.name} ({x.dtype})")
    out = LayerHelper("sigmoid_cross_entropy_with_logits", name).simple(
        "sigmoid_cross_entropy_with_logits", {"X": x, "Label": label},
        {"ignore_index": int(ignore_index)})
    if not normalize:
        return out
    helper = LayerHelper("sigmoid_cross_entropy_with_logits_norm")
    ignore = M.full([1], float(ignore_index), label.dtype)
    kept = helper.simple("not_equal", {"X": label, "Y": ignore}, {"axis": -1}, dtype="bool")
    count = M.sum(M.cast(kept, x.dtype))
    return out / M.maximum(count, M.full([], 1.0, x.dtype))


def split(input: Variable, num_or_sections: int | Sequence[int], dim: int = -1,
          name: str | None = None) -> list[Variable]:
    """Split along `dim` into equal parts or parts of the given sizes (op split).

    Args:
        input (Variable): the input.
        num_or_sections (int or list of int): the number of equal parts, or their sizes.
        dim (int): the axis.
        name (str, optional): a prefix for the outputs' names.

    Returns:
        list of Variable: the parts.

    Example:
        >>> x = fluid.layers.data('x', [6])
        >>> [p.shape for p in fluid.layers.split(x, [2, 4], dim=1)]
        [(-1, 2), (-1, 4)]
    """
    return M.split(input, num_or_sections, dim, name)


def squeeze(input: Variable, axes: Sequence[int], name: str | None = None) -> Variable:
    """Drop size-1 dims `axes` (op squeeze2).

    Args:
        input (Variable): the input.
        axes (list of int): the dims to drop.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the squeezed tensor.

    Example:
        >>> x = fluid.layers.data('x', [1, 3])
        >>> fluid.layers.squeeze(x, [1]).shape
        (-1, 3)
    """
    return M.squeeze(input, axes, name)


def unsqueeze(input: Variable, axes: Sequence[int], name: str | None = None) -> Variable:
    """Insert size-1 dims at `axes` (op unsqueeze2).

    Args:
        input (Variable): the input.
        axes (list of int): where to insert, one after another.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the expanded tensor.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.unsqueeze(x, [1]).shape
        (-1, 1, 3)
    """
    return M.unsqueeze(input, axes, name)


def flatten(x: Variable, axis: int = 1, name: str | None = None) -> Variable:
    """Paddle 1.x flatten: a 2-D result (prod(dims[:axis]), prod(dims[axis:])).

    Args:
        x (Variable): the input.
        axis (int): where the second dim starts (0 .. rank).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: 2-D.

    Example:
        >>> x = fluid.layers.data('x', [3, 4, 5])
        >>> fluid.layers.flatten(x, axis=2).shape
        (-1, 20)
    """
    _var(x, "flatten", "x")
    if not 0 <= axis <= x.ndim:
        raise ValueError(f"flatten: axis must be in [0, {x.ndim}], got {axis}")
    if axis == 0:
        return M.reshape(M.flatten(x, 0, -1, name), [1, -1])
    left = M.flatten(x, 0, axis - 1, name) if axis > 1 else x
    return M.flatten(left, 1, -1) if axis < x.ndim else M.unsqueeze(left, [1])


# the 1.x spellings whose signature is the 2.x function's: that function itself
exp, log, sqrt, square, abs, transpose, scale = (M.exp, M.log, M.sqrt, M.square, M.abs,
                                                M.transpose, M.scale)


def leaky_relu(x: Variable, alpha: float = 0.02, name: str | None = None) -> Variable:
    """x where x > 0, else alpha * x (op leaky_relu).

    Args:
        x (Variable): the input.
        alpha (float): the slope below 0.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.leaky_relu(x, alpha=0.1).shape
        (-1, 3)
    """
    return LayerHelper("leaky_relu", name).simple("leaky_relu", {"X": _var(x, "leaky_relu", "x")},
                                                  {"alpha": float(alpha)})


def clip(x: Variable, min: float, max: float, name: str | None = None) -> Variable:
    """x limited to [min, max] (op clip).

    Args:
        x (Variable): the input.
        min (float): the lower bound.
        max (float): the upper bound.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = fluid.layers.data('x', [3])
        >>> fluid.layers.clip(x, -1.0, 1.0).shape
        (-1, 3)
    """
    return M.clip(x, min, max, name)


def log_softmax(input: Variable, axis: int = -1, name: str | None = None) -> Variable:
    """log(softmax(input)) along `axis` (op log_softmax).

    Args:
        input (Variable): the input.
        axis (int): the axis.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: input's shape.

    Example:
        >>> x = fluid.layers.data('x', [10])
        >>> fluid.layers.log_softmax(x).shape
        (-1, 10)
    """
    from ...nn import functional as F
    return F.log_softmax(input, axis, name=name)


_REDUCE_DOC = """{what} over `dim` (op reduce_{op}).

Args:
    input (Variable): the input.
    dim (int or list of int, optional): the axes; None for every axis (shape (1,), as
        in Paddle 1.8).
    keep_dim (bool): keep the reduced axes with size 1.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: the reduced tensor.

Example:
    >>> x = fluid.layers.data('x', [3])
    >>> fluid.layers.reduce_{op}(x).shape, fluid.layers.reduce_{op}(x, dim=1).shape
    ((1,), (-1,))
    >>> fluid.layers.reduce_{op}(x, dim=1, keep_dim=True).shape
    (-1, 1)
"""


def _reduce_layer(op: str, what: str) -> Callable[..., Variable]:
    reduce_2x = getattr(M, op)

    def reduce(input: Variable, dim: int | Sequence[int] | None = None, keep_dim: bool = False,
               name: str | None = None) -> Variable:
        return scalar_1d(reduce_2x(input, axis=dim, keepdim=keep_dim, name=name))
    return named(reduce, f"reduce_{op}", __name__,
                 _REDUCE_DOC.format(op=op, what=what))


reduce_mean, reduce_sum, reduce_max, reduce_min = (_reduce_layer(*row) for row in (
    ("mean", "Mean"), ("sum", "Sum"), ("max", "Maximum"), ("min", "Minimum")))


from ...nn.functional_transformer import static_layer_norm as layer_norm  # noqa: E402,F401
