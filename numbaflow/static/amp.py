"""paddle.static.amp: automatic mixed precision is not implemented.

numbaflow computes in float32 / float64 only (numba kernels have no float16 / bfloat16
arithmetic here), so `decorate` raises rather than run float32 while claiming to be
mixed precision. Train without it: the same program in float32 needs no loss scaling.
"""
from __future__ import annotations

__all__ = ["decorate", "fp16_guard", "AutoMixedPrecisionLists", "CustomOpLists"]

_WHY = ("paddle.static.amp: mixed precision (float16 / bfloat16) is not implemented in "
        "numbaflow, which computes in float32 and float64 only. Drop the amp calls "
        "(use the optimizer directly; float32 training needs no loss scaling)")


def decorate(optimizer: object, amp_lists: object = None, init_loss_scaling: float = 2 ** 15,
             *args: object, **kwargs: object) -> None:
    """Always raises NotImplementedError (see the module doc).

    Args:
        optimizer (Optimizer): the optimizer Paddle would wrap.
        amp_lists (AutoMixedPrecisionLists, optional): ignored.
        init_loss_scaling (float): ignored.
        *args: ignored.
        **kwargs: ignored.

    Raises:
        NotImplementedError: always.

    Example:
        >>> try:
        ...     static.amp.decorate(paddle.optimizer.SGD(0.1))
        ... except NotImplementedError as e:
        ...     print(type(e).__name__)
        NotImplementedError
    """
    raise NotImplementedError(_WHY)


def fp16_guard() -> None:
    """Always raises NotImplementedError (see the module doc).

    Raises:
        NotImplementedError: always.

    Example:
        >>> try:
        ...     static.amp.fp16_guard()
        ... except NotImplementedError as e:
        ...     print(type(e).__name__)
        NotImplementedError
    """
    raise NotImplementedError(_WHY)


class AutoMixedPrecisionLists:
    """Always raises NotImplementedError (see the module doc).

    Args:
        *args: ignored.
        **kwargs: ignored.

    Raises:
        NotImplementedError: always.

    Example:
        >>> try:
        ...     static.amp.AutoMixedPrecisionLists()
        ... except NotImplementedError as e:
        ...     print(type(e).__name__)
        NotImplementedError
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError(_WHY)


CustomOpLists = AutoMixedPrecisionLists
