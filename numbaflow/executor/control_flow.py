"""How the control-flow ops (kernels/tensor/control_flow.py) run a sub-block: as a Plan of its
own, built on the first run of the op and cached with the op's bound kernel (so once
per outer plan and signature), fed the enclosing block's arrays the sub-block reads and
fetching the enclosing variables it writes.

A sub-plan is an ordinary Plan (plan.py): after a few runs its kernels run as compiled
segments, so a `while` body costs one plan run per iteration, not a Python dispatch per
op. Its persistable inputs (parameters) are fed like any other input; it has a scope of
its own, so nothing it does touches the caller's scope (the enclosing plan backs up and
restores the caller's persistables on failure or Ctrl-C, as for any op).
"""
import threading
import weakref

import numpy as np

from ..graph.backward import block_reads
from ..kernels.tensor.control_flow import set_block_runner
from ..kernels.registry import may_fail

# a compiled `while` body returns to Python every WHILE_CHUNK iterations (Ctrl-C is
# handled there, and the loop's persistables restored by the enclosing plan)
WHILE_CHUNK = 4096

# body Block -> (the variables fed to an iteration, [{variable: value} per iteration]):
# what the last run of a `while` (not is_test) kept for its while_grad, in the same run;
# per thread: data-parallel places run the same blocks at once, each in its own thread
_LOCAL = threading.local()


def _tapes():
    if not hasattr(_LOCAL, "tapes"):
        _LOCAL.tapes = weakref.WeakKeyDictionary()
    return _LOCAL.tapes


class _BlockAsProgram:
    """What `lower` and Plan read of a program, for one sub-block."""

    def __init__(self, block):
        self._block = block
        self.blocks = [block]

    def global_block(self):
        return self._block


class SubBlockRun:
    """Runs one sub-block: `run(arrays)` feeds `in_vars` (arrays in that order) and
    returns the values of `out_vars`."""

    def __init__(self, block, in_vars, out_vars, in_place=False):
        from .scope import Scope
        self.block, self.in_place = block, in_place
        self.out_vars = list(out_vars)
        read = {v for op in block.ops for v in op.input_vars()}
        # only what the block reads is fed (an unread input would be a feed with no use);
        # in place (a loop body), what it writes too: it writes the enclosing arrays; a
        # tensor array always is: the block writes the enclosing block's list
        if in_place:
            read.update(v for op in block.ops for v in op.output_vars())
        self.feeds = [(i, v) for i, v in enumerate(in_vars) if v in read or v.is_tensor_array]
        self.scope = Scope()
        self.plan = None

    def run(self, arrays):
        from .plan import Plan, PlanOptions
        feed = {v.name: arrays[i] for i, v in self.feeds}
        if self.plan is None:
            self.plan = Plan(_BlockAsProgram(self.block),
                             {v: arrays[i] for i, v in self.feeds}, self.out_vars, self.scope,
                             options=PlanOptions(feed_in_place=self.in_place))
        return self.plan.run(feed)

    def compiled_body(self, flag):
        """The body's one compiled segment, ready to run as a native `while` on `flag`
        (a 1-d view of the condition), or None while the plan is not (or cannot be) one
        compiled call: still cold or compiling, several units, a kernel that may raise
        (its error must name the iteration), tensor arrays (Python lists)."""
        plan = self.plan
        if plan is None or plan.units is None or len(plan.units) != 1 or plan.arrays or \
                not plan.units[0].compiled or plan.feed_slots or \
                any(may_fail(op) for op in plan.ops):
            return None
        unit = plan.units[0]
        unit.compile_while(flag)
        return unit


def _op_vars(cop):
    op = getattr(cop, "graph_op", None)
    if op is None:
        raise NotImplementedError(f"{cop.type}: a control-flow op runs only inside a program "
                                  f"(static.nn.cond / while_loop), not alone")
    return op


def _truth(a, what):
    a = np.asarray(a)
    if a.size != 1:
        raise ValueError(f"{what}: the condition must hold one bool, got shape {a.shape}")
    return bool(a.reshape(-1)[0])


