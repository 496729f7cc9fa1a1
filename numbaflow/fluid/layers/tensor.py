"""fluid.layers tensor creation and combination (Paddle 1.8's `layers.tensor` names)."""
import numbers

from ... import dtypes
from ... import tensor_math as M
from ...graph.program import Variable, default_startup_program
from ...layer_helper import LayerHelper
from ...utils import unique_name

__all__ = ["zeros", "ones", "zeros_like", "ones_like", "assign", "create_tensor",
           "create_parameter", "create_global_var", "sums"]


def zeros(shape, dtype, force_cpu=False, name=None):
    """A Variable of `shape` filled with 0 (op fill_constant)."""
    return M.zeros(shape, dtype, name)


def ones(shape, dtype, force_cpu=False, name=None):
    """A Variable of `shape` filled with 1 (op fill_constant)."""
    return M.ones(shape, dtype, name)


def zeros_like(x, out=None):
    return _into(M.zeros_like(x), out)


def ones_like(x, out=None):
    return _into(M.ones_like(x), out)


def _into(v, out):
    if out is None:
        return v
    return M.assign(v, out)


def assign(input, output=None):
    """Copy a Variable, or a numpy array / list as a constant, into `output` (or a new var)."""
    return M.assign(input, output)


def create_tensor(dtype, name=None, persistable=False):
    """An empty Variable of `dtype` to be written by a later op (e.g. `assign(x, t)`)."""
    block = LayerHelper("create_tensor").block
    name = name or unique_name.generate("create_tensor.tmp")
    return block.create_var(name, (), dtypes.convert_dtype(dtype), persistable=persistable)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    """A trainable parameter (see paddle.create_parameter)."""
    return M.create_parameter(shape, dtype, name, attr, is_bias, default_initializer)


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A Variable of the main program filled with `value` by the startup program (a global
    step counter, a fixed learning rate...)."""
    if not isinstance(value, numbers.Number):
        raise TypeError(f"create_global_var: value must be a number, got {type(value).__name__}")
    shape = [int(d) for d in shape]
    dt = dtypes.convert_dtype(dtype)
    block = LayerHelper("global_var").block
    name = name or unique_name.generate("global_var")
    var = block.create_var(name, shape, dt, persistable=persistable, stop_gradient=True)
    sblock = default_startup_program().global_block()
    svar = sblock.vars.get(name) or sblock.create_var(name, shape, dt, persistable=True)
    sblock.append_op("fill_constant", outputs={"Out": svar},
                     attrs={"shape": shape, "value": float(value), "dtype": str(dt)})
    return var


def sums(input, out=None):
    """The elementwise sum of a list of Variables of one shape (op sum)."""
    xs = list(input) if isinstance(input, (list, tuple)) else [input]
    for i, v in enumerate(xs):
        if not isinstance(v, Variable):
            raise TypeError(f"sums: input[{i}] must be a Variable, got {type(v).__name__}")
    helper = LayerHelper("sum")
    if out is None:
        return helper.simple("sum", {"X": xs})
    helper.append_op("sum", {"X": xs}, {"Out": out})
    return out

