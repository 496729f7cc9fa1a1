"""Pooling, batch norm, dropout and embedding: the functional forms (paddle.nn.functional),
the static layers that create parameters (paddle.static.nn) and the fluid 1.x forms.

Ops: `pool2d`, `batch_norm` (running statistics updated in place: MeanOut/VarianceOut are
the Mean/Variance Variables), `dropout` (seeded from `numbaflow.seed`), `lookup_table_v2`.
Argument handling follows Paddle 2.x (python/paddle/nn/functional/{pooling,norm,common,
input}.py) and fluid 1.x (fluid/layers/nn.py).
"""
import numbers

from .. import tensor_math as M
from ..graph.program import Variable
from ..kernels.creation import next_op_seed
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr


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


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False,
               data_format="NCHW", name=None):
    """2-D max pooling (op `pool2d`, pooling_type 'max'); stride defaults to kernel_size.

    >>> y = F.max_pool2d(x, kernel_size=2, stride=2)     # (N, C, H/2, W/2)
    """
    if return_mask:
        raise ValueError("max_pool2d: return_mask=True (max_pool2d_with_index) is not "
                         "supported; use return_mask=False")
    return _pool("max_pool2d", x, "max", kernel_size, stride, padding, ceil_mode, True,
                 data_format, name=name)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format="NCHW", name=None):
    """2-D average pooling; exclusive=True leaves padded cells out of the divisor."""
    if divisor_override is not None:
        raise ValueError("avg_pool2d: divisor_override is not supported; leave it None")
    return _pool("avg_pool2d", x, "avg", kernel_size, stride, padding, ceil_mode, exclusive,
                 data_format, name=name)


def fluid_pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0,
                 global_pooling=False, use_cudnn=True, ceil_mode=False, name=None,
                 exclusive=True, data_format="NCHW"):
    """fluid.layers.pool2d: pool_type 'max' or 'avg'; pool_size is required unless
    global_pooling."""
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


def batch_norm(x, running_mean, running_var, weight, bias, training=False, momentum=0.9,
               epsilon=1e-05, data_format="NCHW", use_global_stats=None, name=None):
    """paddle.nn.functional.batch_norm: normalise with batch statistics when `training`
    (and update running_mean / running_var in place), else with the running statistics.

    use_global_stats: None follows `training`; True always uses the running statistics;
    False always uses batch statistics (Paddle's trainable_statistics).
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


def static_batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05,
                      param_attr=None, bias_attr=None, data_layout="NCHW", in_place=False,
                      name=None, moving_mean_name=None, moving_variance_name=None,
                      do_model_average_for_mean_and_var=True, use_global_stats=False):
    """paddle.static.nn.batch_norm / fluid.layers.batch_norm.

    Creates `batch_norm_N.w_0` (scale, init 1), `batch_norm_N.b_0` (bias, init 0) and the
    persistable, non-trainable running statistics `batch_norm_N.w_1` (mean, init 0) and
    `batch_norm_N.w_2` (variance, init 1), as Paddle names them. `clone(for_test=True)`
    switches the op to the running statistics.

    >>> h = static.nn.batch_norm(static.nn.fc(x, 64), act='relu')
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
    return M._activation(y, act, helper)


fluid_batch_norm = static_batch_norm


# ---------------------------------------------------------------- dropout
def _check_p(p, fn, arg):
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


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    """paddle.nn.functional.dropout: zero each element with probability p in training;
    mode 'upscale_in_train' (default) scales kept values by 1/(1-p), 'downscale_in_infer'
    scales by (1-p) at inference. p == 0 returns x itself (as Paddle)."""
    _var(x, "dropout")
    p = _check_p(p, "dropout", "p")
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


def fluid_dropout(x, dropout_prob, is_test=None, seed=None, name=None,
                  dropout_implementation="downgrade_in_infer"):
    """fluid.layers.dropout: default 'downgrade_in_infer' (train: X * mask, test:
    X * (1 - p)). A given `seed` fixes the mask (the same every run, as Paddle's fix_seed);
    without one the mask changes each run, reproducibly under numbaflow.seed(n)."""
    _var(x, "dropout")
    p = _check_p(dropout_prob, "dropout", "dropout_prob")
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


def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    """paddle.nn.functional.embedding: rows of `weight` (vocab, dim) picked by int ids `x`;
    out shape x.shape + (dim,). Rows for padding_idx (negative counts from the end) are
    zero and get no gradient. sparse=True is accepted; the gradient is dense."""
    _var(x, "embedding"), _var(weight, "embedding", "weight")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight {weight.name} must be 2-D (vocab, dim), got "
                         f"shape {weight.shape}")
    pad = _padding_idx(padding_idx, weight.shape[0], "embedding")
    return _lookup(LayerHelper("embedding", name), x, weight, pad, sparse)


def static_embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
                     param_attr=None, dtype="float32"):
    """paddle.static.nn.embedding: creates `embedding_N.w_0` of shape `size` = [vocab, dim]
    (Xavier init) and looks `input` ids up in it."""
    _var(input, "embedding", "input")
    if not isinstance(size, (list, tuple)) or len(size) != 2 or \
            not all(isinstance(d, numbers.Integral) and d > 0 for d in size):
        raise ValueError(f"embedding: size must be [vocab_size, emb_dim] (positive ints), got "
                         f"{size!r}")
    helper = LayerHelper("embedding")
    w = helper.create_parameter(param_attr, [int(size[0]), int(size[1])], dtype)
    pad = _padding_idx(padding_idx, int(size[0]), "embedding")
    return _lookup(helper, input, w, pad, is_sparse)
