"""Elementwise ops, each declared by its scalar body.

`elementwise_op` turns a body into a full OpDef: broadcast shape inference (with
Paddle's `axis` alignment), the CPU kernel rendered through the one loop template,
and the gradient rule. Binary and comparison ops live here; activations in
activation.py, optimizer updates in optim.py.
"""
import functools
import operator

import numpy as np

from .. import scalar as S
from ..codegen.cpu import ElementwiseKernel
from ..registry import ELEMENTWISE, INT_DIVIDES, NO_GRAD, OpDef, Slot, VarInfo, broadcast_shapes, register_op


def _slot(s):
    return s if isinstance(s, Slot) else Slot(s)


def align(shape, ndim, axis):
    """Paddle's elementwise `axis`: a shorter operand's dims start at `axis` (-1: trailing)."""
    shape = tuple(shape)
    if axis == -1 or axis is None or len(shape) == ndim:
        return (1,) * (ndim - len(shape)) + shape
    if axis < 0 or axis + len(shape) > ndim:     # Paddle: only -1 may be negative
        raise ValueError(f"axis {axis} does not fit a shape {shape} into rank {ndim} "
                         f"(expected -1 or 0..{ndim - len(shape)})")
    return (1,) * axis + shape + (1,) * (ndim - axis - len(shape))


def first_float_dtype(dtypes):
    """The first float dtype among `dtypes` (float32 if none): an op's compute type."""
    for dt in dtypes:
        if np.dtype(dt).kind == "f":
            return np.dtype(dt)
    return np.dtype("float32")


def elementwise_op(type, inputs, body, outputs=("Out",), attrs=None, grad=None,
                   out_like=None, dtype_rule=None, traits=(), inplace=None, check=None,
                   axis=None, doc=""):
    """Register an elementwise op defined by `body(attrs, *inputs) -> out | (outs...)`.

    out_like: {output slot: input slot} outputs shaped like that input (gradients of
    broadcast inputs: summed down); other outputs take the broadcast shape.
    dtype_rule(attrs, in_dtypes) -> dtype of the broadcast-shaped outputs
    (default: the first input's dtype).
    check(attrs) -> None or a message: attributes the kernel refuses (raised when built).
    axis(attrs) -> where a shorter input's dims start (default: the `axis` attribute).
    """
    inputs = tuple(_slot(s) for s in inputs)
    outputs = tuple(_slot(s) for s in outputs)
    attrs = dict(attrs or {})
    out_like = dict(out_like or {})

    def present(infos):
        return [i for s in inputs for i in infos.get(s.name, [])]

    def full_and_aligned(attrs, in_infos):
        shapes = [i.shape for i in present(in_infos)]
        ndim = max(len(s) for s in shapes)
        aligned = [align(s, ndim, opdef.operand_axis(attrs)) for s in shapes]
        return broadcast_shapes(*aligned, what=f"{type} inputs"), aligned, ndim

    def infer(ctx):
        refused = check(ctx.attrs) if check else None
        if refused:
            raise ctx.error(refused)
        try:
            full, _, _ = full_and_aligned(ctx.attrs, ctx.in_infos)
        except ValueError as e:
            names = [n for s in inputs for n in ctx.in_names.get(s.name, [])]
            raise ctx.error(f"{e} (inputs {names})") from None
        in_dtypes = [i.dtype for i in present(ctx.in_infos)]
        dt = dtype_rule(ctx.attrs, in_dtypes) if dtype_rule else in_dtypes[0]
        result = {}
        for s in outputs:
            src = out_like.get(s.name)
            if src is not None:
                if ctx.in_infos.get(src):
                    result[s.name] = ctx.in_infos[src][0]
            else:
                result[s.name] = VarInfo(full, np.dtype(dt))
        return result

    def bind_with(kernel_class, cop):
        """Kernel factory (OpDef.cpu / .gpu): the same body through `kernel_class`."""
        full, aligned, ndim = full_and_aligned(cop.attrs, cop.in_infos)
        n_in = len(aligned)
        traced = S.trace(body, cop.attrs, n_in)
        wanted, out_shapes = [], []
        for k, s in enumerate(outputs):
            for info in cop.out_infos.get(s.name, []):
                wanted.append(traced[k])
                out_shapes.append(align(info.shape, ndim, opdef.operand_axis(cop.attrs))
                                  if s.name in out_like else full)
        fdt = first_float_dtype([i.dtype for i in present(cop.in_infos)] +
                           [i.dtype for v in cop.out_infos.values() for i in v])
        kern = kernel_class(wanted, aligned, out_shapes, full, fdt,
                            [i.dtype for i in present(cop.in_infos)])

        def bind(ins, outs):
            flat_in = [a for s in inputs for a in ins.get(s.name, [])]
            flat_out = [a for s in outputs for a in outs.get(s.name, [])]
            return kern.bind(flat_in, flat_out)
        return bind

    opdef = OpDef(type=type, inputs=inputs, outputs=outputs, infer=infer,
                  cpu=functools.partial(bind_with, ElementwiseKernel),
                  gpu=functools.partial(bind_with, cuda_elementwise_kernel),
                  attrs=attrs, body=body, grad=grad, inplace=dict(inplace or {}),
                  traits=frozenset((ELEMENTWISE,) + tuple(traits)), doc=doc, axis=axis)
    return register_op(opdef)


def cuda_elementwise_kernel(*args, **kw):
    """CudaElementwiseKernel, imported only when a GPU kernel is first built (numba.cuda
    is slow to import)."""
    from ..codegen.cuda import CudaElementwiseKernel
    return CudaElementwiseKernel(*args, **kw)


