"""Gradient clipping, applied by optimizers to (param, grad) pairs before the update."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import tensor_math as M
from ..graph.program import OPTIMIZE
from ..utils import unique_name

if TYPE_CHECKING:
    from ..graph.program import Variable


class ClipGradByGlobalNorm:
    """Scale all gradients by clip_norm / max(global_norm, clip_norm), where global_norm is
    the L2 norm of every gradient together. Give it to an optimizer as `grad_clip`.

    Args:
        clip_norm (float): the largest global norm let through (> 0).
        group_name (str): accepted for Paddle compatibility.

    Raises:
        ValueError: clip_norm <= 0.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> opt = paddle.optimizer.SGD(0.1, grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0))
        >>> _ = opt.minimize(loss)
    """

    def __init__(self, clip_norm: float, group_name: str = "default_group") -> None:
        if clip_norm <= 0:
            raise ValueError(f"ClipGradByGlobalNorm: clip_norm must be > 0, got {clip_norm}")
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads: list[tuple[Variable, Variable]]
                 ) -> list[tuple[Variable, Variable]]:
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
    block = vs[0].block
    out = block.create_var(unique_name.generate("sum"), vs[0].shape, vs[0].dtype)
    block.append_op("sum", {"X": vs}, {"Out": out})
    return out
