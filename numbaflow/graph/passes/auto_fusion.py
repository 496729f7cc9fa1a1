"""auto_fusion (BuildStrategy.enable_auto_fusion): connected groups of elementwise ops
become one `fused_elementwise` op whose kernel is generated from the sub-ops' scalar
bodies (kernels/fused/fused_elementwise.py), with the matmul that feeds the group (epilogue
fusion: bias add + activation) and a reduction or softmax that reads it (prologue).

Forward and backward graphs alike: grad ops of elementwise ops are elementwise ops. A
group is grown in program order: an op joins the groups of the elementwise ops that
produce its inputs when

* they iterate over the same shape (broadcast inputs are fine; a value summed down to a
  smaller shape, like a bias gradient, may leave the group but not be read inside it),
* they have the same role (forward / backward / ...),
* the union stays convex: no path leaves the group and comes back into it (otherwise no
  position of the fused op could respect every read-before-write).

Then a group may take, at each end and where it stays convex, a `mul`/`matmul_v2`
producing one of its inputs (run first: the BLAS call writes a buffer the generated
kernel reads) and a `reduce_sum`/`reduce_mean`/`softmax` reading one of its values (run
last). Those are separate kernels inside the one op: the win is fewer ops and buffers,
not fewer passes over memory.

Each group then meets the cost rule (cost.py): of the group with and without its head
and tail, the variant that saves most is fused, and none where none saves anything (the
refusal gives the numbers). On the CPU a head or tail saves one dispatch but makes the
fused op a Python sequence of kernels, so it stays outside; a GEMM + bias add alone is
left as it is.

Left alone, each with a recorded reason: optimizer updates (ParamOut is Param: state
updated in place; `fuse_all_optimizer_ops` is their fusion), ops that write a
persistable or one of their own inputs, random or failing ops, and ops the executor
would skip for the protected (fed/fetched) names (fused, they would run and need their
inputs). A group of two or more ops is replaced by one op placed after everything it
depends on and before everything that depends on it. Its outputs are the group's values
that are read outside it, protected or persistable; the rest live only in registers
(or, for a matmul output or a reduction input, in the op's private scratch buffer).
"""
import numpy as np

from ...kernels.math.elementwise import align
from ...kernels.fused.fused_elementwise import HEADS, TAILS, make_ops
from ...kernels.registry import (ELEMENTWISE, MAY_FAIL, OPTIMIZER, RANDOM, broadcast_shapes,
                                 get_op_def)
from ..program import infer_op
from . import register_pass
from .cost import judge
from .rewrite import Refused, Replacement, Rewrite, rewrite_block


def _desc(op):
    return f"{op.type}({', '.join(op.output_arg_names)})"


def iteration_shape(op):
    """The (symbolic, -1 = unknown) shape an elementwise op iterates over, or None."""
    opdef = get_op_def(op.type)
    shapes = [v.shape for s in opdef.inputs for v in op.inputs.get(s.name, [])]
    if not shapes:
        return None
    ndim = max(len(s) for s in shapes)
    try:
        return broadcast_shapes(*[align(s, ndim, opdef.operand_axis(op.attrs)) for s in shapes])
    except ValueError:
        return None


def dependencies(ops):
    """succ[i]: indices of the ops that must stay after op i (read-after-write,
    write-after-read and write-after-write on every variable)."""
    succ = [set() for _ in ops]
    writer, readers = {}, {}
    for i, op in enumerate(ops):
        for v in op.input_vars():
            if v in writer:
                succ[writer[v]].add(i)
        for v in op.output_vars():
            for j in readers.get(v, []) + ([writer[v]] if v in writer else []):
                if j != i:
                    succ[j].add(i)
            writer[v], readers[v] = i, []
        for v in op.input_vars():
            readers.setdefault(v, []).append(i)
    return succ


