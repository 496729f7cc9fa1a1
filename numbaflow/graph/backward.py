"""Reverse-mode autodiff over the IR: `append_backward` and `gradients`.

The walk keeps an explicit map from each forward Variable to its gradient
contributions (object references, not name conventions). Each forward op's OpDef
grad rule appends ordinary registered ops through a `GradContext`; a variable with
several contributions gets a `sum` op before its gradient is first read.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..kernels.registry import NO_GRAD, get_op_def
from .program import BACKWARD, FORWARD, LOSS_GRAD, Variable

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from .program import Parameter


class GradContext:
    """What a grad rule sees for one forward op."""

    def __init__(self, engine, op, requires_grad):
        self.engine, self.op, self.requires_grad = engine, op, requires_grad
        self.opdef = get_op_def(op.type)
        self.attrs = op.attrs

    def fwd(self, slot, i=0):
        """The forward op's variable in input or output slot `slot`."""
        vs = self.fwd_list(slot)
        return vs[i] if i < len(vs) else None

    def fwd_list(self, slot):
        return self.op.inputs.get(slot) or self.op.outputs.get(slot) or []

    def dout(self, slot, i=0):
        """The gradient of output `slot` (None if nothing downstream needs it)."""
        vs = self.op.outputs.get(slot) or []
        return self.engine.final_grad(vs[i]) if i < len(vs) else None

    def dout_or_zeros(self, slot, i=0):
        d = self.dout(slot, i)
        if d is None:
            out = self.op.outputs[slot][i]
            d = self.tmp(out)
            self.append("fill_any_like", {"X": out}, {"Out": d}, {"value": 0.0})
        return d

    def dx(self, slot, i=0):
        """A new Variable to receive input `slot`'s gradient, or None if not needed."""
        vs = self.op.inputs.get(slot) or []
        if i >= len(vs) or self.opdef.input_slot(slot).no_grad or vs[i] not in self.requires_grad:
            return None
        return self.engine.new_contribution(vs[i])

    def dx_list(self, slot):
        return [self.dx(slot, i) for i in range(len(self.op.inputs.get(slot) or []))]

    def tmp(self, like, shape=None, dtype=None):
        """A fresh intermediate variable shaped like `like` (or `shape`/`dtype`)."""
        return self.engine.tmp_var(like, shape, dtype)

    def append(self, type, inputs, outputs, attrs=None):
        """Append a grad op; skipped when none of its outputs is needed."""
        outputs = {k: v for k, v in outputs.items()
                   if v is not None and not (isinstance(v, list) and all(x is None for x in v))}
        if not outputs:
            return None
        return self.engine.block.append_op(type, inputs, outputs, attrs)


class _Engine:
    def __init__(self, block, no_grad_names, tag="", array_grads=None):
        self.block = block
        self.no_grad = no_grad_names
        # a gradient sub-block's engine tags its names: they never shadow a name of the
        # enclosing block that the sub-block refers to
        self.contribs = {}      # forward Variable -> [grad contribution Variables]
        self.final = {}         # forward Variable -> its finalised gradient Variable
        # forward tensor array -> its one gradient array, which the array's grad ops
        # update in place in reverse program order (never summed from renamed copies);
        # shared with the engines of gradient sub-blocks (a loop body's writes)
        self.array_grads = {} if array_grads is None else array_grads
        self.n_tmp = 0
        self.tag = tag

    # the control-flow grad rules (kernels/tensor/control_flow.py, which may not import this
    # layer) build gradient sub-blocks through the engine
    def conditional_block_grad(self, g):
        conditional_block_grad(g)

    def while_grad(self, g):
        while_grad(g)

    def grad_name(self, var):
        name, k = f"{var.name}@GRAD{self.tag}", 1
        while name in self.block.vars:
            name, k = f"{var.name}@GRAD{self.tag}_{k}", k + 1
        return name

    def array_grad(self, var):
        """The gradient array of tensor array `var` (made, in this block, on first use)."""
        g = self.array_grads.get(var)
        if g is None:
            g = self.block.create_var(self.grad_name(var), var.shape, var.dtype)
            g.is_tensor_array = True
            self.array_grads[var] = g
        return g

    def new_contribution(self, var):
        if var.is_tensor_array:
            return self.array_grad(var)
        lst = self.contribs.setdefault(var, [])
        name = f"{var.name}@GRAD@RENAME{self.tag}@{len(lst)}"
        while name in self.block.vars:
            name += "_"
        g = self.block.create_var(name, var.shape, var.dtype)
        lst.append(g)
        return g

    def tmp_var(self, like, shape, dtype):
        self.n_tmp += 1
        name = f"{like.name}@GRAD@TMP{self.tag}@{self.n_tmp}" if like is not None \
            else f"grad_tmp{self.tag}_{self.n_tmp}"
        return self.block.create_var(name, shape if shape is not None else like.shape,
                                     dtype if dtype is not None else like.dtype)

    def final_grad(self, var):
        if var.is_tensor_array:     # added to in place, so never final
            return self.array_grads.get(var)
        if var in self.final:
            return self.final[var]
        lst = self.contribs.get(var)
        if not lst:
            self.final[var] = None
            return None
        if len(lst) == 1:
            self.block.rename_var(lst[0], self.grad_name(var))
            g = lst[0]
        else:
            g = self.block.create_var(self.grad_name(var), var.shape, var.dtype)
            self.block.append_op("sum", {"X": lst}, {"Out": g})
        self.final[var] = g
        return g

    def seed(self, target, target_grad):
        if target_grad is None:
            g = self.block.create_var(self.grad_name(target), target.shape, target.dtype)
            with self.block.program.role_guard(LOSS_GRAD):
                if all(d >= 0 for d in target.shape):
                    self.block.append_op("fill_constant", outputs={"Out": g},
                                         attrs={"shape": list(target.shape), "value": 1.0,
                                                "dtype": str(target.dtype)})
                else:
                    self.block.append_op("fill_any_like", {"X": target}, {"Out": g},
                                         {"value": 1.0})
        elif target.is_tensor_array:
            self.array_grads[target] = target_grad
            return
        else:
            g = target_grad
        self.contribs.setdefault(target, []).append(g)
        self.final[target] = g


