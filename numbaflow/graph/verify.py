"""IR invariants, checked by tests after every transformation.

* every op type is registered; slots and attributes match its OpDef;
* every referenced Variable is the block's own object under that name;
* a non-persistable variable has at most one producer, and is produced before it is
  read unless it is fed (data) — persistables may be updated in place;
* re-running shape inference reproduces every output's shape and dtype.
"""
from ..kernels.registry import get_op_def
from .program import infer_op


class IRError(AssertionError):
    """The IR broke an invariant (a bug in a pass or a layer, not in user input)."""


def _compatible(a, b):
    return len(a) == len(b) and all(x == y or x == -1 or y == -1 for x, y in zip(a, b))


def verify(program):
    """Raise IRError naming the first broken invariant; return True otherwise."""
    for block in program.blocks:
        produced = set()
        for i, op in enumerate(block.ops):
            where = f"block {block.idx} op {i} ({op.type})"
            opdef = get_op_def(op.type)
            for kind, given, slots in (("input", op.inputs, opdef.inputs),
                                       ("output", op.outputs, opdef.outputs)):
                names = {s.name: s for s in slots}
                for k, vs in given.items():
                    if k not in names:
                        raise IRError(f"{where}: unknown {kind} slot {k}")
                    if len(vs) > 1 and not names[k].duplicable:
                        raise IRError(f"{where}: slot {k} holds {len(vs)} vars")
                for s in slots:
                    if not s.optional and not given.get(s.name) and kind == "input":
                        raise IRError(f"{where}: required {kind} slot {s.name} is empty")
            if set(op.attrs) != set(opdef.attrs):
                raise IRError(f"{where}: attrs {sorted(op.attrs)} != schema {sorted(opdef.attrs)}")
            for v in op.input_vars():
                if block.vars.get(v.name) is not v:
                    raise IRError(f"{where}: input {v.name} is not a variable of the block")
                if not (v.persistable or v.is_data or v in produced):
                    raise IRError(f"{where}: input {v.name} is read before it is produced")
            for v in op.output_vars():
                if block.vars.get(v.name) is not v:
                    raise IRError(f"{where}: output {v.name} is not a variable of the block")
                if v in produced and not v.persistable:
                    raise IRError(f"{where}: {v.name} is produced twice")
                produced.add(v)
            inferred = infer_op(op)
            ins = set(op.input_vars())
            for slot, vs in op.outputs.items():
                for v, info in zip(vs, inferred.get(slot, [])):
                    if v in ins:
                        continue
                    if not _compatible(v.shape, info.shape) or v.dtype != info.dtype:
                        raise IRError(f"{where}: {v.name} is {v.shape}/{v.dtype} but "
                                      f"inference gives {info.shape}/{info.dtype}")
    return True
