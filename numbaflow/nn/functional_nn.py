"""Pooling, batch norm, dropout and embedding: the functional forms (paddle.nn.functional),
the static layers that create parameters (paddle.static.nn) and the fluid 1.x forms.

Ops: `pool2d`, `batch_norm` (running statistics updated in place: MeanOut/VarianceOut are
the Mean/Variance Variables), `dropout` (seeded from `numbaflow.seed`), `lookup_table_v2`.
Argument handling follows Paddle 2.x (python/paddle/nn/functional/{pooling,norm,common,
input}.py) and fluid 1.x (fluid/layers/nn.py).
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

from .. import tensor as M
from ..tensor._helpers import activation as _activation
from ..graph.program import Variable
from ..kernels.creation import next_op_seed
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike


def _var(x, fn, arg="x"):
    if not isinstance(x, Variable):
        raise TypeError(f"{fn}: {arg} must be a Variable, got {type(x).__name__}")
    return x


# ---------------------------------------------------------------- pooling
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


def max_pool2d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | str | Sequence[int] = 0, ceil_mode: bool = False,
               return_mask: bool = False, data_format: str = "NCHW",
               name: str | None = None) -> Variable:
    """2-D max pooling (op `pool2d`, pooling_type 'max').

    Args:
        x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        kernel_size (int or pair): the window.
        stride (int or pair, optional): default kernel_size.
        padding (int, pair, 4 ints, 'SAME' or 'VALID'): the zero padding.
        ceil_mode (bool): round the output size up.
        return_mask (bool): not supported (must be False).
        data_format (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the pooled tensor.

    Example:
        >>> x = static.data('x', [None, 3, 8, 8])
        >>> F.max_pool2d(x, kernel_size=2, stride=2).shape
        (-1, 3, 4, 4)
    """
    if return_mask:
        raise ValueError("max_pool2d: return_mask=True (max_pool2d_with_index) is not "
                         "supported; use return_mask=False")
    return _pool("max_pool2d", x, "max", kernel_size, stride, padding, ceil_mode, True,
                 data_format, name=name)


def avg_pool2d(x: Variable, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None,
               padding: int | str | Sequence[int] = 0, ceil_mode: bool = False,
               exclusive: bool = True, divisor_override: None = None,
               data_format: str = "NCHW", name: str | None = None) -> Variable:
    """2-D average pooling (op `pool2d`, pooling_type 'avg').

    Args:
        x (Variable): (N, C, H, W), or (N, H, W, C) with data_format='NHWC'.
        kernel_size (int or pair): the window.
        stride (int or pair, optional): default kernel_size.
        padding (int, pair, 4 ints, 'SAME' or 'VALID'): the zero padding.
        ceil_mode (bool): round the output size up.
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
    from .initializer import Constant
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
    from .initializer import Constant
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
    if seed is None:
        # reproducible under numbaflow.seed(n) (else the program's random_seed, else fresh
        # entropy); the kernel's generator advances each run: a new mask every step
        seed, fix_seed = next_op_seed() or helper.main_program.random_seed or 0, False
    out = helper.create_tmp(x.dtype)
    mask = helper.create_tmp(x.dtype, stop_gradient=True)     # uint8 after inference
    helper.append_op("dropout", {"X": x}, {"Out": out, "Mask": mask},
                     {"dropout_prob": p, "is_test": bool(is_test), "seed": int(seed),
                      "fix_seed": bool(fix_seed), "dropout_implementation": impl})
    return out


def dropout(x: Variable, p: float = 0.5, axis: None = None, training: bool = True,
            mode: str = "upscale_in_train", name: str | None = None) -> Variable:
    """Zero each element with probability p in training (op `dropout`).

    Args:
        x (Variable): the input.
        p (float): the drop probability in [0, 1]; 0 returns x itself (as Paddle).
        axis: not supported (must be None).
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
    if axis is not None:
        raise ValueError("dropout: axis (dropping whole slices) is not supported; leave "
                         "axis=None")
    if mode not in ("upscale_in_train", "downscale_in_infer"):
        raise ValueError(f"dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', "
                         f"got {mode!r}")
    if p == 0.0:
        return x
    impl = "downgrade_in_infer" if mode == "downscale_in_infer" else mode
    return _dropout(x, p, not training, impl, None, False, name)


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