def _requires_grad(ops, wanted, no_grad):
    """Forward pass: the variables whose value depends on a variable we differentiate.

    A leaf (not produced by `ops`) counts when it is wanted or has stop_gradient=False
    (parameters; data only if the user cleared stop_gradient).
    """
    # a leaf is read before any op writes it (a loop body's tensor array is read before
    # the body writes it: its value comes from the iteration before)
    produced, leaves = set(), set()
    for op in ops:
        leaves.update(v for v in op.input_vars() if v not in produced)
        produced.update(op.output_vars())
    req = {v for v in leaves if v.name not in no_grad and (v in wanted or not v.stop_gradient)}
    for op in ops:
        opdef = get_op_def(op.type)
        if opdef.has(NO_GRAD):
            continue
        if any(v in req for slot, vs in op.inputs.items()
               if not opdef.input_slot(slot).no_grad for v in vs):
            req.update(o for o in op.output_vars()
                       if o.name not in no_grad and (not o.stop_gradient or o in wanted))
    return req


def _backward(targets, target_grads, wanted, no_grad_set):
    block = targets[0].block
    no_grad = {v.name if isinstance(v, Variable) else v for v in (no_grad_set or ())}
    fwd_ops = [op for op in block.ops if op.role == FORWARD]
    engine = _Engine(block, no_grad)
    with block.program.role_guard(BACKWARD):
        return engine, _differentiate(engine, fwd_ops, targets, target_grads, wanted)


def _differentiate(engine, fwd_ops, targets, target_grads, wanted):
    """Append to `engine.block` the gradient ops of `fwd_ops` from the seeds
    `target_grads` of `targets`; {wanted variable: its gradient or None}."""
    req = _requires_grad(fwd_ops, set(wanted), engine.no_grad)
    # ops on a path from a grad-requiring variable to a target
    needed, relevant = set(targets), []
    for op in reversed(fwd_ops):
        if get_op_def(op.type).has(NO_GRAD):
            continue
        if any(o in needed for o in op.output_vars()) and any(i in req for i in op.input_vars()):
            relevant.append(op)
            needed.update(i for i in op.input_vars() if i in req)
    for t, tg in zip(targets, target_grads):
        engine.seed(t, tg)
    for op in relevant:
        if all(engine.final_grad(o) is None for o in op.output_vars()):
            continue
        opdef = get_op_def(op.type)
        if opdef.grad is None:
            raise NotImplementedError(f"op {op.type!r} has no gradient rule; mark its "
                                      f"inputs stop_gradient=True or add one to its OpDef")
        opdef.grad(GradContext(engine, op, req))
    return {v: engine.final_grad(v) for v in wanted}