class _Runner:
    def conditional(self, cop):
        op = _op_vars(cop)
        sub = SubBlockRun(cop.attrs["sub_block"], op.inputs.get("Input", []),
                          op.outputs.get("Out", []))

        def bind(ins, outs):
            cond, xs, ys = ins["Cond"][0], ins.get("Input", []), outs.get("Out", [])

            def run():
                if _truth(cond, "conditional_block"):
                    for y, value in zip(ys, sub.run(xs)):
                        np.copyto(y, value)
                else:       # not taken: its outputs are zero (a gradient block's are)
                    for y in ys:
                        y.fill(0)
            return run
        return bind

    def loop(self, cop):
        op = _op_vars(cop)
        xs_vars, out_vars = op.inputs.get("X", []), op.outputs.get("Out", [])
        cond_var = op.inputs["Condition"][0]
        # the body writes the loop variables and the condition back (enclosing variables)
        written = [v for v in dict.fromkeys(out_vars + [cond_var])]
        block = cop.attrs["sub_block"]
        # keep each iteration's inputs only for a while_grad of this loop
        record = not cop.attrs.get("is_test", False) and any(
            o.type == "while_grad" and o.attrs["sub_block"].forward_block_idx == block.idx
            for b in block.program.blocks for o in b.ops)
        fed = xs_vars + [cond_var]
        # the body updates the loop variables in place (the enclosing arrays), so a hot
        # body with fixed shapes runs the whole loop as one native call (compiled_body)
        sub = SubBlockRun(block, fed, written, in_place=True)

        def bind(ins, outs):
            xs, cond = ins.get("X", []), ins["Condition"][0]
            arrays = list(xs) + [cond]
            index = {id(v): i for i, v in enumerate(xs_vars + [cond_var])}
            targets = [arrays[index[id(v)]] if id(v) in index else None for v in written]
            out_arrays = outs.get("Out", [])
            for k, v in enumerate(written):
                if targets[k] is None:
                    targets[k] = out_arrays[out_vars.index(v)]

            # every variable the body writes is one the loop reads (while_loop's form): the
            # body's plan updates them all in place, nothing is copied back
            in_place = all(id(v) in index for v in written)
            flag = cond.reshape(-1)

            def run():
                step = 0
                tape = []
                if record:
                    _tapes()[block] = (fed, tape)
                while _truth(cond, "while"):
                    body = None if record or step == 0 or not in_place or \
                        flag.dtype != np.bool_ else sub.compiled_body(flag)
                    if body is not None:     # the rest of the loop in native calls
                        try:
                            while flag[0]:
                                step += body.run_while(WHILE_CHUNK, flag)
                        except Exception as e:
                            raise type(e)(f"while loop (block {block.idx}), at or after "
                                          f"iteration {step}: {e}") from e
                        break
                    if record:
                        tape.append({v: a.copy() for v, a in zip(fed, arrays)})
                    try:
                        values = sub.run(arrays)
                    except Exception as e:
                        raise type(e)(f"while loop (block {block.idx}), iteration {step}: "
                                      f"{e}") from e
                    for v, dst, value in zip(written, targets, values):
                        if dst is value:     # updated in place
                            continue
                        if dst.shape != value.shape:
                            raise ValueError(
                                f"while loop (block {block.idx}), iteration {step}: loop "
                                f"variable {v.name!r} changed shape from {dst.shape} to "
                                f"{value.shape}; a loop variable must keep its shape")
                        np.copyto(dst, value)
                    # dropped before the next run: the sub-plan then reuses its arrays
                    # (it hands a held fetch a new array and rebinds)
                    del values, value
                    step += 1
            return run
        return bind

    def loop_grad(self, cop):
        op = _op_vars(cop)
        gblock = cop.attrs["sub_block"]
        body = gblock.program.blocks[gblock.forward_block_idx]
        tag = f"@B{gblock.idx}"
        wanted, grad_loop = op.inputs["X"], op.inputs.get("LoopVars", [])
        seed_of = {gblock.vars[f"{v.name}@SEED{tag}"]: v for v in grad_loop}
        outs = [gblock.vars[f"{x.name}@DX{tag}"] for x in wanted]
        shared = op.inputs.get("Arrays", [])
        in_vars = list(dict.fromkeys(block_reads(gblock) + shared))
        # fetching the shared arrays keeps the ops that update them (results past
        # len(outs) unused)
        sub = SubBlockRun(gblock, in_vars, outs + shared)

        def bind(ins, out_arrays):
            douts, dxs = ins.get("DOut", []), out_arrays["DX"]
            holders = dict(zip(shared, ins.get("Arrays", [])))

            def run():
                _, entries = _tapes().get(body, (None, []))
                carry = {v: d.copy() for v, d in zip(grad_loop, douts)}
                acc = {x: np.zeros_like(dx) for x, dx in zip(wanted, dxs) if x not in carry}
                for k in reversed(range(len(entries))):
                    values = entries[k]
                    arrays = [carry[seed_of[v]] if v in seed_of else holders[v]
                              if v in holders else values[v] for v in in_vars]
                    try:
                        results = sub.run(arrays)
                    except Exception as e:
                        raise type(e)(f"while_grad (block {gblock.idx}), iteration {k}: "
                                      f"{e}") from e
                    for x, r in zip(wanted, results):
                        if x in carry:
                            carry[x] = r.copy()
                        else:
                            acc[x] += r
                    del results, r
                for x, dx in zip(wanted, dxs):
                    np.copyto(dx, carry[x] if x in carry else acc[x])
            return run
        return bind


set_block_runner(_Runner())
