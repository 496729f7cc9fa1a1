"""Paddle's XShape, both ways.

Paddle's reshape2, squeeze2, unsqueeze2, flatten_contiguous_range and transpose2 also
write their input's shape to an XShape output (dims [0] + X's dims, no data), and their
gradient ops read that XShape where numbaflow's read X (only for its shape); Paddle's
transpose2_grad is, in numbaflow, a transpose2 with the inverse permutation. Reading a
ProgramDesc, a gradient op's XShape becomes the X of the op that wrote it; writing one,
each of these ops writes an XShape and its gradient op reads it, so a training program
moves between the two either way.
"""
import numpy as np

from ..graph.serialize import FileFormatError

OPS = ("reshape2", "squeeze2", "unsqueeze2", "flatten_contiguous_range", "transpose2")
GRADS = {op + "_grad": op for op in OPS}


def name_of(x_name):
    """The XShape variable written for input `x_name` (one per input: its dims are X's)."""
    return x_name + ".xshape"


def _args(slots, parameter):
    return next((list(v.arguments) for v in slots if v.parameter == parameter), [])


def from_paddle(op, written_by, block, where):
    """`op` (an OpDesc of `block`) as numbaflow reads it: a gradient op's XShape input
    replaced by the X of the op that wrote it (`written_by`: {XShape name: X name}, filled
    here from the forward ops as they come) or, where Paddle's pruning dropped that output
    (it keeps the gradient op's XShape), by the variable whose gradient the op writes
    (Paddle names X's gradient X@GRAD...); transpose2_grad turned into transpose2."""
    if op.type in OPS:
        xshape, x = _args(op.outputs, "XShape"), _args(op.inputs, "X")
        if xshape and x:
            written_by[xshape[0]] = x[0]
        return op
    xshape = _args(op.inputs, "XShape")
    if op.type not in GRADS or not xshape:
        return op
    new = type(op)()
    new.CopyFrom(op)
    if op.type == "transpose2_grad":      # dX = transpose(dOut, inverse permutation)
        new.type = "transpose2"
        del new.inputs[:], new.outputs[:]
        new.inputs.add(parameter="X", arguments=_args(op.inputs, "Out@GRAD"))
        new.outputs.add(parameter="Out", arguments=_args(op.outputs, "X@GRAD"))
        axis = next(a for a in new.attrs if a.name == "axis")
        axis.ints[:] = [int(i) for i in np.argsort(list(axis.ints))]
        return new
    dx = _args(op.outputs, "X@GRAD")
    x = written_by.get(xshape[0]) or (dx and dx[0].split("@GRAD")[0])
    if not x or block.find_var_recursive(x) is None:
        raise FileFormatError(f"{where}: its XShape {xshape[0]!r} is written by no earlier "
                              f"{GRADS[op.type]} op and its X@GRAD {dx} names no variable, "
                              f"so the input's shape is unknown")
    slot = next(v for v in new.inputs if v.parameter == "XShape")
    slot.parameter = "X"
    slot.arguments[:] = [x]
    return new


def to_paddle(op, od, declare):
    """Give the OpDesc `od` written for numbaflow's `op` Paddle's XShape: an output on the
    forward ops, the input (instead of X) of their gradient ops. `declare(name, shape,
    dtype)` declares a variable once."""
    if op.type not in OPS and op.type not in GRADS:
        return
    x = op.inputs["X"][0]
    name = name_of(x.name)
    declare(name, (0,) + tuple(x.shape), x.dtype)
    if op.type in OPS:
        od.outputs.add(parameter="XShape", arguments=[name])
        return
    slot = next(v for v in od.inputs if v.parameter == "X")
    slot.parameter = "XShape"
    slot.arguments[:] = [name]
