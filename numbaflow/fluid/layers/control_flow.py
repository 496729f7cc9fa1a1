"""fluid.layers' control flow: tensor arrays (create_array, array_write, array_read,
array_length: paddle.tensor.array's run-time arrays) and cond / while_loop / case /
switch_case (static.nn's)."""
from ...static.control_flow import case, cond, switch_case, while_loop  # noqa: F401
from ...tensor.array import array_length, array_read, array_write, create_array  # noqa: F401

__all__ = ["create_array", "array_write", "array_read", "array_length", "cond", "while_loop",
           "case", "switch_case"]