class BlockDependencies:
    """`dependencies(block.ops)` computed on demand from the block's producer/consumer
    maps: `succ[i]` costs O(uses of op i's variables), not a scan of the program (the
    rewrite loop asks for a few ops per group). Valid until the block changes."""

    def __init__(self, block):
        self.block, self.ops, self._succ = block, block.ops, {}

    def _next_writer(self, v, i):
        return min((j for j in map(self.block.index, self.block.producers(v)) if j > i),
                   default=None)

    def __getitem__(self, i):
        if i not in self._succ:
            block, op, out = self.block, self.ops[i], set()
            for v in op.output_vars():
                nxt = self._next_writer(v, i)
                # readers up to (and including an in-place) next write see op i's value
                out.update(j for j in map(block.index, block.consumers(v))
                           if j > i and (nxt is None or j <= nxt))
                if nxt is not None:
                    out.add(nxt)
            for v in op.input_vars():
                nxt = self._next_writer(v, i)
                if nxt is not None:
                    out.add(nxt)
            self._succ[i] = out
        return self._succ[i]


def live_ops(ops, protected):
    """ids of the ops the executor runs when the `protected` names are fetched: those
    computing them or a persistable, and what they read (all ops when nothing is
    protected, e.g. `Graph.apply_pass` without names)."""
    if not protected:
        return {id(op) for op in ops}
    needed, live = set(protected), set()
    for op in reversed(ops):
        if any(v.name in needed or v.persistable for v in op.output_vars()):
            live.add(id(op))
            needed.update(v.name for v in op.input_vars())
    return live


def escape(group, succ):
    """An op outside `group` on a path that leaves the group and re-enters it, or None."""
    hi = max(group)
    seen, stack = set(), [j for g in group for j in succ[g] if j not in group and j < hi]
    while stack:
        j = stack.pop()
        if j in seen:
            continue
        seen.add(j)
        for k in succ[j]:
            if k in group:
                return j
            if k < hi and k not in seen:
                stack.append(k)
    return None


