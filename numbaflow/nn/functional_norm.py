"""Group and instance normalisation (paddle.nn.functional): one `group_norm` /
`instance_norm` op each (Paddle's ops and outputs: kernels/nn/group_norm.py), with the
optional per-channel weight and bias. Argument checks follow Paddle
(python/paddle/nn/functional/norm.py; F.group_norm has Paddle 3's signature, which
nn.GroupNorm wraps).
"""
from __future__ import annotations

import numbers

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ..tensor._helpers import activation as _activation
from ..tensor._helpers import check_variable as _var
from ..param_init import Constant


def _affine(v, c, fn, arg):
    if v is None:
        return None
    if not isinstance(v, Variable) or tuple(v.shape) != (c,):
        raise ValueError(f"{fn}: {arg} must be a Variable of shape ({c},) (one per channel), "
                         f"got {getattr(v, 'shape', type(v).__name__)}")
    return v


def _norm(op, x, weight, bias, attrs, stats, fn, name):
    c = attrs.pop("_channels")
    helper = LayerHelper(op, name)
    ins = {"X": x}
    for slot, v, arg in (("Scale", weight, "weight"), ("Bias", bias, "bias")):
        if _affine(v, c, fn, arg) is not None:
            ins[slot] = v
    y = helper.create_tmp(x.dtype)
    outs = {"Y": y}
    for s in stats:
        outs[s] = helper.create_tmp(x.dtype, stop_gradient=True)
    helper.append_op(op, ins, outs, attrs)
    return y


def _eps(epsilon, fn):
    if not isinstance(epsilon, numbers.Real) or epsilon < 0:
        raise ValueError(f"{fn}: epsilon must be a number >= 0, got {epsilon!r}")
    return float(epsilon)


def group_norm(x: Variable, num_groups: int, epsilon: float = 1e-05,
               weight: Variable | None = None, bias: Variable | None = None,
               data_format: str = "NCHW", name: str | None = None) -> Variable:
    """Normalise each group of channels of each sample by its mean and variance, then
    scale and shift per channel (op `group_norm`).

    Args:
        x (Variable): (N, C, ...) or, with data_format 'NHWC', (N, ..., C).
        num_groups (int): the groups the C channels are split into (must divide C).
        epsilon (float): added to the variance.
        weight (Variable, optional): (C,) scale.
        bias (Variable, optional): (C,) shift.
        data_format (str): 'NCHW' (any channels-first rank) or 'NHWC'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 6, 4, 4])
        >>> F.group_norm(x, num_groups=3).shape
        (-1, 6, 4, 4)
    """
    fn = "group_norm"
    _var(x, fn)
    if data_format not in ("NCHW", "NHWC", "NCL", "NCDHW", "NLC", "NDHWC"):
        raise ValueError(f"{fn}: data_format must be channels-first ('NCHW') or channels-last "
                         f"('NHWC'), got {data_format!r}")
    if x.ndim < 2:
        raise ValueError(f"{fn}: x {x.name} must have a batch and a channel dim, got {x.shape}")
    last = data_format in ("NHWC", "NLC", "NDHWC")
    c = x.shape[-1] if last else x.shape[1]
    if not isinstance(num_groups, numbers.Integral) or num_groups < 1 or \
            (c > 0 and c % num_groups):
        raise ValueError(f"{fn}: num_groups must be a positive int dividing the {c} channels "
                         f"of {x.name}, got {num_groups!r}")
    attrs = {"epsilon": _eps(epsilon, fn), "groups": int(num_groups),
             "data_layout": "NHWC" if last else "NCHW", "_channels": c}
    return _norm("group_norm", x, weight, bias, attrs, ("Mean", "Variance"), fn, name)


