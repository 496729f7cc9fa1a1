"""paddle.summary: a network's layers with their output shapes and parameter counts.

The network's forward is traced into a scratch program (nothing runs), each layer's
output shape read from the graph.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import static


def summary(net: Any, input_size: Any = None, dtypes: Any = None, input: Any = None) -> dict:
    """Print each layer of `net` (depth first): its type, output shape and parameters.

    Args:
        net (paddle.nn.Layer): the network.
        input_size (tuple or list of tuples): the input shape(s), batch dimension included
            (-1 or None for any).
        dtypes (str or list, optional): the inputs' dtypes (default float32).
        input: accepted for Paddle's signature; give input_size instead.

    Returns:
        dict: {'total_params': int, 'trainable_params': int}.

    Example:
        >>> net = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.ReLU(), paddle.nn.Linear(8, 2))
        >>> paddle.summary(net, (-1, 4))['total_params']  # doctest: +ELLIPSIS
        Layer (type)...
        58
    """
    if input_size is None:
        raise ValueError("paddle.summary: give input_size=(batch, ...) (e.g. (-1, 784)); "
                         "numbaflow traces the forward from the shapes")
    sizes = [input_size] if isinstance(input_size[0], (int, type(None))) else list(input_size)
    dtypes = [dtypes] * len(sizes) if dtypes is None or isinstance(dtypes, str) else dtypes
    rows, hooks = [], []
    layers = [(name, layer) for name, layer in net.named_sublayers(include_self=True)]
    for name, layer in layers:
        def record(layer, inputs, output, name=name):
            out = output[0] if isinstance(output, (list, tuple)) else output
            own = sum(int(np.prod(p.shape)) for p in layer.parameters(include_sublayers=False))
            rows.append((name or type(layer).__name__, type(layer).__name__,
                         tuple(getattr(out, "shape", ())), own))
        hooks.append(layer.register_forward_post_hook(record))
    try:
        with static.program_guard(static.Program(), static.Program()):
            ins = [static.data(f"summary_input_{i}", [-1 if d is None else d for d in s],
                               dt or "float32") for i, (s, dt) in enumerate(zip(sizes, dtypes))]
            net(*ins)
    finally:
        for h in hooks:
            h.remove()
    print(f"{'Layer (type)':<36}{'Output Shape':<24}{'Param #':>12}")
    print("=" * 72)
    for name, kind, shape, n in sorted(rows, key=lambda r: [n for n, _ in layers].index(r[0])
                                       if r[0] in [n for n, _ in layers] else 0):
        print(f"{f'{name} ({kind})'[:35]:<36}{str(list(shape)):<24}{n:>12,}")
    params = net.parameters()
    total = sum(int(np.prod(p.shape)) for p in params)
    trainable = sum(int(np.prod(p.shape)) for p in params if p.trainable)
    print("=" * 72)
    print(f"Total params: {total:,}\nTrainable params: {trainable:,}\n"
          f"Non-trainable params: {total - trainable:,}")
    return {"total_params": total, "trainable_params": trainable}
