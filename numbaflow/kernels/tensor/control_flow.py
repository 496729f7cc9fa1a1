"""Control-flow ops, as Paddle lowers `static.nn.cond` and `static.nn.while_loop`:
`conditional_block` (runs its `sub_block` when Cond is true), `select_input` (picks one
of its X by Mask: the branch that ran), `select_output` (its gradient: X to the Out
that Mask names, zeros to the others) and `while` (runs its `sub_block` while the
Condition variable is true; the body writes the loop variables and the condition back).

A sub-block runs as its own cached executor plan; that runner lives in the executor
layer (executor/control_flow.py), which this layer may not import: it installs itself
with `set_block_runner`. The gradient of `conditional_block` is another
conditional_block over a gradient sub-block (graph/backward.py builds it).
"""

import numpy as np

# (on a GPU a sub-block runs as a host plan: a CUDA sub-plan is still to be written)
from ..gpu.host_staged import on_host as _on_host
from ..registry import GPU_ON_HOST, NO_GRAD, OpDef, Slot, VarInfo, get_op_def, register_op

_RUNNER = None      # executor/control_flow.py: .conditional(cop) and .loop(cop) binders


def set_block_runner(runner):
    """Install the object whose `conditional(cop)` / `loop(cop)` bind a sub-block run."""
    global _RUNNER
    _RUNNER = runner


def _runner():
    if _RUNNER is None:
        raise RuntimeError("control-flow ops run through numbaflow.executor; import "
                           "numbaflow (not only numbaflow.kernels) to run them")
    return _RUNNER


def block_shapes(ops, shapes):
    """Infer every output of `ops` (a sub-block's ops, in order) into `shapes`
    ({Variable: VarInfo}; a variable missing from it is taken as declared)."""
    from ..registry import InferContext
    for op in ops:
        def info(v):
            return shapes.get(v) or VarInfo(v.shape, v.dtype)
        ctx = InferContext(op.type, op.attrs,
                           {k: [info(v) for v in vs] for k, vs in op.inputs.items()},
                           {k: [v.name for v in vs] for k, vs in op.inputs.items()})
        ctx.op = op
        result = get_op_def(op.type).infer(ctx)
        ins = set(op.input_vars())
        for slot, vs in op.outputs.items():
            got = result.get(slot, [])
            got = got if isinstance(got, list) else [got]
            for v, vi in zip(vs, got):
                if v not in ins:
                    shapes[v] = VarInfo(tuple(vi.shape), np.dtype(vi.dtype))
    return shapes


def _infer_conditional_block(ctx):
    op = getattr(ctx, "op", None)
    if op is None or ctx.attrs["sub_block"] is None:
        raise ctx.error("needs its sub_block (build it with static.nn.cond)")
    shapes = {v: vi for v, vi in zip(op.inputs.get("Input", []), ctx.inputs("Input"))}
    block_shapes(ctx.attrs["sub_block"].ops, shapes)
    return {"Out": [shapes.get(v) or VarInfo(v.shape, v.dtype)
                    for v in op.outputs.get("Out", [])]}


def _infer_while(ctx):
    op = getattr(ctx, "op", None)
    if op is None or ctx.attrs["sub_block"] is None:
        raise ctx.error("needs its sub_block (build it with static.nn.while_loop)")
    xs = op.inputs.get("X", [])
    infos = ctx.inputs("X")
    # a tensor array the body writes holds elements of the body's shapes (an array not
    # written before the loop enters it as declared, perhaps with a -1 batch dim)
    outs = op.outputs.get("Out", [])
    shapes = dict(zip(xs, infos))
    body = block_shapes(ctx.attrs["sub_block"].ops, dict(shapes)) if any(
        v.is_tensor_array for v in outs) else {}
    return {"Out": [(body.get(v) if v.is_tensor_array else None) or shapes.get(v)
                    or VarInfo(v.shape, v.dtype) for v in outs]}


def _conditional_cpu(cop):
    return _runner().conditional(cop)


def _while_cpu(cop):
    return _runner().loop(cop)


def _conditional_grad(g):
    g.engine.conditional_block_grad(g)


def _while_grad(g):
    g.engine.while_grad(g)


def _infer_while_grad(ctx):
    return {"DX": ctx.inputs("X"), "ArraysOut": ctx.inputs("Arrays")}


def _while_grad_cpu(cop):
    return _runner().loop_grad(cop)


register_op(OpDef(
    "conditional_block",
    inputs=(Slot("Cond", no_grad=True), Slot("Input", optional=True, duplicable=True)),
    outputs=(Slot("Out", optional=True, duplicable=True),),
    attrs={"sub_block": None, "is_scalar_condition": True},
    infer=_infer_conditional_block, cpu=_conditional_cpu, grad=_conditional_grad,
    gpu=_on_host(_conditional_cpu), traits=frozenset({GPU_ON_HOST}),
    doc="Run `sub_block` when Cond (one bool) is true; Out are the enclosing block's "
        "variables the sub-block writes (zero-filled when it does not run)."))

register_op(OpDef(
    "while",
    inputs=(Slot("X", optional=True, duplicable=True), Slot("Condition", no_grad=True)),
    outputs=(Slot("Out", optional=True, duplicable=True),),
    attrs={"sub_block": None, "is_test": False},
    infer=_infer_while, cpu=_while_cpu, grad=_while_grad, gpu=_on_host(_while_cpu),
    traits=frozenset({GPU_ON_HOST}),
    doc="Run `sub_block` while Condition (one bool, which the body recomputes) is true; "
        "Out are the loop variables the body updates in place."))