def conditional_block_grad(g):
    """The gradient of a `conditional_block` (graph op `g.op`): another conditional_block
    on the same condition whose sub-block recomputes the forward sub-block and appends its
    gradient ops, writing each input's gradient contribution (zero where the branch does
    not depend on it; zero altogether when the condition is false, so the gradient flows
    into the taken branch only)."""
    engine, op = g.engine, g.op
    outs, ins = op.outputs.get("Out", []), op.inputs.get("Input", [])
    douts = [engine.final_grad(o) for o in outs]
    wanted = [v for v in ins if v in g.requires_grad]
    if not wanted or all(d is None for d in douts):
        return
    program, parent = engine.block.program, engine.block
    before = program.current_block_idx
    gblock = program.create_block(parent.idx)
    program.current_block_idx = before
    gblock.forward_block_idx = op.attrs["sub_block"].idx
    copies = [gblock.make_op(o.type, o.inputs, o.outputs, o.attrs)
              for o in op.attrs["sub_block"].ops]
    gblock.insert_before(None, copies)
    sub = _Engine(gblock, engine.no_grad, tag=f"@B{gblock.idx}")
    seeds = [(o, d) for o, d in zip(outs, douts) if d is not None]
    grads = _differentiate(sub, copies, [o for o, _ in seeds], [d for _, d in seeds], wanted)
    dxs = []
    for i, x in enumerate(ins):
        if x not in g.requires_grad:
            continue
        dx = g.dx("Input", i)
        if grads.get(x) is None:
            gblock.append_op("fill_any_like", {"X": x}, {"Out": dx}, {"value": 0.0})
        else:
            gblock.append_op("assign", {"X": grads[x]}, {"Out": dx})
        dxs.append(dx)
    parent.append_op("conditional_block", {"Cond": op.inputs["Cond"], "Input": block_reads(gblock)},
                     {"Out": dxs}, {"sub_block": gblock, "is_scalar_condition": True})


def block_reads(block):
    """The variables the ops of `block` read that no earlier op of it writes, in order:
        >>> y = static.data('x', [None, 2]) * 2.0
        >>> [v.name for v in paddle.graph.backward.block_reads(y.block)]
        ['x']
    """
    produced, reads = set(), {}
    for op in block.ops:
        for v in op.input_vars():
            if v not in produced:
                reads[v] = None
        produced.update(op.output_vars())
    return list(reads)


def append_backward(loss: Variable, parameter_list: Sequence[Variable | str] | None = None,
                    no_grad_set: Iterable[Variable | str] | None = None,
                    callbacks: object = None) -> list[tuple[Parameter, Variable]]:
    """Append the backward ops of `loss` to its program.

    Args:
        loss (Variable): a scalar (shape () or (1,)).
        parameter_list (list of Variable or str, optional): the parameters to differentiate;
            default every trainable parameter.
        no_grad_set (set of Variable or str, optional): variables to treat as constants.
        callbacks: accepted for Paddle compatibility; ignored.

    Returns:
        list of (Parameter, Variable): each parameter with its gradient `<name>@GRAD`.

    Raises:
        ValueError: loss is not a scalar.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> [(p.name, g.name) for p, g in static.append_backward(loss)]
        [('fc_0.w_0', 'fc_0.w_0@GRAD'), ('fc_0.b_0', 'fc_0.b_0@GRAD')]
    """
    if not isinstance(loss, Variable):
        raise TypeError(f"append_backward: loss must be a Variable, got {type(loss).__name__}")
    if any(d not in (1, -1) for d in loss.shape) or (loss.shape and -1 in loss.shape):
        raise ValueError(f"append_backward: loss {loss.name!r} must be a scalar (shape () or "
                         f"(1,)), got shape {loss.shape}; reduce it with paddle.mean first")
    block = loss.block
    if parameter_list is not None:
        params = [block.var(p) if isinstance(p, str) else p for p in parameter_list]
    else:
        params = [p for p in block.all_parameters() if p.trainable]
    params = [p for p in params
              if p.name not in {v.name if isinstance(v, Variable) else v
                                for v in (no_grad_set or ())}]
    _, grads = _backward([loss], [None], params, no_grad_set)
    return [(p, grads[p]) for p in params if grads.get(p) is not None]


def gradients(targets: Variable | Sequence[Variable], inputs: Variable | Sequence[Variable],
              target_gradients: Variable | Sequence[Variable | None] | None = None,
              no_grad_set: Iterable[Variable | str] | None = None) -> list[Variable | None]:
    """Append ops computing d(sum of targets)/d(inputs).

    Args:
        targets (Variable or list of Variable): what is differentiated.
        inputs (Variable or list of Variable): with respect to what.
        target_gradients (Variable or list, optional): the gradient seeds of the targets;
            default ones.
        no_grad_set (set of Variable or str, optional): variables to treat as constants.

    Returns:
        list of Variable or None: one gradient per input (None where an input does not
        affect the targets).

    Example:
        >>> x = static.data('x', [None, 3])
        >>> x.stop_gradient = False
        >>> y = paddle.sum(x * x)
        >>> dx, = static.gradients([y], [x])
        >>> dx.shape
        (-1, 3)
    """
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if target_gradients is None:
        target_gradients = [None] * len(targets)
    elif not isinstance(target_gradients, (list, tuple)):
        target_gradients = [target_gradients]
    if len(target_gradients) != len(targets):
        raise ValueError(f"gradients: {len(targets)} targets but {len(target_gradients)} "
                         f"target_gradients")
    _, grads = _backward(targets, target_gradients, inputs, no_grad_set)
    return [grads.get(v) for v in inputs]



