"""Gradient clipping, applied by optimizers to (param, grad) pairs before the update."""
from .. import tensor_math as M
from ..graph.program import OPTIMIZE


class ClipGradByGlobalNorm:
    """Scale all gradients by clip_norm / max(global_norm, clip_norm).

    >>> opt = paddle.optimizer.SGD(0.1, grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0))
    """

    def __init__(self, clip_norm, group_name="default_group"):
        if clip_norm <= 0:
            raise ValueError(f"ClipGradByGlobalNorm: clip_norm must be > 0, got {clip_norm}")
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads):
        if not params_grads:
            return params_grads
        program = params_grads[0][0].block.program
        with program._role_guard(OPTIMIZE):
            sq = [M.sum(M.square(g)) for _, g in params_grads]
            total = sq[0] if len(sq) == 1 else _sum(sq)
            norm = M.sqrt(total)
            clip = M.full([], self.clip_norm, dtype=norm.dtype)
            factor = M.divide(clip, M.maximum(norm, clip))
            return [(p, M.multiply(g, factor if g.dtype == factor.dtype else M.cast(factor, g.dtype)))
                    for p, g in params_grads]


def _sum(vs):
    from ..layer_helper import LayerHelper
    return LayerHelper("sum").simple("sum", {"X": vs})
