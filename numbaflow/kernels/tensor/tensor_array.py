"""Tensor arrays as run-time values (Paddle's LoDTensorArray): `write_to_array`,
`read_from_array` and `lod_array_length`, the ops of `paddle.tensor.array_write`,
`array_read` and `array_length`.

A tensor-array Variable (`Variable.is_tensor_array`) lives in a plan as a 0-d object
array holding a Python list of numpy arrays (the executor gives it an empty list at the
start of each run, as Paddle's local scope does, and a `while` body shares its list with
the enclosing block, so the array lives across iterations). Its VarInfo in a plan is the
shape and dtype of its elements (what `read_from_array`'s output is allocated from): the
last write's, as Paddle's write_to_array sets the array's shape to X's.

Gradients: an array's gradient is one array that the backward updates in place (see
docs/control-flow-and-rnn.md): `read_from_array_grad` adds into element I,
`write_to_array_grad` takes element I out as the written value's gradient and empties it.
"""
import numpy as np

from ..gpu.host_staged import on_host
from ..registry import GPU_ON_HOST, MAY_FAIL, NO_GRAD, OpDef, Slot, VarInfo, register_op


def array_list(holder):
    """The list a tensor array's 0-d object array holds (made empty when it holds none)."""
    items = holder[()]
    if items is None:
        items = holder[()] = []
    return items


def _index(i, op):
    k = int(np.asarray(i).reshape(-1)[0])
    if k < 0:
        raise IndexError(f"{op}: the index I is {k}; a tensor array index must be >= 0")
    return k


def _write_grad(g):
    g.append("write_to_array_grad",
             {"Grad": g.dout("Out"), "I": g.fwd("I"), "X": g.fwd("X")},
             {"DX": g.dx("X"), "GradOut": g.dout("Out")})


def _read_grad(g):
    g.append("read_from_array_grad", {"DOut": g.dout("Out"), "I": g.fwd("I")},
             {"Grad": g.dx("X")})


def _write_cpu(cop):
    def bind(ins, outs):
        x, i, out = ins["X"][0], ins["I"][0], outs["Out"][0]

        def run():
            items, k = array_list(out), _index(i, "write_to_array")
            if k >= len(items):     # Paddle resizes; the holes read as empty tensors
                items.extend([np.zeros((0,), x.dtype)] * (k + 1 - len(items)))
            items[k] = x.copy()
        return run
    return bind


def _read_cpu(cop):
    def bind(ins, outs):
        arr, i, out = ins["X"][0], ins["I"][0], outs["Out"][0]

        def run():
            items, k = array_list(arr), _index(i, "read_from_array")
            if k >= len(items):
                raise IndexError(f"read_from_array: index {k} is outside the array, which "
                                 f"holds {len(items)} element(s)")
            if items[k].shape != out.shape:
                raise ValueError(
                    f"read_from_array: element {k} has shape {items[k].shape}, but the "
                    f"program reads it as {out.shape} (the shape of the array's last write "
                    f"when the program was built); write elements of one shape")
            np.copyto(out, items[k])
        return run
    return bind


def _write_grad_cpu(cop):
    def bind(ins, outs):
        grad, i, dx = ins["Grad"][0], ins["I"][0], outs["DX"][0]

        def run():
            items, k = array_list(grad), _index(i, "write_to_array_grad")
            if k < len(items) and items[k].size:
                if items[k].shape != dx.shape:
                    raise ValueError(f"write_to_array_grad: the gradient of element {k} "
                                     f"has shape {items[k].shape}, the value written "
                                     f"{dx.shape}")
                np.copyto(dx, items[k])
                items[k] = np.zeros((0,), dx.dtype)
            else:       # nothing read that element after this write
                dx.fill(0)
        return run
    return bind


def _read_grad_cpu(cop):
    def bind(ins, outs):
        dout, i, grad = ins["DOut"][0], ins["I"][0], outs["Grad"][0]

        def run():
            items, k = array_list(grad), _index(i, "read_from_array_grad")
            if k >= len(items):
                items.extend([np.zeros((0,), dout.dtype)] * (k + 1 - len(items)))
            if items[k].size:
                items[k] = items[k] + dout
            else:
                items[k] = dout.copy()
        return run
    return bind


def _length_cpu(cop):
    def bind(ins, outs):
        arr, out = ins["X"][0], outs["Out"][0]

        def run():
            out[0] = len(array_list(arr))
        return run
    return bind


def _infer_write(ctx):
    x = ctx.input("X")
    return {"Out": VarInfo(tuple(x.shape), x.dtype)}


def _infer_read(ctx):
    arr = ctx.input("X")
    return {"Out": VarInfo(tuple(arr.shape), arr.dtype)}


def _infer_write_grad(ctx):
    x = ctx.input("X")
    return {"DX": VarInfo(tuple(x.shape), x.dtype), "GradOut": ctx.input("Grad")}


def _infer_read_grad(ctx):
    d = ctx.input("DOut")
    return {"Grad": VarInfo(tuple(d.shape), d.dtype)}


def _infer_length(ctx):
    return {"Out": VarInfo((1,), np.dtype("int64"))}


_I = Slot("I", no_grad=True)
register_op(OpDef(
    "write_to_array", inputs=(Slot("X"), _I), outputs=(Slot("Out"),), infer=_infer_write,
    cpu=_write_cpu, gpu=on_host(_write_cpu), grad=_write_grad,
    traits=frozenset({GPU_ON_HOST, MAY_FAIL}),
    doc="Out[I] = X (a copy) in the tensor array Out, which grows to hold index I."))
register_op(OpDef(
    "read_from_array", inputs=(Slot("X"), _I), outputs=(Slot("Out"),), infer=_infer_read,
    cpu=_read_cpu, gpu=on_host(_read_cpu), grad=_read_grad,
    traits=frozenset({GPU_ON_HOST, MAY_FAIL}),
    doc="Out = X[I], the element I of the tensor array X."))
register_op(OpDef(
    "write_to_array_grad",
    inputs=(Slot("Grad", no_grad=True), _I, Slot("X", no_grad=True)),
    outputs=(Slot("DX"), Slot("GradOut")), infer=_infer_write_grad, cpu=_write_grad_cpu,
    gpu=on_host(_write_grad_cpu), traits=frozenset({NO_GRAD, GPU_ON_HOST, MAY_FAIL}),
    doc="DX = Grad[I] (zeros when empty), then Grad[I] emptied (GradOut is Grad, updated "
        "in place; X, the value written, gives DX's shape): the gradient of "
        "write_to_array."))
register_op(OpDef(
    "read_from_array_grad", inputs=(Slot("DOut"), _I), outputs=(Slot("Grad"),),
    infer=_infer_read_grad, cpu=_read_grad_cpu, gpu=on_host(_read_grad_cpu),
    traits=frozenset({NO_GRAD, GPU_ON_HOST, MAY_FAIL}),
    doc="Grad[I] += DOut in the gradient array Grad (which grows to hold I): the "
        "gradient of read_from_array."))
register_op(OpDef(
    "lod_array_length", inputs=(Slot("X", no_grad=True),), outputs=(Slot("Out"),),
    infer=_infer_length, cpu=_length_cpu, gpu=on_host(_length_cpu),
    traits=frozenset({NO_GRAD, GPU_ON_HOST}),
    doc="Out = the number of elements of the tensor array X (int64, shape [1])."))
