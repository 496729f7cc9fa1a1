"""recompute_elementwise: recompute a cheap elementwise result in the backward instead of
keeping it alive from the forward.

    y = f(x, ...)          (forward)                 y = f(x, ...)        (forward)
    ...                                        ->    ...
    g(y, ...)              (backward reader)         y' = f(x, ...)       (backward)
                                                     g(y', ...)

A candidate is a forward op whose OpDef makes it cheap to run twice: an elementwise op
with a scalar body (one pass over memory), not random, fused, an optimizer update, a
collective or one that may fail. Its output y is read (by value:
`registry.value_inputs`) by backward ops; then a copy of the op goes right before the
first of them, writing a new variable y', and every backward value reader reads y'
instead. y then dies at its last forward reader and y' lives only through the backward
readers. The GELU of a transformer's MLP is the case: the next fc's `mul_grad` reads its
output while `gelu_grad` reads its input, so keeping both cost two tensors of
[batch, ctx, 4 d] per layer; now the input alone stays.

Refused, with the reason, when it would keep more rather than less: an input of the op
that would otherwise die before y's first backward reader (recomputing would keep it
alive instead), y fetched or persistable, or no op between y's last forward use and its
first backward reader (nothing would be freed); and when a backward reader runs a
sub-block (a control-flow gradient: its ops name y itself). The trade is memory for a recompute,
not a fusion: the time cost rule does not apply; docs/architecture.md "Activation
memory" has the measurement.
"""
from ...kernels.registry import (COLLECTIVE, ELEMENTWISE, FUSED, MAY_FAIL, OPTIMIZER, RANDOM,
                                 get_op_def, value_inputs)
from ..block import Block
from ..nodes import BACKWARD, FORWARD, Variable
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite

# traits that make running an op a second time wrong or not cheap
_NOT_RECOMPUTABLE = frozenset({RANDOM, FUSED, OPTIMIZER, COLLECTIVE, MAY_FAIL})


def recomputable(op_type):
    """True when an op of `op_type` is cheap and safe to run again in the backward: an
    elementwise op with a scalar body, none of RANDOM, FUSED, OPTIMIZER, COLLECTIVE,
    MAY_FAIL.

    >>> recomputable("gelu"), recomputable("dropout"), recomputable("matmul_v2")
    (True, False, False)
    """
    opdef = get_op_def(op_type)
    return opdef.has(ELEMENTWISE) and opdef.body is not None and \
        not opdef.traits & _NOT_RECOMPUTABLE


def _last_value_read(block, v):
    """Index of the last op of `block` that reads `v`'s value (-1: none)."""
    return max((block.index(c) for c in block.consumers(v) if v in value_inputs(c)), default=-1)


def _match(block, op, protected):
    if op.role != FORWARD or len(op.output_vars()) != 1 or not recomputable(op.type):
        return None
    y = op.output_vars()[0]
    readers = [c for c in block.consumers(y) if c.role == BACKWARD and y in value_inputs(c)]
    if not readers:
        return None                 # the backward does not keep y: nothing to do
    if y.name in protected or y.persistable:
        raise Refused(f"{y.name} is fetched or persistable: it stays alive anyway")
    for r in readers:
        if any(isinstance(a, Block) for a in r.attrs.values()):
            raise Refused(f"{r.type} runs a sub-block that reads {y.name} by name")
    first = block.index(readers[0])
    for x in op.input_vars():
        if x.persistable or x.is_data or x.name in protected:
            continue                # lives through the run anyway
        last = _last_value_read(block, x)
        if last < first:
            raise Refused(f"its input {x.name} dies at op {last} before {y.name}'s first "
                          f"backward reader (op {first}, {readers[0].type}): recomputing "
                          f"would keep {x.name} alive instead")
    forward_use = max([block.index(op)] + [block.index(c) for c in block.consumers(y)
                                           if c.role != BACKWARD])
    if forward_use + 1 >= first:
        raise Refused(f"{y.name}'s first backward reader ({readers[0].type}) comes right "
                      f"after its last forward use: nothing would be freed")
    # a variable of this block's program, added to the block by the driver of a compiled
    # program (Replacement.vars); a plain run's plan holds it without the block
    y2 = Variable(block, f"{y.name}@RECOMPUTED", y.shape, y.dtype, stop_gradient=True)
    again = block.make_op(op.type, op.inputs, {s: [y2] for s in op.outputs}, op.attrs)
    again.role = BACKWARD
    new = [again]
    for r in readers:
        copy = block.make_op(r.type, {s: [y2 if v is y else v for v in vs]
                                      for s, vs in r.inputs.items()}, r.outputs, r.attrs)
        copy.role = r.role
        new.append(copy)
    return Replacement(old=list(readers), new=new, at=[readers[0]] + list(readers), vars=[y2],
                       what=f"{op.type} -> {y.name}")


@register_pass
class RecomputeElementwise(Rewrite):
    """A cheap elementwise forward result read by the backward is recomputed right before
    its first backward reader (from inputs that live anyway) instead of being kept."""
    name = "recompute_elementwise"
    cost_rule = False               # memory for time, by design: measured, not priced

    def candidates(self, block, ops):
        return [op for op in ops if op.role == FORWARD and recomputable(op.type)]

    def match(self, block, op):
        return _match(block, op, self.protected)