def instance_norm(x: Variable, running_mean: Variable | None = None,
                  running_var: Variable | None = None, weight: Variable | None = None,
                  bias: Variable | None = None, use_input_stats: bool = True,
                  momentum: float = 0.9, eps: float = 1e-05, data_format: str = "NCHW",
                  name: str | None = None) -> Variable:
    """Normalise each channel of each sample by its own mean and variance, then scale and
    shift per channel (op `instance_norm`). As in Paddle's static mode, running_mean /
    running_var / momentum do not enter the op (statistics are always the input's).

    Args:
        x (Variable): (N, C, ...) channels first.
        running_mean (Variable, optional): accepted, unused (as Paddle).
        running_var (Variable, optional): accepted, unused (as Paddle).
        weight (Variable, optional): (C,) scale.
        bias (Variable, optional): (C,) shift.
        use_input_stats (bool): must be True.
        momentum (float): accepted, unused (as Paddle).
        eps (float): added to the variance.
        data_format (str): 'NCL', 'NCHW' or 'NCDHW'.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: x's shape.

    Example:
        >>> x = static.data('x', [None, 3, 4, 4])
        >>> F.instance_norm(x).shape
        (-1, 3, 4, 4)
    """
    fn = "instance_norm"
    _var(x, fn)
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW"):
        raise ValueError(f"{fn}: data_format must be channels-first ('NCL', 'NCHW', 'NCDHW'), "
                         f"got {data_format!r}")
    if not use_input_stats:
        raise NotImplementedError(f"{fn}: use_input_stats=False is not supported (Paddle's "
                                  f"instance_norm op always uses the input's statistics)")
    if x.ndim < 3 or x.shape[1] < 0:
        raise ValueError(f"{fn}: x {x.name} must be (N, C, ...) with at least one spatial dim "
                         f"and a known C, got {x.shape}")
    attrs = {"epsilon": _eps(eps, fn), "_channels": x.shape[1]}
    return _norm("instance_norm", x, weight, bias, attrs, ("SavedMean", "SavedVariance"), fn,
                 name)


def _static_affine(helper, x, c, param_attr, bias_attr):
    w = helper.create_parameter(param_attr, [c], x.dtype, default_initializer=Constant(1.0))
    b = helper.create_parameter(bias_attr, [c], x.dtype, is_bias=True)
    return w, b


def static_group_norm(input: Variable, groups: int, epsilon: float = 1e-05,
                      param_attr: object = None, bias_attr: object = None,
                      act: str | None = None, data_layout: str = "NCHW",
                      name: str | None = None) -> Variable:
    """paddle.static.nn.group_norm: F.group_norm with a learned per-channel scale
    `group_norm_N.w_0` (init 1) and shift `group_norm_N.b_0` (init 0), then `act`.

    Args:
        input (Variable): (N, C, ...) or, with data_layout 'NHWC', (N, ..., C).
        groups (int): the groups the C channels are split into (must divide C).
        epsilon (float): added to the variance.
        param_attr (ParamAttr, optional): the scale's attributes.
        bias_attr (ParamAttr, optional): the shift's attributes.
        act (str, optional): an activation applied last.
        data_layout (str): 'NCHW' or 'NHWC'.
        name (str, optional): a prefix for the names.

    Returns:
        Variable: input's shape.

    Example:
        >>> x = static.data('x', [None, 6, 4, 4])
        >>> static.nn.group_norm(x, groups=3).shape
        (-1, 6, 4, 4)
    """
    _var(input, "group_norm", "input")
    helper = LayerHelper("group_norm", name)
    c = input.shape[-1] if data_layout == "NHWC" else input.shape[1]
    w, b = _static_affine(helper, input, c, param_attr, bias_attr)
    return _activation(group_norm(input, groups, epsilon, w, b, data_layout), act)


def static_instance_norm(input: Variable, epsilon: float = 1e-05, param_attr: object = None,
                         bias_attr: object = None, name: str | None = None) -> Variable:
    """paddle.static.nn.instance_norm: F.instance_norm, with a learned per-channel scale
    `instance_norm_N.w_0` and shift `instance_norm_N.b_0` only when both param_attr and
    bias_attr are given (Paddle 2.6's rule: by default there are none).

    Args:
        input (Variable): (N, C, ...).
        epsilon (float): added to the variance.
        param_attr (ParamAttr, optional): the scale's attributes.
        bias_attr (ParamAttr, optional): the shift's attributes.
        name (str, optional): a prefix for the names.

    Returns:
        Variable: input's shape.

    Example:
        >>> x = static.data('x', [None, 3, 4, 4])
        >>> static.nn.instance_norm(x).shape
        (-1, 3, 4, 4)
    """
    _var(input, "instance_norm", "input")
    helper = LayerHelper("instance_norm", name)
    w = b = None
    if param_attr and bias_attr:
        w, b = _static_affine(helper, input, input.shape[1], param_attr, bias_attr)
    return instance_norm(input, weight=w, bias=b, eps=epsilon)
