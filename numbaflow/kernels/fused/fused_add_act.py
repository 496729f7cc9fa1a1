"""Paddle's `fused_elemwise_add_activation` and its gradient, generated from the scalar
bodies of the ops they replace.

`functor_list` names the two functors outer first:

* ``[act, "elementwise_add"]``: Out = act(X + Y), IntermediateOut = X + Y;
* ``["elementwise_add", act]``: Out = X + act(Y), IntermediateOut = act(Y);

for act in {relu, tanh, sigmoid, gelu, scale}. Y broadcasts into X with Paddle's `axis`
(an fc bias: axis=1) and X may broadcast too; scale's `bias` is honoured (Paddle's
kernel drops it). IntermediateOut is optional: the fuse_elewise_add_act pass keeps it
only while something reads it.

The kernels are not written here: the forward body calls the registered bodies of
`elementwise_add` and `act`, the gradient body those of `<act>_grad` (scale: `scale`
with bias 0, its own gradient rule) and `elementwise_add_grad`, and `elementwise_op`
renders the composition through the one CPU loop template and the CUDA template, as
for any elementwise op. Gradients of broadcast operands are summed down there.

The gradient op's optional inputs are told apart without extra attributes, as in
Paddle: IntermediateOut is an input exactly when `save_intermediate_out` is set, and X
is an input when one more input than that is present (Out is always one).
"""
import numpy as np

from .. import scalar as S
from ..math.elementwise import elementwise_op
from ..registry import FUSED, NO_GRAD, Slot, get_op_def

ACTIVATIONS = ("relu", "tanh", "sigmoid", "gelu", "scale")
ADD = "elementwise_add"
FORWARD = "fused_elemwise_add_activation"
GRAD = "fused_elemwise_add_activation_grad"

# Paddle's defaults (scale=0.0 included), plus the attributes the activations read
ATTRS = {"functor_list": (), "axis": -1, "scale": 0.0, "bias": 0.0, "bias_after_scale": True,
         "approximate": False, "save_intermediate_out": True}


def functors(attrs, grad=False):
    """(act, act_is_outer) from `functor_list`; raises ValueError naming what is allowed.

    The gradient op's names may carry Paddle's `_grad` suffix (or be the forward's).
    """
    given = [str(f) for f in (attrs.get("functor_list") or ())]
    names = [f[:-5] if grad and f.endswith("_grad") else f for f in given]
    if len(names) == 2 and ADD in names:
        act = names[1] if names[0] == ADD else names[0]
        if act in ACTIVATIONS:
            return act, names[1] == ADD
    op, suffix = (GRAD, "_grad") if grad else (FORWARD, "")
    raise ValueError(f"{op}: functor_list {given} is not supported; expected "
                     f"[act{suffix}, 'elementwise_add{suffix}'] (Out = act(X + Y)) or "
                     f"['elementwise_add{suffix}', act{suffix}] (Out = X + act(Y)) with act in "
                     f"{list(ACTIVATIONS)}")


def act_attrs(act, attrs):
    """The attributes of op `act` taken from the fused op's attributes."""
    return {k: attrs[k] for k in get_op_def(act).attrs}


def act_grad_reads(act):
    """The forward value `<act>_grad` reads: "X" (the act's input), "Out" (its output), or
    None (scale's gradient is a scale of Out@GRAD alone)."""
    if act == "scale":
        return None
    return get_op_def(f"{act}_grad").inputs[0].name


def _act_grad(act, a, saved, d):
    """d act / d input times d, from the registered gradient body."""
    if act == "scale":      # the scale grad rule: scale(d, scale, bias=0)
        return get_op_def("scale").body(dict(a, bias=0.0, bias_after_scale=True), d)
    return get_op_def(f"{act}_grad").body(a, saved, d)


# ---------------------------------------------------------------- forward
def _forward_body(a, x, y):
    act, outer = functors(a)
    add, f = get_op_def(ADD).body, get_op_def(act).body
    if outer:                     # act(x + y)
        inter = add(a, x, y)
        return f(a, inter), inter
    inter = f(a, y)               # x + act(y)
    return add(a, x, inter), inter


