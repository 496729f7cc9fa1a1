"""paddle.tensor.attribute: facts of a tensor as tensors (`shape`)."""
from __future__ import annotations

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import check_variable

__all__ = ["shape"]


def shape(input: Variable) -> Variable:
    """The run-time shape of `input` as an int32 Variable of one entry per dim (op
    `shape`): a -1 (batch) dim reads as its size in the run.

    Args:
        input (Variable): the tensor.

    Returns:
        Variable: int32, shape [input.ndim]; stop_gradient=True.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> s = paddle.shape(x)
        >>> static.Executor(paddle.CPUPlace()).run(feed={'x': np.ones((5, 3), 'float32')},
        ...                                        fetch_list=[s])[0]
        array([5, 3], dtype=int32)
    """
    check_variable(input, "shape", "input")
    out = LayerHelper("shape").simple("shape", {"Input": input}, dtype="int32")
    out.stop_gradient = True
    return out
