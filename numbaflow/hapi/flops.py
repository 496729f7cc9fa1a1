"""paddle.flops: a network's multiply-accumulate count, with Paddle 2.6's rules.

From a Layer, every leaf layer of a type in `LAYER_RULES` (or in custom_ops) is counted
from its input and output shapes as Paddle's hapi/dynamic_flops.py counts it (a
convolution: output elements x (input channels / groups x kernel elements + bias);
Linear: in_features x output elements, the bias not counted; ...); other leaf types
count zero. The forward is traced into a scratch program, so nothing runs. From a
static Program, the ops are counted as Paddle's hapi/static_flops.py counts them
(conv2d, pool2d, mul/matmul, batch_norm, elementwise_*; the batch dimension left out).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import nn, static


class _Traced:
    """What a count function receives for a layer's input or output: Paddle's count
    functions read `.shape` and `.numel()`, and the traced Variables have shapes only."""

    def __init__(self, var):
        self.shape = [int(d) for d in var.shape]
        self.dtype = var.dtype

    def numel(self) -> int:
        return int(np.prod(self.shape))


def _conv(m, x, y):
    # Paddle's in_channels / groups, read from the filter: [out, in / groups, k...], or for a
    # transposed convolution [in, out / groups, k...] (so in / groups = in * w[1] / out)
    w = m.weight.shape
    per_group = x[0].shape[1] * w[1] / y.shape[1] if "Transpose" in type(m).__name__ else w[1]
    bias = 1 if getattr(m, "bias", None) is not None else 0
    m.total_ops += abs(int(y.numel() * (per_group * int(np.prod(w[2:])) + bias)))


def _numel_in(m, x, y):
    m.total_ops += int(x[0].numel())


def _batch_norm(m, x, y):            # counted as in eval mode: scale and shift
    m.total_ops += 2 * int(x[0].numel())


def _linear(m, x, y):
    m.total_ops += abs(int(m.weight.shape[0] * y.numel()))


def _avg_pool(m, x, y):
    m.total_ops += int(y.numel())


def _adaptive_avg_pool(m, x, y):
    kernel = np.array(x[0].shape[2:]) // np.array(y.shape[2:])
    m.total_ops += abs(int((int(np.prod(kernel)) + 1) * y.numel()))


def _zero(m, x, y):
    m.total_ops += 0


# Paddle 2.6's register_hooks, by class name (exact type, as Paddle matches them);
# names numbaflow does not have yet are skipped.
_RULES_BY_NAME = {
    "Conv1D": _conv, "Conv2D": _conv, "Conv3D": _conv, "Conv1DTranspose": _conv,
    "Conv2DTranspose": _conv, "Conv3DTranspose": _conv, "BatchNorm2D": _batch_norm,
    "BatchNorm": _batch_norm, "ReLU": _zero, "ReLU6": _zero, "LeakyReLU": _numel_in,
    "Linear": _linear, "Dropout": _zero, "AvgPool1D": _avg_pool, "AvgPool2D": _avg_pool,
    "AvgPool3D": _avg_pool, "AdaptiveAvgPool1D": _adaptive_avg_pool,
    "AdaptiveAvgPool2D": _adaptive_avg_pool, "AdaptiveAvgPool3D": _adaptive_avg_pool,
}
LAYER_RULES = {getattr(nn, k): f for k, f in _RULES_BY_NAME.items() if hasattr(nn, k)}


class _Table:
    """Paddle's flops table: centred cells, each column as wide as its widest cell + 2."""

    def __init__(self, heads):
        self.heads, self.rows = heads, []

    def add_row(self, row):
        self.rows.append([str(c) for c in row])

    def print_table(self):
        widths = [max(len(str(r[i])) for r in [self.heads] + self.rows)
                  for i in range(len(self.heads))]
        shelf = "".join("+" + "-" * (w + 2) for w in widths) + "+"
        line = lambda row: "".join("|" + str(c).center(w + 2)   # noqa: E731
                                   for c, w in zip(row, widths)) + "|"
        print("\n".join([shelf, line(self.heads), shelf] + [line(r) for r in self.rows]
                        + [shelf]))