def _forward_infer(base):
    def infer(ctx):
        _, outer = functors(ctx.attrs)
        out = base(ctx)
        if not outer:             # act(Y) has Y's shape
            out["IntermediateOut"] = ctx.input("Y")
        return out
    return infer


def _forward_factory(base):
    """A kernel factory that refuses, with a clear message, an IntermediateOut = act(Y)
    smaller than Out: the template writes every output over Out's shape (smaller ones
    are sums of a broadcast gradient), which act(Y) is not."""
    def factory(cop):
        act, outer = functors(cop.attrs)
        inter = cop.output("IntermediateOut")
        out = cop.output("Out")
        if inter is not None and not outer and \
                int(np.prod(inter.shape)) != int(np.prod(out.shape)):
            raise ValueError(f"{FORWARD}: with functor_list {list(cop.attrs['functor_list'])}, "
                             f"IntermediateOut = {act}(Y) has Y's shape {tuple(inter.shape)}, "
                             f"smaller than Out {tuple(out.shape)}; it can be written only when "
                             f"Y is not broadcast. Leave IntermediateOut out (or compute "
                             f"{act}(Y) with its own op)")
        return base(cop)
    return factory


# ---------------------------------------------------------------- gradient
GRAD_INPUTS = ("X", "Y", "Out", "IntermediateOut", "Out@GRAD")


def grad_input_slots(attrs, n):
    """The slots of the `n` inputs a gradient op was given, in slot order."""
    slots = ["Y", "Out"] + (["IntermediateOut"] if attrs["save_intermediate_out"] else []) \
        + ["Out@GRAD"]
    if n == len(slots) + 1:
        slots.insert(0, "X")
    elif n != len(slots):
        raise ValueError(f"{GRAD}: got {n} inputs, expected Y, Out, Out@GRAD, optionally X, "
                         f"and IntermediateOut exactly when save_intermediate_out is set "
                         f"(it is {bool(attrs['save_intermediate_out'])})")
    return slots


def _grad_body(a, *ins):
    v = dict(zip(grad_input_slots(a, len(ins)), ins))
    act, outer = functors(a, grad=True)
    add, add_grad, f = get_op_def(ADD).body, get_op_def(f"{ADD}_grad").body, get_op_def(act).body
    x, y, d = v.get("X"), v["Y"], v["Out@GRAD"]
    inter = v.get("IntermediateOut")
    reads = act_grad_reads(act)
    if outer:                     # Out = act(x + y): act's input is x + y, its output Out
        if inter is None and reads == "X":
            if x is None:
                raise ValueError(f"{GRAD}: {act}_grad needs X + Y: give IntermediateOut (with "
                                 f"save_intermediate_out=True) or X")
            inter = add(a, x, y)
        d_inter = _act_grad(act, a, inter if reads == "X" else v["Out"], d)
        dx, dy = add_grad(a, x, y, d_inter)
        return dx, dy, d_inter
    # Out = x + act(y): act's input is y, its output IntermediateOut
    if inter is None:
        inter = f(a, y)
    dx, d_inter = add_grad(a, x, inter, d)
    # summed down over Y's broadcast dims after the product: every act gradient is
    # linear in d with a factor that is constant along those dims
    dy = _act_grad(act, a, y if reads == "X" else inter, d_inter)
    return _in_kernel(dx), dy, _in_kernel(d_inter)


def _in_kernel(v):
    """`v`, computed inside the kernel even when it is just an input. The CPU template
    copies such pass-through outputs from the input after the kernel ran, and by then an
    output written in place (the executor's enable_inplace) may have overwritten that
    input: d(X + act(Y)) would hand X@GRAD act's gradient."""
    return v * 1.0 if isinstance(v, S.Sym) and v.op == "in" else v


