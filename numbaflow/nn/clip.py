"""Gradient clipping, applied by optimizers to (param, grad) pairs before the update."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import tensor as M
from ..graph.program import OPTIMIZE
from ..utils import unique_name

if TYPE_CHECKING:
    from ..graph.program import Variable


class _ClipByNorm:
    """What both norm clips share: clip_norm checked at construction, and the (param,
    grad) pairs clipped inside the optimize role (`_clip` says how)."""

    def __init__(self, clip_norm: float) -> None:
        if clip_norm <= 0:
            raise ValueError(f"{type(self).__name__}: clip_norm must be > 0, got {clip_norm}")
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads: list[tuple[Variable, Variable]]
                 ) -> list[tuple[Variable, Variable]]:
        if not params_grads:
            return params_grads
        with params_grads[0][0].block.program.role_guard(OPTIMIZE):
            return self._clip(params_grads)


class ClipGradByGlobalNorm(_ClipByNorm):
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
        super().__init__(clip_norm)

    def _clip(self, params_grads):
        # one squared_l2_norm op per dtype reads every gradient in one pass
        by_dtype = {}
        for _, g in params_grads:
            by_dtype.setdefault(g.dtype, []).append(g)
        sq = [_squared_l2_norm(gs) for gs in by_dtype.values()]
        sq = [s if s.dtype == sq[0].dtype else M.cast(s, sq[0].dtype) for s in sq]
        total = sq[0] if len(sq) == 1 else _sum(sq)
        norm = M.sqrt(total)
        clip = M.full([], self.clip_norm, dtype=norm.dtype)
        factor = M.divide(clip, M.maximum(norm, clip))
        return [(p, M.multiply(g, factor if g.dtype == factor.dtype else M.cast(factor, g.dtype)))
                for p, g in params_grads]


class ClipGradByNorm(_ClipByNorm):
    """Scale each gradient on its own by clip_norm / max(norm(g), clip_norm), its L2 norm
    at most clip_norm afterwards. Give it to an optimizer as `grad_clip`.

    Args:
        clip_norm (float): the largest norm of one gradient (> 0).

    Raises:
        ValueError: clip_norm <= 0.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> opt = paddle.optimizer.SGD(0.1, grad_clip=paddle.nn.ClipGradByNorm(1.0))
        >>> _ = opt.minimize(loss)
    """

    def _clip(self, params_grads):
        out = []
        for p, g in params_grads:
            norm = M.sqrt(_squared_l2_norm([g]))
            clip = M.full([], self.clip_norm, dtype=g.dtype)
            out.append((p, M.multiply(g, M.divide(clip, M.maximum(norm, clip)))))
        return out


def _squared_l2_norm(gs):
    from ..layer_helper import LayerHelper
    return LayerHelper("squared_l2_norm").simple("squared_l2_norm", {"X": list(gs)})


def _sum(vs):
    block = vs[0].block
    out = block.create_var(unique_name.generate("sum"), vs[0].shape, vs[0].dtype)
    block.append_op("sum", {"X": vs}, {"Out": out})
    return out