@register_pass
class AutoFusion(Rewrite):
    name = "auto_fusion"

    def run(self, program):
        return any([rewrite_block(self, block) for block in program.blocks])

    def what(self, group):
        return "group " + " + ".join(_desc(op) for op in group)

    def candidates(self, block, ops):
        """The groups of the block (a pass over whole programs: `ops` is the block's)."""
        return [[block.ops[i] for i in g] for g in self._groups(block)]

    # ------------------------------------------------------------ finding groups
    def _excluded(self, op, opdef, live):
        """Why an op may not join any group (None: it may)."""
        if id(op) not in live:
            return ("nothing protected (fed/fetched) or persistable needs it: the executor "
                    "skips it, and fused it would run (and need its inputs fed)")
        if opdef.has(OPTIMIZER):
            return ("optimizer update: ParamOut is Param (state updated in place); "
                    "fuse_all_optimizer_ops fuses these")
        if opdef.has(RANDOM) or opdef.has(MAY_FAIL):
            return "draws random numbers or may fail: kept a separate op"
        ins = set(op.input_vars())
        for v in op.output_vars():
            if v in ins:
                return f"writes its own input {v.name} in place"
            if v.persistable:
                return f"writes the persistable {v.name} (state kept across runs)"
        if iteration_shape(op) is None:
            return "its iteration shape is unknown"
        return None

    def _groups(self, block):
        ops = block.ops
        self._live = live_ops(ops, self.protected)
        self._taken = set()             # matmuls / reductions already at a group's end
        self._producer = {v: j for j, op in enumerate(ops) for v in op.output_vars()}
        self._readers = {}
        for j, op in enumerate(ops):
            for v in dict.fromkeys(op.input_vars()):
                self._readers.setdefault(v, []).append(j)
        succ = dependencies(ops)
        shape, group_of = {}, {}       # op index -> iteration shape / group (a set)
        writer = {}
        for i, op in enumerate(ops):
            opdef = get_op_def(op.type)
            candidate = opdef.has(ELEMENTWISE) and opdef.body is not None
            if candidate:
                why = self._excluded(op, opdef, self._live)
                if why:
                    self.refuse(_desc(op), why)
                    candidate = False
            if candidate:
                shape[i] = iteration_shape(op)
                group = {i}
                for v in op.input_vars():
                    p = writer.get(v)
                    if p is None or p not in group_of or p in group:
                        continue
                    if self._joinable(ops, p, i, v, shape, group_of[p] | group, succ):
                        group |= group_of[p]
                for j in group:
                    group_of[j] = group
            for v in op.output_vars():
                writer[v] = i
        unique = {id(g): g for g in group_of.values()}
        groups = [self._with_ends(ops, sorted(g), shape[min(g)], succ)
                  for g in sorted(unique.values(), key=min)]
        return [g for g in groups if len(g) > 1]

    def _with_ends(self, ops, body, full, succ):
        """The group's op indices in sub-op order: a matmul producing one of its inputs
        first (epilogue), the elementwise ops, a reduction reading one of its values last
        (prologue), each only where the group stays convex."""
        members, role = set(body), ops[body[0]].role
        head = tail = None
        producer, readers = self._producer, self._readers
        for i in body:
            for v in ops[i].input_vars():
                p = producer.get(v)
                if p is None or p > i or ops[p].type not in HEADS or p in self._taken or \
                        id(ops[p]) not in self._live:
                    continue
                if self._end_ok(ops, p, i, v, members, role, succ, "epilogue of"):
                    head = p
                    break
            if head is not None:
                break
        if head is not None:
            members.add(head)
        for i in body:
            for v in ops[i].output_vars():
                if v.persistable or tuple(v.shape) != full:
                    continue
                for c in readers.get(v, ()):
                    if c in members or c in self._taken or ops[c].type not in TAILS or \
                            id(ops[c]) not in self._live:
                        continue
                    if self._end_ok(ops, c, i, v, members, role, succ, "prologue of"):
                        tail = c
                        break
                if tail is not None:
                    break
            if tail is not None:
                break
        ends = [e for e in (head, tail) if e is not None]
        self._taken.update(ends)
        return ([head] if head is not None else []) + body + ([tail] if tail is not None else [])

    def _end_ok(self, ops, e, i, v, members, role, succ, kind):
        what = f"{ops[e].type} as the {kind} {ops[i].type} via {v.name}"
        if ops[e].role != role:
            self.refuse(what, f"different roles ({ops[e].role} / {role})")
            return False
        j = escape(members | {e}, succ)
        if j is not None:
            self.refuse(what, f"the group would not be convex: {_desc(ops[j])} lies on a path "
                              f"that leaves it and comes back")
            return False
        return True

    def _joinable(self, ops, p, i, v, shape, union, succ):
        """May op i join the group of op p, whose output v it reads? Refusals say why."""
        what = f"{ops[p].type} -> {ops[i].type} via {v.name}"
        if shape[p] != shape[i]:
            self.refuse(what, f"different iteration shapes {shape[p]} and {shape[i]}")
            return False
        if tuple(v.shape) != shape[i]:
            self.refuse(what, f"{v.name} has shape {v.shape}, smaller than the iteration "
                              f"shape {shape[i]} (summed down): it can only leave a group")
            return False
        if ops[p].role != ops[i].role:
            self.refuse(what, f"different roles ({ops[p].role} / {ops[i].role})")
            return False
        j = escape(union, succ)
        if j is not None:
            self.refuse(what, f"the group would not be convex: {_desc(ops[j])} lies on a path "
                              f"that leaves it and comes back")
            return False
        return True

    # ------------------------------------------------------------ rewriting
    def match(self, block, group):
        chosen = self._cheapest(block, group, self.what(group))
        if chosen is None:
            return None
        group, new_op = chosen
        # an earlier rewrite may have joined two of this group's paths into one op
        members = {block.index(op) for op in group}
        succ = BlockDependencies(block)
        j = escape(members, succ)
        if j is not None:
            raise Refused(f"no longer convex after an earlier fusion: "
                          f"{_desc(block.ops[j])} lies on a path through it")
        lo, hi = min(members), max(members)
        before = set()      # window ops the group depends on
        for k in range(hi, lo - 1, -1):
            if k not in members and any(s in members or s in before for s in succ[k]):
                before.add(k)
        # the fused op goes where the group's first op was, after the ops in the
        # window that it depends on (they move up, in order)
        return Replacement(group, [new_op], [block.ops[lo]],
                           before=[block.ops[k] for k in sorted(before)])

    def _cheapest(self, block, group, what):
        """(ops, fused op) of the variant of `group` that pays most: with or without its
        head matmul and its tail reduction (each a separate kernel inside the fused op,
        saving one op but adding a call sequence), by the cost rule (cost.py); None when
        no variant pays or the group cannot be fused (each refusal says why)."""
        head = group[:1] if group[0].type in HEADS else []
        tail = group[-1:] if group[-1].type in TAILS and len(group) > 1 else []
        body = group[len(head):len(group) - len(tail)]
        full = self._fused_op(block, group, what)
        if full is None or not self.cost_rule:
            return None if full is None else (group, full)
        verdicts = []
        for h in ([head, []] if head else [[]]):
            for t in ([tail, []] if tail else [[]]):
                ops = h + body + t
                if len(ops) < 2 or len(body) < 1:
                    continue
                new_op = full if len(ops) == len(group) else \
                    self._fused_op(block, ops, what, quiet=True)
                if new_op is not None:
                    verdicts.append((judge(ops, new_op, self.device), ops, new_op))
        verdict, ops, new_op = max(verdicts, key=lambda x: x[0].saved_s)
        if not verdict.pays:
            self.refuse(what, f"fusing does not pay: {verdict}")
            return None
        for end in (e for e in head + tail if all(e is not o for o in ops)):
            self.refuse(f"{_desc(end)} at the end of the {what}",
                        f"the group pays more without it: {verdict.saved_s * 1e6:+.1f} us "
                        f"per run against {verdicts[0][0].saved_s * 1e6:+.1f} us with it")
        return ops, new_op

    def _fused_op(self, block, group, what, quiet=False):
        """The fused_elementwise op replacing `group` (in sub-op order), or None (refused,
        with the reason unless `quiet`)."""
        refuse = (lambda *a: None) if quiet else self.refuse
        inside = {id(op) for op in group}

        def read_outside(v):
            return any(id(o) not in inside for o in block.consumers(v))
        x_vars, x_index, local, out_vars = [], {}, {}, []
        entries, n_tmp = [], 0
        for op in group:
            ins = {}
            for slot, vs in op.inputs.items():
                refs = []
                for v in vs:
                    if v in local:
                        refs.append(local[v])
                        continue
                    if v not in x_index:
                        x_index[v] = len(x_vars)
                        x_vars.append(v)
                    refs.append(("x", x_index[v]))
                ins[slot] = refs
            outs = {}
            for slot, vs in op.outputs.items():
                refs = []
                for v in vs:
                    if read_outside(v) or v.name in self.protected or v.persistable:
                        local[v] = ("out", len(out_vars))
                        out_vars.append(v)
                    else:
                        local[v] = ("tmp", n_tmp)
                        n_tmp += 1
                    refs.append(local[v])
                outs[slot] = refs
            entries.append((op.type, op.attrs, ins, outs))
        if not out_vars:
            refuse(what, "nothing reads its results")
            return None
        floats = {np.dtype(v.dtype).name for v in list(local) + x_vars
                  if np.dtype(v.dtype).kind == "f"}
        if len(floats) > 1:
            refuse(what, f"mixes float dtypes {sorted(floats)}; one generated kernel "
                         f"computes in one float type")
            return None
        new_op = block.make_op("fused_elementwise", {"X": x_vars}, {"Out": out_vars},
                                {"ops": make_ops(entries)})
        new_op.role = group[0].role
        try:
            inferred = infer_op(new_op)["Out"]
        except ValueError as e:
            refuse(what, f"the fused op's shape inference fails: {e}")
            return None
        for v, info in zip(out_vars, inferred):
            if tuple(info.shape) != tuple(v.shape) or np.dtype(info.dtype) != np.dtype(v.dtype):
                refuse(what, f"the fused op would give {v.name} shape {info.shape} "
                             f"{info.dtype}, not {v.shape} {v.dtype}")
                return None
        return new_op
