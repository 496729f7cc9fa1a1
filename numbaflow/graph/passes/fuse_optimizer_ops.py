"""fuse_all_optimizer_ops: one update op per optimizer type and dtype.

Paddle's pass (BuildStrategy.fuse_all_optimizer_ops, off by default) coalesces the
parameters, gradients and states of every `sgd` / `momentum` / `adam` op into contiguous
buffers and runs one update over them. Here the buffers stay where they are: the group
becomes one `fused_<type>` op (kernels/fused/fused_optim.py) whose duplicable slots list every
parameter, and its generated kernel updates them all in one call (CPU) or launch (GPU).

Grouping: optimizer ops (OPTIMIZER trait) of the same type, identical attributes, the
same dtype in every slot and the same output slots (adam's optional Beta1PowOut /
Beta2PowOut: the fused op then advances every parameter's powers too). A group of two or
more becomes one fused op placed where the LAST op of the group was: every gradient is
ready there. Ops between the first and the last member that depend on an earlier member
(`scale` ops advancing a Beta1Pow / Beta2Pow the update still has to read, in programs
that do it that way; anything reading an updated parameter) move, in order, to right
after the fused op. A group is refused, with the
reason, when that is impossible (a later member depends on such an op), and so is a
member that uses a variable another member updates (two updates of one parameter must
stay sequential). Every optimizer op left unfused is reported through `refuse`: a lone op
of its type/dtype/attributes, an op type without a fused kernel, an input shape the fused
kernel does not take.

Paddle forces this flag off in Reduce mode (each parameter's update runs on its owner
device); the data-parallel rewrite decides that, not this pass.
"""
from ...kernels.fused.fused_optim import fused_type_of
from ...kernels.registry import FUSED, OPTIMIZER, get_op_def, numel
from ..program import infer_op
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite, rewrite_block


def _reads(op):
    return set(op.input_vars())


def _writes(op):
    return set(op.output_vars())


def _one_element(v):
    return all(d >= 0 for d in v.shape) and numel(v.shape) == 1


def _scalar_slots(op):
    """Input slots holding one element while the parameter has more (learning rate, beta
    powers); None when the parameter itself has one element (it fits any group)."""
    if _one_element(op.inputs["Param"][0]):
        return None
    return frozenset(k for k, vs in op.inputs.items() if _one_element(vs[0]))