register_op(OpDef(
    "while_grad",
    inputs=(Slot("X", duplicable=True),
            Slot("LoopVars", optional=True, duplicable=True, no_grad=True),
            Slot("DOut", optional=True, duplicable=True),
            Slot("Arrays", optional=True, duplicable=True, no_grad=True)),
    outputs=(Slot("DX", duplicable=True), Slot("ArraysOut", optional=True, duplicable=True)),
    attrs={"sub_block": None}, infer=_infer_while_grad, cpu=_while_grad_cpu,
    gpu=_on_host(_while_grad_cpu), traits=frozenset({NO_GRAD, GPU_ON_HOST}),
    doc="The gradient of `while`: runs its gradient sub-block once per forward iteration, "
        "last first, on the values the forward kept; DX are the gradients of X (LoopVars: "
        "those of X that are loop variables, whose gradient is carried; Arrays, the "
        "enclosing tensor arrays its block reads or writes, forward and gradient ones, "
        "updated in place: ArraysOut)."))


def _infer_select_input(ctx):
    """Paddle's declared Out: the last X's dtype (a cond's true branch), its dims where the
    inputs agree and -1 where they differ (the last X's shape when the ranks differ).
    Inputs that differ need an Out marked `runtime_shape` (static.nn.cond marks it)."""
    xs = ctx.inputs("X")
    if not xs:
        raise ctx.error("needs at least one X")
    first, last = xs[0], xs[-1]
    op = getattr(ctx, "op", None)
    runtime = op is not None and op.outputs["Out"][0].runtime_shape
    for i, x in enumerate(xs[1:], 1):
        if not runtime and (x.dtype != first.dtype or len(x.shape) != len(first.shape) or any(
                a != b and a != -1 and b != -1 for a, b in zip(x.shape, first.shape))):
            raise ctx.error(f"the inputs must agree: {ctx.name('X', 0)} is "
                            f"{tuple(first.shape)} {first.dtype} but {ctx.name('X', i)} is "
                            f"{tuple(x.shape)} {x.dtype} (static.nn.cond gives such an "
                            f"output a run-time shape)")
    shape = last.shape if len(first.shape) != len(last.shape) else tuple(
        a if a == b else -1 for a, b in zip(first.shape, last.shape))
    return {"Out": VarInfo(shape, last.dtype)}


def _mask_index(mask, n, what):
    k = int(np.asarray(mask).reshape(-1)[0])
    if not 0 <= k < n:
        raise IndexError(f"{what}: Mask is {k}, outside 0..{n - 1}")
    return k


def _select_input_cpu(cop):
    def bind(ins, outs):
        xs, mask, out = ins["X"], ins["Mask"][0], outs["Out"][0]

        def run():
            x = xs[_mask_index(mask, len(xs), "select_input")]
            if out.dtype == object:     # a run-time-shaped Out: a 0-d box (plan.py)
                out[()] = np.array(x[()] if x.dtype == object else x)   # (a copy)
                return
            if x.shape != out.shape:
                raise ValueError(f"select_input: the selected input has shape {x.shape}, "
                                 f"the output {out.shape}")
            np.copyto(out, x)
        return run
    return bind


def _select_input_grad(g):
    if g.fwd("Out").runtime_shape and g.dout("Out") is not None:
        raise ValueError(f"select_input: no gradient flows through {g.fwd('Out').name!r}, "
                         f"a cond output whose branches give different shapes; make the "
                         f"branches give one shape and dtype (cast, pad or reshape one)")
    xs = g.fwd_list("X")
    dxs = [g.dx("X", i) for i in range(len(xs))]
    if all(d is None for d in dxs):
        return
    g.append("select_output", {"X": g.dout_or_zeros("Out"), "Mask": g.fwd("Mask")},
             {"Out": [d if d is not None else g.tmp(x) for d, x in zip(dxs, xs)]})


register_op(OpDef(
    "select_input", inputs=(Slot("X", duplicable=True), Slot("Mask", no_grad=True)),
    outputs=(Slot("Out"),), infer=_infer_select_input, cpu=_select_input_cpu,
    gpu=_on_host(_select_input_cpu), traits=frozenset({GPU_ON_HOST}),
    grad=_select_input_grad, doc="Out = X[Mask] (Mask: one int32): the branch of a cond "
                                 "that ran."))


def _infer_select_output(ctx):
    x = ctx.input("X")
    return {"Out": [x for _ in ctx.op.outputs.get("Out", [])]}


def _select_output_cpu(cop):
    def bind(ins, outs):
        x, mask, os = ins["X"][0], ins["Mask"][0], outs["Out"]

        def run():
            k = _mask_index(mask, len(os), "select_output")
            for i, o in enumerate(os):
                if i == k:
                    np.copyto(o, x)
                else:
                    o.fill(0)
        return run
    return bind


register_op(OpDef(
    "select_output", inputs=(Slot("X"), Slot("Mask", no_grad=True)),
    outputs=(Slot("Out", duplicable=True),), infer=_infer_select_output,
    cpu=_select_output_cpu, gpu=_on_host(_select_output_cpu),
    traits=frozenset({NO_GRAD, GPU_ON_HOST}),
    doc="Out[Mask] = X and the other Out zero: the gradient of select_input."))
