"""Rewrites as match + replacement, and the one driver that applies them.

A rewrite pass (`Rewrite`) states what it matches and what it puts in its place:
`match(block, op)` looks at a candidate starting at one op of its `anchors` types and
answers a `Replacement` (the matched ops, the new ops made with `block.make_op` and not
inserted, and where each new op goes), None (no candidate there), or raises
`Refused(reason)` (a candidate it will not rewrite: the driver records the reason with
`Pass.refuse`, so `compiled.passes` and the debug log say why). `match` never changes the
block. The driver then asks the cost rule (`Pass.pays`) and applies the replacement.

Two places use one driver:

* `rewrite_block`: a Program's block, through the Block verbs (`insert_before`,
  `remove_ops`), one candidate at a time in program order, so each match sees the block
  as the earlier replacements left it (CompiledProgram's pipeline, `static.Graph.apply_pass`);
* `rewrite_ops`: the op list of a plain `Executor.run(program)` plan, without touching the
  program: the replacements whose matched ops are all in the list are substituted in it.
  Matches are found on the program's ops, so a pass there sees an earlier pass's removals
  but not its new ops (the default-on rewrites touch disjoint ops).

>>> class FoldScaleScale(Rewrite):
...     name = "doc_fold_scale_scale"
...     anchors = ("scale",)
...     def match(self, block, op):
...         inner = block.producer(op.inputs["X"][0])
...         if inner is None or inner.type != "scale":
...             return None
...         if op.attrs["bias"] or inner.attrs["bias"]:
...             raise Refused("a scale has a bias")
...         attrs = dict(op.attrs, scale=op.attrs["scale"] * inner.attrs["scale"])
...         new = block.make_op("scale", inner.inputs, op.outputs, attrs)
...         return Replacement(old=[inner, op], new=[new], at=[op])
>>> prog = static.Program()
>>> with static.program_guard(prog, static.Program()):
...     y = paddle.scale(paddle.scale(static.data('x', [2]), 2.0), 3.0)
>>> FoldScaleScale().run(prog)
True
>>> [(op.type, op.attrs["scale"]) for op in prog.global_block().ops]
[('scale', 6.0)]
"""
from dataclasses import dataclass, field

from . import Pass, remove_unused_vars


class Refused(Exception):
    """Raised by `Rewrite.match`: a candidate that is not rewritten (the message says why)."""


@dataclass
class Replacement:
    """What a match puts in place of what: the `old` ops go, each of the `new` ops (made
    with `block.make_op`, not inserted) takes the place of `at[i]` (one of `old`, where
    the new op's inputs exist and before its outputs' readers). A replacement of a group
    spread over the block may also move other ops, in order, to right `before` the (one)
    new op (it reads what they write) or right `after` it (they read what it writes).
    `what`: how the cost rule's refusal names it (default: the pass's `what` of the
    candidate). Several new ops may take the place of one old op (in the order given).
    `vars`: new variables the new ops write (made with `Variable(block, ...)`, not added):
    the driver adds them to a program's block; a plain run's plan holds them itself."""
    old: list
    new: list
    at: list = field(default_factory=list)
    before: list = field(default_factory=list)
    after: list = field(default_factory=list)
    what: str = None
    vars: list = field(default_factory=list)

    def __post_init__(self):
        if len(self.at) != len(self.new) or \
                not all(any(a is o for o in self.old) for a in self.at):
            raise ValueError(f"Replacement: `at` must name, for each of the {len(self.new)} "
                             f"new op(s), one of the old ops it replaces; got {len(self.at)}")


class Rewrite(Pass):
    """Base of a pass that is a pattern and its replacement. A subclass sets `name`,
    `anchors` (the op types a candidate starts from) and `match`; the driver does the rest.
    A pass whose candidates are groups found over the whole block (the optimizer fusion)
    yields them from `candidates` instead (each an op or a list of ops)."""
    anchors = ()

    def candidates(self, block, ops):
        """The candidates among `ops` (ops of `block`, in program order)."""
        return [op for op in ops if op.type in self.anchors]

    def match(self, block, op):
        """The Replacement for the candidate at `op` (an op of an `anchors` type), None
        when there is none, or raise Refused(reason). Must not change the block."""
        raise NotImplementedError

    def what(self, op):
        """How a refusal names the candidate `op`."""
        return f"{op.type} -> {', '.join(v.name for v in op.output_vars())}"

    def run(self, program):
        return rewrite_block(self, program.global_block())

    def candidate(self, block, op):
        """The Replacement at `op` that the cost rule accepts, else None (a refused
        candidate is recorded with its reason)."""
        try:
            found = self.match(block, op)
        except Refused as e:
            self.refuse(self.what(op), str(e))
            return None
        if found is None or not self.pays(found.what or self.what(op), found.old, found.new):
            return None
        return found


def sole_reader(block, var, fwd_types):
    """The one forward op of `fwd_types` reading `var`, or None (gradient ops aside): what a
    fusion may take in only when nothing else reads `var`."""
    readers = [op for op in block.consumers(var) if not op.type.endswith("_grad")]
    return readers[0] if len(readers) == 1 and readers[0].type in fwd_types else None


def grad_reader(block, var, gtype, slot):
    """The one `gtype` op reading `var` in `slot` (None when there is none); refused when
    there are several."""
    found = [op for op in block.consumers(var) if op.type == gtype and op.inputs[slot][0] is var]
    if len(found) > 1:
        raise Refused(f"{var.name} has {len(found)} {gtype} ops")
    return found[0] if found else None


def first_output(op, slot):
    """op's first variable in output `slot`, or None."""
    return (op.outputs.get(slot) or [None])[0]


def rewrite_block(rewrite, block):
    """Apply `rewrite` to `block` through the Block verbs, candidate by candidate in
    program order; True when anything changed."""
    gone, changed = set(), False
    for cand in rewrite.candidates(block, list(block.ops)):
        if any(id(o) in gone for o in _ops_of(cand)):
            continue
        found = rewrite.candidate(block, cand)
        if found is None:
            continue
        dropped = sorted({v.name for o in found.old for v in o.output_vars()})
        for v in found.vars:
            block.add_var(v)
        for new, at in zip(found.new, found.at):
            block.insert_before(at, new)
        block.remove_ops(found.old)
        if found.before:
            block.move_before(found.new[0], found.before)
        if found.after:
            block.move_after(found.new[0], found.after)
        remove_unused_vars(block, dropped)
        gone.update(id(o) for o in found.old)
        changed = True
    return changed


def rewrite_ops(rewrites, block, ops):
    """`ops` (ops of `block` in program order: the ones a plan runs) with each of the
    `rewrites` applied where all the ops it matches are in the list (and it moves no
    other op); neither the block nor the program changes."""
    for rewrite in rewrites:
        have = {id(o) for o in ops}
        put, drop = {}, set()
        for cand in rewrite.candidates(block, ops):
            if not all(id(o) in have for o in _ops_of(cand)):
                continue
            found = rewrite.candidate(block, cand)
            if found is None or found.before or found.after or \
                    not all(id(o) in have for o in found.old):
                continue
            have.difference_update(id(o) for o in found.old)
            drop.update(id(o) for o in found.old)
            for a, n in zip(found.at, found.new):
                put.setdefault(id(a), []).append(n)
        if put or drop:
            ops = [n for o in ops if id(o) in put or id(o) not in drop
                   for n in put.get(id(o), [o])]
    return ops


def _ops_of(candidate):
    return candidate if isinstance(candidate, list) else [candidate]
