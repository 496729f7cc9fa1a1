"""Batch norm, dropout and embedding: the functional forms (paddle.nn.functional), the
static layers that create parameters (paddle.static.nn) and the fluid 1.x forms (pooling:
functional_pool.py).

Ops: `batch_norm` (running statistics updated in place: MeanOut/VarianceOut are
the Mean/Variance Variables), `dropout` (seeded from `numbaflow.seed`), `lookup_table_v2`.
Argument handling follows Paddle 2.x (python/paddle/nn/functional/{norm,common,input}.py)
and fluid 1.x (fluid/layers/nn.py).
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import tensor as M
from ..tensor._helpers import activation as _activation
from ..tensor._helpers import check_variable as _var
from ..graph.program import Variable
from ..kernels.tensor.creation import next_op_seed
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike


# ---------------------------------------------------------------- batch norm
def _channels(x, layout, fn):
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"{fn}: data format must be 'NCHW' or 'NHWC', got {layout!r}")
    if not 2 <= x.ndim <= 5:
        raise ValueError(f"{fn}: input {x.name} must have rank 2 to 5, got shape {x.shape}")
    c = x.shape[-1] if layout == "NHWC" and x.ndim > 2 else x.shape[1]
    if c < 0:
        raise ValueError(f"{fn}: the channel dim of input {x.name} {x.shape} must be known")
    return c


def _append_bn(helper, x, scale, bias, mean, var, attrs):
    saved_mean = helper.create_tmp(x.dtype, stop_gradient=True)
    saved_var = helper.create_tmp(x.dtype, stop_gradient=True)
    y = helper.create_tmp(x.dtype)
    helper.append_op("batch_norm",
                     {"X": x, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": var},
                     {"Y": y, "MeanOut": mean, "VarianceOut": var, "SavedMean": saved_mean,
                      "SavedVariance": saved_var}, attrs)
    return y


def batch_norm(x: Variable, running_mean: Variable, running_var: Variable, weight: Variable,
               bias: Variable, training: bool = False, momentum: float = 0.9,
               epsilon: float = 1e-05, data_format: str = "NCHW",
               use_global_stats: bool | None = None, name: str | None = None) -> Variable:
    """Batch normalisation with given statistics and affine parameters (op `batch_norm`):
    batch statistics when `training` (running_mean / running_var updated in place), else
    the running statistics.

    Args:
        x (Variable): (N, C, ...) or channels-last per data_format.
        running_mean (Variable): (C,), persistable.
        running_var (Variable): (C,), persistable.
        weight (Variable): the scale, (C,).
        bias (Variable): the shift, (C,).
        training (bool): use (and update with) the batch statistics.
        momentum (float): running = momentum * running + (1 - momentum) * batch.
        epsilon (float): added to the variance.
        data_format (str): 'NCHW' (also 'NC', 'NCL') or 'NHWC' (also 'NLC').
        use_global_stats (bool, optional): None follows `training`; True always uses the
            running statistics; False always the batch ones.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> mean, var = paddle.full([3], 0.0), paddle.full([3], 1.0)
        >>> w, b = paddle.full([3], 1.0), paddle.full([3], 0.0)
        >>> F.batch_norm(x, mean, var, w, b).shape
        (-1, 3, 8, 8)
    """
    _var(x, "batch_norm")
    for nm, v in (("running_mean", running_mean), ("running_var", running_var),
                  ("weight", weight), ("bias", bias)):
        _var(v, "batch_norm", nm)
    layout = "NHWC" if data_format in ("NHWC", "NLC", "NDHWC") else \
        "NCHW" if data_format in ("NCHW", "NC", "NCL", "NCDHW") else data_format
    _channels(x, layout, "batch_norm")
    if use_global_stats is None:
        use_global_stats, trainable_stats = not training, False
    else:
        trainable_stats = not use_global_stats
    helper = LayerHelper("batch_norm", name)
    return _append_bn(helper, x, weight, bias, running_mean, running_var, {
        "momentum": float(momentum), "epsilon": float(epsilon), "is_test": not training,
        "data_layout": layout, "use_global_stats": bool(use_global_stats),
        "trainable_statistics": bool(trainable_stats)})


def _fixed_param(attr, value):
    """bias_attr/param_attr=False: a constant, non-trainable parameter."""
    from ..param_init import Constant
    return ParamAttr(initializer=Constant(value), trainable=False) if attr is False else attr


def static_batch_norm(input: Variable, act: str | None = None, is_test: bool = False,
                      momentum: float = 0.9, epsilon: float = 1e-05,
                      param_attr: ParamAttr | bool | None = None,
                      bias_attr: ParamAttr | bool | None = None, data_layout: str = "NCHW",
                      in_place: bool = False, name: str | None = None,
                      moving_mean_name: str | None = None,
                      moving_variance_name: str | None = None,
                      do_model_average_for_mean_and_var: bool = True,
                      use_global_stats: bool = False) -> Variable:
    """Batch normalisation layer with its own parameters (`static.nn.batch_norm`,
    `fluid.layers.batch_norm`).

    Creates `batch_norm_N.w_0` (scale, init 1), `batch_norm_N.b_0` (bias, init 0) and the
    persistable, non-trainable running statistics `batch_norm_N.w_1` (mean, init 0) and
    `batch_norm_N.w_2` (variance, init 1), as Paddle names them. `clone(for_test=True)`
    switches the op to the running statistics.

    Args:
        input (Variable): (N, C, ...) or channels-last per data_layout; floating point.
        act (str, optional): an activation applied after.
        is_test (bool): use the running statistics.
        momentum (float): running = momentum * running + (1 - momentum) * batch.
        epsilon (float): added to the variance.
        param_attr (ParamAttr or False, optional): the scale's; False fixes it at 1.
        bias_attr (ParamAttr or False, optional): the bias's; False fixes it at 0.
        data_layout (str): 'NCHW' or 'NHWC'.
        in_place (bool): accepted for Paddle compatibility.
        name (str, optional): the layer's name prefix.
        moving_mean_name (str, optional): the running mean's name.
        moving_variance_name (str, optional): the running variance's name.
        do_model_average_for_mean_and_var (bool): accepted for Paddle compatibility.
        use_global_stats (bool): always use the running statistics.

    Returns:
        Variable: input's shape.

    Example:
        >>> x = static.data('x', [None, 4])
        >>> h = static.nn.batch_norm(static.nn.fc(x, 8), act='relu')
        >>> h.shape
        (-1, 8)
    """
    from ..param_init import Constant
    _var(input, "batch_norm", "input")
    if input.dtype.kind != "f":
        raise TypeError(f"batch_norm: input {input.name} must be float32 or float64, got "
                        f"{input.dtype}")
    c = _channels(input, data_layout, "batch_norm")
    helper = LayerHelper("batch_norm", name)
    dt = input.dtype
    scale = helper.create_parameter(_fixed_param(param_attr, 1.0), [c], dt,
                                    default_initializer=Constant(1.0))
    bias = helper.create_parameter(_fixed_param(bias_attr, 0.0), [c], dt, is_bias=True)
    mean = helper.create_parameter(ParamAttr(name=moving_mean_name, initializer=Constant(0.0),
                                             trainable=False), [c], dt)
    var = helper.create_parameter(ParamAttr(name=moving_variance_name,
                                            initializer=Constant(1.0), trainable=False), [c], dt)
    y = _append_bn(helper, input, scale, bias, mean, var, {
        "momentum": float(momentum), "epsilon": float(epsilon), "is_test": bool(is_test),
        "data_layout": data_layout, "use_global_stats": bool(use_global_stats),
        "trainable_statistics": False})
    return _activation(y, act, helper)


fluid_batch_norm = static_batch_norm


# ---------------------------------------------------------------- dropout
def check_probability(p, fn, arg):
    """float(p) for a probability argument `arg` of `fn` in [0, 1], else a typed error."""
    if isinstance(p, Variable) or not isinstance(p, numbers.Real) or isinstance(p, bool):
        raise TypeError(f"{fn}: {arg} must be a float in [0, 1], got {type(p).__name__}")
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{fn}: {arg} must be in [0, 1], got {p}")
    return float(p)


def _dropout(x, p, is_test, impl, seed, fix_seed, name):
    helper = LayerHelper("dropout", name)
    if seed is None and helper.main_program.random_seed:
        # Paddle 2.6: a program's random_seed fixes its dropout ops' seed (over paddle.seed)
        seed, fix_seed = helper.main_program.random_seed, True
    if seed is None:
        # reproducible under numbaflow.seed(n), else fresh entropy; the kernel's generator
        # advances each run: a new mask every step
        seed, fix_seed = next_op_seed() or 0, False
    out = helper.create_tmp(x.dtype)
    mask = helper.create_tmp(x.dtype, stop_gradient=True)     # uint8 after inference
    helper.append_op("dropout", {"X": x}, {"Out": out, "Mask": mask},
                     {"dropout_prob": p, "is_test": bool(is_test), "seed": int(seed),
                      "fix_seed": bool(fix_seed), "dropout_implementation": impl})
    return out


def dropout(x: Variable, p: float = 0.5, axis: int | Sequence[int] | None = None,
            training: bool = True, mode: str = "upscale_in_train",
            name: str | None = None) -> Variable:
    """Zero each element with probability p in training (op `dropout`); with `axis`, whole
    slices: one draw per index of the `axis` dims, shared along the others.

    Args:
        x (Variable): the input.
        p (float): the drop probability in [0, 1]; 0 returns x itself (as Paddle).
        axis (int or list of int, optional): the dims that get their own draws (Paddle's;
            dropout2d is axis=[0, 1]): the `dropout` op runs on a ones tensor of those
            dims (the others 1) and x is multiplied by that mask.
        training (bool): False is the inference behaviour.
        mode (str): 'upscale_in_train' (kept values scaled by 1/(1-p) in training) or
            'downscale_in_infer' (outputs scaled by (1-p) at inference).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> F.dropout(x, p=0.1).shape
        (-1, 3)
    """
    _var(x, "dropout")
    p = check_probability(p, "dropout", "p")
    if mode not in ("upscale_in_train", "downscale_in_infer"):
        raise ValueError(f"dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', "
                         f"got {mode!r}")
    if p == 0.0:
        return x
    impl = "downgrade_in_infer" if mode == "downscale_in_infer" else mode
    if axis is None:
        return _dropout(x, p, not training, impl, None, False, name)
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    if not axes or any(not -x.ndim <= a < x.ndim for a in axes):
        raise ValueError(f"dropout: axis must be dims of x {x.name} (shape {x.shape}), got "
                         f"{axis!r}")
    axes = {a % x.ndim for a in axes}
    ones = M.ones_like(x[tuple(slice(None) if d in axes else slice(0, 1)
                               for d in range(x.ndim))])
    return M.multiply(x, _dropout(ones, p, not training, impl, None, False, None), name=name)


def _dropout_nd(fn, n, x, p, training, data_format, name):
    _var(x, fn)
    formats = ("NCHW", "NHWC") if n == 2 else ("NCDHW", "NDHWC")
    if x.ndim != n + 2:
        raise ValueError(f"{fn}: x {x.name} must be {n + 2}-D, got shape {x.shape}")
    if data_format not in formats:
        raise ValueError(f"{fn}: data_format must be {formats[0]!r} or {formats[1]!r}, got "
                         f"{data_format!r}")
    axis = [0, 1] if data_format == formats[0] else [0, n + 1]
    return dropout(x, p, axis=axis, training=training, name=name)


def dropout2d(x: Variable, p: float = 0.5, training: bool = True, data_format: str = "NCHW",
              name: str | None = None) -> Variable:
    """Zero whole channels of a 4-D x with probability p in training, the kept ones scaled
    by 1 / (1 - p) (Paddle's: dropout with axis=[0, 1], or [0, 3] for NHWC).

    Args:
        x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        p (float): the drop probability in [0, 1].
        training (bool): False is the identity.
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3, 4, 4])
        >>> F.dropout2d(x, p=0.2).shape
        (-1, 3, 4, 4)
    """
    return _dropout_nd("dropout2d", 2, x, p, training, data_format, name)


def dropout3d(x: Variable, p: float = 0.5, training: bool = True, data_format: str = "NCDHW",
              name: str | None = None) -> Variable:
    """Zero whole channels of a 5-D x with probability p in training, the kept ones scaled
    by 1 / (1 - p) (Paddle's: dropout with axis=[0, 1], or [0, 4] for NDHWC).

    Args:
        x (Variable): (N, C, D, H, W), or (N, D, H, W, C) with data_format='NDHWC'.
        p (float): the drop probability in [0, 1].
        training (bool): False is the identity.
        data_format (str): 'NCDHW' or 'NDHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3, 2, 4, 4])
        >>> F.dropout3d(x, p=0.2).shape
        (-1, 3, 2, 4, 4)
    """
    return _dropout_nd("dropout3d", 3, x, p, training, data_format, name)


def fluid_dropout(x: Variable, dropout_prob: float, is_test: bool | None = None,
                  seed: int | None = None, name: str | None = None,
                  dropout_implementation: str = "downgrade_in_infer") -> Variable:
    """Paddle 1.x `fluid.layers.dropout` (op `dropout`).

    Default 'downgrade_in_infer' (train: X * mask, test: X * (1 - p)). A given `seed` fixes
    the mask (the same every run, as Paddle's fix_seed); without one the mask changes each
    run, reproducibly under numbaflow.seed(n).

    Args:
        x (Variable): the input.
        dropout_prob (float): the drop probability in [0, 1].
        is_test (bool, optional): inference behaviour.
        seed (int, optional): fix the mask; 0 or None means not fixed.
        name (str, optional): a prefix for the output's name.
        dropout_implementation (str): 'downgrade_in_infer' or 'upscale_in_train'.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> fluid.layers.dropout(x, dropout_prob=0.5).shape
        (-1, 3)
    """
    _var(x, "dropout")
    p = check_probability(dropout_prob, "dropout", "dropout_prob")
    if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
        raise ValueError(f"dropout: dropout_implementation must be 'downgrade_in_infer' or "
                         f"'upscale_in_train', got {dropout_implementation!r}")
    if p == 0.0:
        return x
    if seed is not None and (not isinstance(seed, numbers.Integral) or isinstance(seed, bool)):
        raise TypeError(f"dropout: seed must be an int or None, got {type(seed).__name__}")
    seed = seed or None         # Paddle: seed 0 means "not fixed"
    return _dropout(x, p, bool(is_test), dropout_implementation, seed, seed is not None, name)


# ---------------------------------------------------------------- embedding
def _padding_idx(padding_idx, vocab, fn):
    if padding_idx is None:
        return -1
    if not isinstance(padding_idx, numbers.Integral) or not -vocab <= padding_idx < vocab:
        raise ValueError(f"{fn}: padding_idx must be an int in [-{vocab}, {vocab}), got "
                         f"{padding_idx!r}")
    return int(padding_idx) if padding_idx >= 0 else int(vocab + padding_idx)


def _lookup(helper, ids, w, padding_idx, sparse):
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids {ids.name} must be int64 (or int32), got {ids.dtype}; "
                        f"cast them with paddle.cast(x, 'int64')")
    return helper.simple("lookup_table_v2", {"W": w, "Ids": ids},
                         {"padding_idx": padding_idx, "is_sparse": bool(sparse)},
                         dtype=w.dtype)


def embedding(x: Variable, weight: Variable, padding_idx: int | None = None,
              sparse: bool = False, name: str | None = None) -> Variable:
    """Rows of `weight` (vocab, dim) picked by int ids `x` (op `lookup_table_v2`).

    Args:
        x (Variable): int64 (or int32) ids.
        weight (Variable): the table, (vocab, dim).
        padding_idx (int, optional): this id (negative counts from the end) gives a zero
            row and no gradient.
        sparse (bool): accepted; the gradient is dense.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x.shape + (dim,).

    Example:
        >>> ids = static.data('ids', [None, 5], dtype='int64')
        >>> table = paddle.full([100, 8], 0.5)
        >>> F.embedding(ids, table).shape
        (-1, 5, 8)
    """
    _var(x, "embedding"), _var(weight, "embedding", "weight")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight {weight.name} must be 2-D (vocab, dim), got "
                         f"shape {weight.shape}")
    pad = _padding_idx(padding_idx, weight.shape[0], "embedding")
    return _lookup(LayerHelper("embedding", name), x, weight, pad, sparse)


def static_embedding(input: Variable, size: Sequence[int], is_sparse: bool = False,
                     is_distributed: bool = False, padding_idx: int | None = None,
                     param_attr: ParamAttr | None = None,
                     dtype: DTypeLike = "float32") -> Variable:
    """Embedding layer with its own table (`static.nn.embedding`): creates
    `embedding_N.w_0` of shape `size` = [vocab, dim] (Xavier init) and looks `input` ids
    up in it.

    Args:
        input (Variable): int64 (or int32) ids.
        size (pair of int): [vocab, dim].
        is_sparse (bool): accepted; the gradient is dense.
        is_distributed (bool): accepted for Paddle compatibility.
        padding_idx (int, optional): this id gives a zero row and no gradient.
        param_attr (ParamAttr, optional): the table's name / initializer.
        dtype (str or numpy dtype): the table's dtype.

    Returns:
        Variable: input.shape + (dim,).

    Example:
        >>> ids = static.data('ids', [None, 5], dtype='int64')
        >>> static.nn.embedding(ids, size=[100, 8]).shape
        (-1, 5, 8)
    """
    _var(input, "embedding", "input")
    if not isinstance(size, (list, tuple)) or len(size) != 2 or \
            not all(isinstance(d, numbers.Integral) and d > 0 for d in size):
        raise ValueError(f"embedding: size must be [vocab_size, emb_dim] (positive ints), got "
                         f"{size!r}")
    helper = LayerHelper("embedding")
    w = helper.create_parameter(param_attr, [int(size[0]), int(size[1])], dtype)
    pad = _padding_idx(padding_idx, int(size[0]), "embedding")
    return _lookup(helper, input, w, pad, is_sparse)