def _grad_infer(base):
    def infer(ctx):
        _, outer = functors(ctx.attrs, grad=True)
        present = sum(len(ctx.inputs(s)) for s in GRAD_INPUTS)
        try:
            slots = grad_input_slots(ctx.attrs, present)
        except ValueError as e:
            raise ctx.error(str(e).split(": ", 1)[1]) from None
        if ("IntermediateOut" in slots) != bool(ctx.inputs("IntermediateOut")) or \
                ("X" in slots) != bool(ctx.inputs("X")):
            raise ctx.error(f"inputs {[s for s in GRAD_INPUTS if ctx.inputs(s)]} do not fit "
                            f"save_intermediate_out={bool(ctx.attrs['save_intermediate_out'])}: "
                            f"IntermediateOut is an input exactly when it is set")
        out = base(ctx)
        # absent X: Paddle's convention that X has Out's shape
        out.setdefault("X@GRAD", ctx.input("Out@GRAD"))
        out.setdefault("IntermediateOut@GRAD", ctx.input("Out@GRAD") if outer else ctx.input("Y"))
        return out
    return infer


def _grad_rule(g):
    """The forward's gradient: one fused gradient op for Out; a gradient reaching
    IntermediateOut from its other readers goes through the unfused gradient ops
    (contributions are summed by the backward pass)."""
    a = g.attrs
    act, outer = functors(a)
    x, y, inter = g.fwd("X"), g.fwd("Y"), g.fwd("IntermediateOut")
    reads = act_grad_reads(act)
    d_out = g.dout("Out")
    if d_out is not None:
        use_inter = inter is not None and reads == ("X" if outer else "Out")
        ins = {"X": x, "Y": y, "Out": g.fwd("Out"), "Out@GRAD": d_out}
        if use_inter:
            ins["IntermediateOut"] = inter
        attrs = dict(a, functor_list=[f + "_grad" for f in a["functor_list"]],
                     save_intermediate_out=use_inter)
        g.append(GRAD, ins, {"X@GRAD": g.dx("X"), "Y@GRAD": g.dx("Y")}, attrs)
    d_inter = g.dout("IntermediateOut") if inter is not None else None
    if d_inter is None:
        return
    if outer:
        g.append(f"{ADD}_grad", {"X": x, "Y": y, "Out@GRAD": d_inter},
                 {"X@GRAD": g.dx("X"), "Y@GRAD": g.dx("Y")}, {"axis": a["axis"]})
    elif reads is None:
        g.append("scale", {"X": d_inter}, {"Out": g.dx("Y")},
                 {"scale": a["scale"], "bias": 0.0, "bias_after_scale": True})
    else:
        g.append(f"{act}_grad", {reads: y if reads == "X" else inter, "Out@GRAD": d_inter},
                 {"X@GRAD": g.dx("Y")}, act_attrs(act, a))


# ---------------------------------------------------------------- registration
_fwd = elementwise_op(
    FORWARD, ("X", "Y"), _forward_body,
    outputs=("Out", Slot("IntermediateOut", optional=True)), attrs=ATTRS, grad=_grad_rule,
    traits=(FUSED,),
    doc="Out = act(X + Y) or X + act(Y) (functor_list, outer first), in one kernel")
_fwd.infer = _forward_infer(_fwd.infer)
_fwd.cpu, _fwd.gpu = _forward_factory(_fwd.cpu), _forward_factory(_fwd.gpu)

_grad = elementwise_op(
    GRAD, (Slot("X", optional=True), Slot("Y"), Slot("Out"),
           Slot("IntermediateOut", optional=True), Slot("Out@GRAD")),
    _grad_body,
    outputs=(Slot("X@GRAD", optional=True), Slot("Y@GRAD", optional=True),
             Slot("IntermediateOut@GRAD", optional=True)),
    attrs=ATTRS, out_like={"X@GRAD": "X", "Y@GRAD": "Y",
                           "IntermediateOut@GRAD": "IntermediateOut"},
    traits=(NO_GRAD, FUSED),
    doc="X@GRAD, Y@GRAD (summed down to their shapes) and IntermediateOut@GRAD of "
        "fused_elemwise_add_activation, in one kernel")
_grad.infer = _grad_infer(_grad.infer)