def flops(net: Any, input_size: Any = None, custom_ops: dict | None = None,
          print_detail: bool = False) -> int:
    """The FLOPs of a network (Paddle's paddle.flops), printed and returned.

    Args:
        net (paddle.nn.Layer or paddle.static.Program): the network.
        input_size (list of int): the input's shape, batch included (Paddle's examples use
            batch 1; the counts scale with it). Needed for a Layer.
        custom_ops (dict, optional): {Layer class: fn(layer, inputs, output)} counting a
            layer type, adding to `layer.total_ops` (inputs and output have .shape and
            .numel()), as in Paddle. Layers only.
        print_detail (bool): print the per-layer (per-op for a Program) table too.

    Returns:
        int: the total.

    Example:
        >>> net = paddle.nn.Sequential(paddle.nn.Linear(16, 32), paddle.nn.ReLU())
        >>> paddle.flops(net, [1, 16])   # doctest: +ELLIPSIS
        <class '...Linear'>'s flops has been counted
        <class '...ReLU'>'s flops has been counted
        Total Flops: 512     Total Params: 544
        512
    """
    if isinstance(net, static.Program):
        return _program_flops(net, print_detail)
    if not isinstance(net, nn.Layer):
        raise TypeError(f"paddle.flops: net must be a paddle.nn.Layer or a "
                        f"paddle.static.Program, got {type(net).__name__}")
    if input_size is None or not all(isinstance(d, (int, np.integer)) and d > 0
                                     for d in input_size):
        raise ValueError(f"paddle.flops: input_size must be the input's full shape in "
                         f"positive ints, batch included (e.g. [1, 3, 224, 224]); got "
                         f"{input_size!r}")
    return _layer_flops(net, [int(d) for d in input_size], custom_ops or {}, print_detail)


def _layer_flops(net, size, custom_ops, print_detail):
    leaves = [(n, m) for n, m in net.named_sublayers(include_self=True)
              if not list(m.children())]
    seen, hooks, counted = set(), [], {}
    for _, m in leaves:
        kind = type(m)
        fn = custom_ops.get(kind) or LAYER_RULES.get(kind)
        if kind not in seen:
            print(f"Customize Function has been applied to {kind}" if kind in custom_ops
                  else f"{kind}'s flops has been counted" if fn is not None
                  else f"Cannot find suitable count function for {kind}. "
                       f"Treat it as zero FLOPs.")
            seen.add(kind)

        def record(layer, inputs, output, fn=fn):
            ins = [_Traced(v) for v in (inputs if isinstance(inputs, (list, tuple))
                                        else [inputs])]
            out = _Traced(output[0] if isinstance(output, (list, tuple)) else output)
            layer.total_ops = 0
            if fn is not None:
                fn(layer, ins, out)
            params = sum(int(np.prod(p.shape)) for p in layer.parameters())
            counted[id(layer)] = (ins[0].shape, out.shape, params, int(layer.total_ops))
            del layer.total_ops
        hooks.append(m.register_forward_post_hook(record))
    training = net.training
    net.eval()
    try:
        with static.program_guard(static.Program(), static.Program()):
            net(static.data("flops_input", size, "float32"))
    finally:
        for h in hooks:
            h.remove()
        if training:
            net.train()
    table = _Table(["Layer Name", "Input Shape", "Output Shape", "Params", "Flops"])
    total_ops = total_params = 0
    for _, m in leaves:
        if id(m) in counted:
            ins, out, params, ops = counted[id(m)]
            table.add_row([m.full_name(), ins, out, params, ops])
            total_ops, total_params = total_ops + ops, total_params + params
    if print_detail:
        table.print_table()
    print(f"Total Flops: {total_ops}     Total Params: {total_params}")
    return total_ops


def _program_flops(program, print_detail):
    table, total = _Table(["OP Type", "Param name", "Flops"]), 0
    for block in program.blocks:
        for op in block.ops:
            ops, param = _op_flops(op, block)
            if ops:
                table.add_row([op.type, param, ops])
                total += ops
    if print_detail:
        table.print_table()
    return total


def _op_flops(op, block):
    def shape(slot, outputs=False):
        names = op.output(slot) if outputs else \
            (op.input(slot) if slot in op.input_names else [])
        return [int(d) for d in block.var(names[0]).shape] if names else None

    kind = op.type
    if kind in ("conv2d", "depthwise_conv2d"):
        bias = 1 if "Bias" in op.input_names and op.input("Bias") else 0
        filt = shape("Filter")
        per = int(np.prod(filt[1:])) + bias
        return abs(int(np.prod(shape("Output", True)[1:])) * per), op.input("Filter")[0]
    if kind == "pool2d":
        x, out = shape("X"), shape("Out", True)
        kernel = np.array(x[2:]) // np.array(out[2:])
        return abs(int((int(np.prod(kernel)) + 1) * int(np.prod(out[1:])))), ""
    if kind in ("mul", "matmul"):
        return abs(shape("Y")[0] * int(np.prod(shape("Out", True)[1:]))), op.input("Y")[0]
    if kind == "batch_norm":
        return abs(2 * int(np.prod(shape("Y", True)[1:]))), ""
    if kind.startswith("element"):
        return abs(int(np.prod(shape("X")[1:]))), ""
    return 0, ""
