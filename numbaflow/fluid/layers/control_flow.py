"""fluid.layers' control flow: tensor arrays (create_array, array_write, array_read,
array_length: paddle.tensor.array's run-time arrays), cond / while_loop / case /
switch_case (static.nn's), and the loop helpers increment, shape and logical_not."""
from __future__ import annotations

from ...graph.program import Variable
from ...static.control_flow import case, cond, switch_case, while_loop  # noqa: F401
from ...tensor import increment as _increment
from ...tensor.array import array_length, array_read, array_write, create_array  # noqa: F401
from ...tensor.attribute import shape  # noqa: F401
from ...tensor.logic import logical_not  # noqa: F401

__all__ = ["create_array", "array_write", "array_read", "array_length", "cond", "while_loop",
           "case", "switch_case", "increment", "shape", "logical_not"]


def increment(x: Variable, value: float = 1.0, in_place: bool = True) -> Variable:
    """x + value written back into x (op `increment`; fluid's spelling of
    paddle.increment).

    Args:
        x (Variable): a one-element Variable.
        value (float): the step.
        in_place (bool): must be True (the op writes x).

    Returns:
        Variable: x itself.

    Example:
        >>> i = fluid.layers.fill_constant([1], 'int64', 0)
        >>> _ = fluid.layers.increment(i, 3)
        >>> static.Executor(paddle.CPUPlace()).run(fetch_list=[i])[0]
        array([3])
    """
    if not in_place:
        raise NotImplementedError("increment: in_place=False is not supported; use x + value")
    return _increment(x, value)