@register_pass
class FuseAllOptimizerOps(Rewrite):
    name = "fuse_all_optimizer_ops"

    def run(self, program):
        return any([rewrite_block(self, block) for block in program.blocks])

    def what(self, ops):
        return f"{len(ops)} {ops[0].type} ops updating {[op.input('Param')[0] for op in ops]}"

    # ------------------------------------------------------------ grouping
    def candidates(self, block, ops):
        """Lists of fusable ops (program order); refuses the optimizer ops left alone."""
        by_key, per_type = {}, {}
        for op in ops:
            if not get_op_def(op.type).has(OPTIMIZER) or get_op_def(op.type).has(FUSED):
                continue
            if fused_type_of(op.type) is None:
                self.refuse(f"{op.type} op updating {op.input('Param')}",
                            f"there is no fused kernel for {op.type}")
                continue
            extra = set(op.outputs) - {s.name for s in
                                       get_op_def(fused_type_of(op.type)).outputs}
            if extra:
                self.refuse(f"{op.type} op updating {op.input('Param')}",
                            f"{fused_type_of(op.type)} has no output {sorted(extra)}")
                continue
            # the key's slot names keep ops with different optional slots apart (adam
            # with and without Beta1PowOut/Beta2PowOut)
            dtypes = tuple((k, str(vs[0].dtype)) for k, vs in sorted(op.inputs.items()))
            key = (op.type, repr(sorted(op.attrs.items())), dtypes, tuple(sorted(op.outputs)))
            by_key.setdefault(key, []).append(op)
            per_type[op.type] = per_type.get(op.type, 0) + 1
        groups = []
        for key, ops in by_key.items():
            for part in _split_by_scalar_slots(ops):
                if len(part) >= 2:
                    groups.append(part)
                    continue
                op = part[0]
                others = per_type[op.type] - 1
                self.refuse(
                    f"{op.type} op updating {op.input('Param')}",
                    f"it is the only {op.type} op with Param dtype "
                    f"{op.inputs['Param'][0].dtype} and attrs {op.attrs}: nothing to fuse it "
                    f"with" + (f" ({others} other {op.type} op(s) differ in dtype, attributes "
                               f"or which inputs are one-element)" if others else ""))
        groups.sort(key=lambda g: block.index(g[-1]))
        return groups

    # ------------------------------------------------------------ one group
    def match(self, block, ops):
        members, taken, written = [], set(), set()
        for op in ops:      # a member may not touch what another member updates
            clash = (_writes(op) & taken) | (_reads(op) & written)
            if clash:
                self.refuse(f"{op.type} op updating {op.input('Param')}",
                            f"it uses {sorted(v.name for v in clash)}, which another "
                            f"{op.type} op of its group also updates: the updates must "
                            f"stay sequential")
                continue
            members.append(op)
            taken |= _reads(op) | _writes(op)
            written |= _writes(op)
        if len(members) < 2:
            if members:
                raise Refused("fewer than two independent updates are left to fuse")
            return None
        order = plan_move(block.ops, members)
        if isinstance(order, str):
            raise Refused(order)
        _, moved = order
        first = members[0]
        inputs = {k: [m.inputs[k][0] for m in members] for k in first.inputs}
        outputs = {k: [m.outputs[k][0] for m in members] for k in first.outputs}
        fused = block.make_op(fused_type_of(first.type), inputs, outputs, dict(first.attrs))
        fused.role = members[-1].role
        try:
            infer_op(fused)
        except ValueError as e:
            raise Refused(f"the fused op does not accept them: {e}") from None
        # the fused op goes where the last member was; the ops that depend on an earlier
        # member move, in order, to right after it
        return Replacement(members, [fused], [members[-1]], after=moved)


def _split_by_scalar_slots(ops):
    """Split one type/attrs/dtype bucket so that every part agrees on which input slots
    are one-element broadcasts; one-element parameters join the largest part."""
    parts, anywhere = {}, []
    for op in ops:
        sig = _scalar_slots(op)
        (anywhere if sig is None else parts.setdefault(sig, [])).append(op)
    if not parts:
        return [anywhere]
    lists = sorted(parts.values(), key=len, reverse=True)
    lists[0] = sorted(lists[0] + anywhere, key=ops.index)
    return lists


def plan_move(ops, members):
    """Where everything goes when `members` (in program order) become one op at the last
    member's position: (ops that stay before it, ops moved to right after it), or a
    string saying why that would change the program's meaning.

    An op between the first and last member moves when it depends on an earlier member
    or on an op that moves (reads what they write, or writes what they read or write).
    """
    index = {id(op): i for i, op in enumerate(ops)}
    start, last = index[id(members[0])], index[id(members[-1])]
    member_ids = {id(m) for m in members}
    reads, writes = set(), set()       # of earlier members and of the ops that move
    before, moved = list(ops[:start]), []
    for op in ops[start:last + 1]:
        r, w = _reads(op), _writes(op)
        if id(op) in member_ids:
            blockers = [m for m in moved if (_writes(m) & (r | w)) or (_reads(m) & w)]
            if blockers:
                b = blockers[0]
                return (f"{op.type} op updating {op.input('Param')} depends on the "
                        f"{b.type} op writing {b.output_arg_names}, which must run after the "
                        f"earlier updates it follows; the fused op cannot satisfy both")
            reads |= r
            writes |= w
        elif (r & writes) or (w & (reads | writes)):
            moved.append(op)
            reads |= r
            writes |= w
        else:
            before.append(op)
    return before, moved