def grad_rule(grad_type, inputs=("X",), outputs=("Out",), reads=("X",)):
    """Gradient rule that appends one `grad_type` op.

    The grad op reads the forward slots in `reads` plus `<out>@GRAD` and writes
    `<in>@GRAD` for each differentiable input that needs one; attrs are copied.
    """
    def rule(g):
        ins = {s: g.fwd(s) for s in reads}
        ins.update({f"{o}@GRAD": g.dout(o) for o in outputs})
        outs = {f"{s}@GRAD": g.dx(s) for s in inputs}
        g.append(grad_type, ins, outs, dict(g.attrs))
    return rule


def _grad_ins(names):
    return tuple(Slot(n) for n in names)


# ---------------------------------------------------------------- binary arithmetic
_AXIS = {"axis": -1}


def _binary(type, body, grad_body, grad_reads=("X", "Y"), traits=()):
    elementwise_op(type, ("X", "Y"), body, attrs=_AXIS, traits=traits,
                   grad=grad_rule(f"{type}_grad", ("X", "Y"), reads=grad_reads))
    # X and Y are always inputs of the grad op: their shapes say where to sum down
    elementwise_op(f"{type}_grad", _grad_ins(tuple(dict.fromkeys(("X", "Y") + grad_reads))
                                             + ("Out@GRAD",)),
                   grad_body, outputs=(Slot("X@GRAD", optional=True),
                                       Slot("Y@GRAD", optional=True)),
                   attrs=_AXIS, out_like={"X@GRAD": "X", "Y@GRAD": "Y"}, traits=(NO_GRAD,))


_binary("elementwise_add", lambda a, x, y: x + y, lambda a, x, y, d: (d, d))
_binary("elementwise_sub", lambda a, x, y: x - y, lambda a, x, y, d: (d, -d))
_binary("elementwise_mul", lambda a, x, y: x * y, lambda a, x, y, d: (d * y, d * x))
_binary("elementwise_div", lambda a, x, y: x / y,
        lambda a, x, y, out, d: (d / y, -d * out / y), grad_reads=("X", "Y", "Out"),
        traits=(INT_DIVIDES,))
_binary("elementwise_pow", lambda a, x, y: x ** y,
        lambda a, x, y, out, d: (d * y * x ** (y - 1.0), d * out * S.log(x)),
        grad_reads=("X", "Y", "Out"))
_binary("elementwise_max", lambda a, x, y: S.maximum(x, y),
        lambda a, x, y, d: (S.where(x > y, d, 0.0), S.where(x > y, 0.0, d)))
_binary("elementwise_min", lambda a, x, y: S.minimum(x, y),
        lambda a, x, y, d: (S.where(x < y, d, 0.0), S.where(x < y, 0.0, d)))
# Paddle's mod (remainder, floor_mod, %): the divisor's sign, like Python's; Paddle
# registers no gradient for it, so backward stops here as at a comparison
elementwise_op("elementwise_mod", ("X", "Y"), lambda a, x, y: S.mod(x, y), attrs=_AXIS,
               traits=(NO_GRAD, INT_DIVIDES), doc="Out = X mod Y with Y's sign (Python's %); an integer "
               "zero divisor raises ZeroDivisionError.")

# Paddle's floor_divide: floor(x / y), for integers too (-7 // 2 = -4 in Paddle 2.6), as
# (x - x mod y) / y: exact (the mod has y's sign) and the integer division helpers'
# zero-divisor error; no gradient in Paddle
elementwise_op("elementwise_floordiv", ("X", "Y"), lambda a, x, y: (x - S.mod(x, y)) / y,
               attrs=_AXIS, traits=(NO_GRAD, INT_DIVIDES), doc="Out = floor(X / Y) (Python's //); an "
               "integer zero divisor raises ZeroDivisionError.")
# Paddle's increment: X + step, written back into X (a loop counter; Out is X)
elementwise_op("increment", ("X",), lambda a, x: x + a["step"], attrs={"step": 1.0},
               inplace={"Out": "X"},
               traits=(NO_GRAD,), doc="Out = X + step (Out is X: in place).")

# ---------------------------------------------------------------- comparisons (bool out)
_BOOL = lambda a, dts: np.dtype(np.bool_)  # noqa: E731
for _type, _body in [("equal", lambda a, x, y: S.equal(x, y)),
                     ("not_equal", lambda a, x, y: S.not_equal(x, y)),
                     ("greater_than", lambda a, x, y: x > y),
                     ("greater_equal", lambda a, x, y: x >= y),
                     ("less_than", lambda a, x, y: x < y),
                     ("less_equal", lambda a, x, y: x <= y)]:
    elementwise_op(_type, ("X", "Y"), _body, attrs=_AXIS, dtype_rule=_BOOL, traits=(NO_GRAD,))
elementwise_op("logical_not", ("X",), lambda a, x: S.equal(x, 0), dtype_rule=_BOOL,
               traits=(NO_GRAD,), doc="Out = not X (bool; a number is true when nonzero).")


# ---------------------------------------------------------------- n-ary sum (grad accumulation)
def _sum_body(a, *xs):
    return functools.reduce(operator.add, xs)


def _sum_grad(g):
    for i, dx in enumerate(g.dx_list("X")):
        if dx is not None:
            g.append("assign", {"X": g.dout("Out")}, {"Out": dx})


elementwise_op("sum", (Slot("X", duplicable=True),), _sum_body, grad=_sum_grad,
               doc="Out = X[0] + X[1] + ... (same shapes); used to accumulate gradients.")