def while_grad(g):
    """The gradient of a `while` op (graph op `g.op`): a `while_grad` op over a gradient
    sub-block that recomputes one iteration of the body from the values the forward run
    kept for it (the forward `while` keeps each iteration's inputs unless is_test) and
    appends its backward. The op runs the block once per iteration, last first, carrying
    the loop variables' gradients back and summing the other inputs'.

    In the block, the loop variables' new values are fresh variables (the body writes them
    over the old ones), seeded by variables named `<loop var>@SEED@B<idx>`; the input
    gradients it gives are `<input>@DX@B<idx>`."""
    engine, op = g.engine, g.op
    if op.attrs["is_test"]:
        raise NotImplementedError(f"while_loop: the loop was built with is_test=True, so it "
                                  f"keeps no per-iteration values for a backward")
    body, xs = op.attrs["sub_block"], op.inputs.get("X", [])
    cond_var = op.inputs["Condition"][0]
    outs = [v for v in op.outputs.get("Out", []) if v is not cond_var]
    # a tensor array the body writes is not carried: its gradient array lives in the
    # enclosing block, and each iteration's gradient ops update it in place
    loop_vars = [v for v in outs if not v.is_tensor_array]
    arrays = [v for v in outs if v.is_tensor_array and v in g.requires_grad]
    grad_loop = [v for v in loop_vars if v in g.requires_grad]
    wanted = [x for x in xs if x in g.requires_grad and not x.is_tensor_array]
    carried = any(engine.final_grad(a) is not None for a in arrays)
    if not wanted or not (grad_loop or carried):
        return
    arrays_grads = [engine.array_grad(a) for a in arrays]
    douts = [g.dout_or_zeros("Out", op.outputs["Out"].index(v)) for v in grad_loop]
    program, parent = engine.block.program, engine.block
    before = program.current_block_idx
    gblock = program.create_block(parent.idx)
    program.current_block_idx = before
    gblock.forward_block_idx = body.idx
    tag = f"@B{gblock.idx}"
    renamed, copies = {}, []
    for o in body.ops:      # an iteration; the loop variables' new values get new variables
        ins = {k: [renamed.get(v, v) for v in vs] for k, vs in o.inputs.items()}
        outs = {}
        for k, vs in o.outputs.items():
            outs[k] = []
            for v in vs:
                if v in loop_vars or v is cond_var:
                    renamed[v] = gblock.create_var(f"{v.name}@NEW{tag}", v.shape, v.dtype)
                outs[k].append(renamed.get(v, v))
        copies.append(gblock.make_op(o.type, ins, outs, o.attrs))
    gblock.insert_before(None, copies)
    # fed by while_grad each iteration (hence data)
    seeds = [gblock.create_var(f"{v.name}@SEED{tag}", v.shape, v.dtype, is_data=True)
             for v in grad_loop]
    sub = _Engine(gblock, engine.no_grad, tag=tag, array_grads=engine.array_grads)
    targets = [renamed.get(v, v) for v in grad_loop] + arrays
    grads = _differentiate(sub, copies, targets, seeds + arrays_grads, wanted)
    for x in wanted:
        out = gblock.create_var(f"{x.name}@DX{tag}", x.shape, x.dtype)
        if grads.get(x) is None:
            gblock.append_op("fill_any_like", {"X": x}, {"Out": out}, {"value": 0.0})
        else:
            gblock.append_op("assign", {"X": grads[x]}, {"Out": out})
    dxs = []
    for i, x in enumerate(xs):
        if x not in g.requires_grad or x.is_tensor_array:
            continue
        if x in grad_loop:
            # updated in place: the gradient of its value before the loop replaces that
            # of its value after (earlier readers of the old value still add to it)
            engine.final.pop(x, None)
            engine.contribs[x] = []
            dxs.append(engine.new_contribution(x))
        else:
            dxs.append(g.dx("X", i))
    # the enclosing tensor arrays the gradient block reads or writes, updated in place
    shared = list(dict.fromkeys(v for o in gblock.ops for v in o.input_vars() + o.output_vars()
                                if v.is_tensor_array and v.block is not gblock))
    parent.append_op("while_grad", {"X": wanted, "LoopVars": grad_loop, "DOut": douts,
                                    "Arrays": shared},
                     {"DX": dxs, "ArraysOut": shared}, {"sub_block": gblock})
