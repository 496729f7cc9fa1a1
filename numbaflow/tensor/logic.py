"""paddle.tensor.logic: elementwise comparisons (bool results, numpy broadcasting).

Variable's `<`, `<=`, `>`, `>=` call these; a Python number on either side becomes a
constant of the other operand's dtype.
"""
from __future__ import annotations

from ..graph.program import Variable
from ._helpers import binary as _binary

_DOC = """x {sym} y elementwise, with numpy broadcasting (op `{op}`).

Args:
    x (Variable or number): the first operand.
    y (Variable or number): the second operand, of x's dtype.
    name (str, optional): a prefix for the output's name.

Returns:
    Variable: bool, the broadcast shape; stop_gradient=True.

Example:
    >>> x = static.data('x', [None, 3])
    >>> str(paddle.{fn}(x, 0.5).dtype)
    'bool'
"""


def _compare(fn, op, sym):
    def compare(x: Variable | float, y: Variable | float, name: str | None = None) -> Variable:
        out = _binary(op, x, y, name)
        out.stop_gradient = True
        return out
    compare.__name__ = compare.__qualname__ = fn
    compare.__doc__ = _DOC.format(sym=sym, op=op, fn=fn)
    return compare


equal = _compare("equal", "equal", "==")
not_equal = _compare("not_equal", "not_equal", "!=")
greater_than = _compare("greater_than", "greater_than", ">")
greater_equal = _compare("greater_equal", "greater_equal", ">=")
less_than = _compare("less_than", "less_than", "<")
less_equal = _compare("less_equal", "less_equal", "<=")


def logical_not(x: Variable, out: Variable | None = None, name: str | None = None) -> Variable:
    """not x elementwise (op `logical_not`): bool, a number counting as true when nonzero.

    Args:
        x (Variable): the input.
        out (Variable, optional): not supported (a new Variable is returned).
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: bool, x's shape; stop_gradient=True.

    Example:
        >>> x = paddle.full([2], 0.0) < 1.0
        >>> static.Executor(paddle.CPUPlace()).run(fetch_list=[paddle.logical_not(x)])[0]
        array([False, False])
    """
    from ..layer_helper import LayerHelper
    from ._helpers import check_variable
    if out is not None:
        raise NotImplementedError("logical_not: out= is not supported; use the returned "
                                  "Variable")
    check_variable(x, "logical_not", "x")
    y = LayerHelper("logical_not", name).simple("logical_not", {"X": x}, dtype="bool")
    y.stop_gradient = True
    return y
