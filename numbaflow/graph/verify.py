"""IR invariants, checked by tests after every transformation.

* every op type is registered; slots and attributes match its OpDef;
* every referenced Variable is the block's own object under that name;
* a non-persistable variable has at most one producer, and is produced before it is
  read unless it is fed (data) — persistables may be updated in place;
* re-running shape inference reproduces every output's shape and dtype;
* each op is in its own block once, and the block's producer/consumer maps list
  exactly the ops that write / read each variable (an op edited behind the Block's
  mutators shows up here).
"""
from ..kernels.registry import get_op_def
from .program import infer_op


class IRError(AssertionError):
    """The IR broke an invariant (a bug in a pass or a layer, not in user input)."""


def _types(ops):
    return sorted(op.type for op in ops)


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
            ins = set(op.input_vars())
            for v in op.input_vars():
                if not block.sees(v):
                    raise IRError(f"{where}: input {v.name} is not a variable of the block "
                                  f"or of a block enclosing it")
                # a sub-block reads what the blocks around it computed before its op ran;
                # a tensor array starts each run empty
                local = block.vars.get(v.name) is v
                if local and not (v.persistable or v.is_data or v in produced or
                                  v.is_tensor_array):
                    raise IRError(f"{where}: input {v.name} is read before it is produced")
            for v in op.output_vars():
                if not block.sees(v):
                    raise IRError(f"{where}: output {v.name} is not a variable of the block "
                                  f"or of a block enclosing it")
                # updated in place (a loop variable by `while`, a tensor array by each
                # write) is not produced twice
                if v in produced and not v.persistable and v not in ins and \
                        not v.is_tensor_array:
                    raise IRError(f"{where}: {v.name} is produced twice")
                produced.add(v)
            if op.block is not block:
                raise IRError(f"{where}: the op belongs to another block")
            inferred = infer_op(op)
            for slot, vs in op.outputs.items():
                for v, info in zip(vs, inferred.get(slot, [])):
                    if v in ins:
                        continue
                    if not _compatible(v.shape, info.shape) or v.dtype != info.dtype:
                        raise IRError(f"{where}: {v.name} is {v.shape}/{v.dtype} but "
                                      f"inference gives {info.shape}/{info.dtype}")
        _check_maps(block)
    return True


def _check_maps(block):
    """The block's producer/consumer maps agree with its ops."""
    if len({id(op) for op in block.ops}) != len(block.ops):
        raise IRError(f"block {block.idx}: an op appears twice in the op list")
    uses = block.uses
    if not uses.ranks_follow(block.ops):
        raise IRError(f"block {block.idx}: the op ranks do not follow the op list")
    for what, table, vars_of in (("consumer", uses.readers, "input_vars"),
                                 ("producer", uses.writers, "output_vars")):
        want = {}
        for op in block.ops:
            for v in getattr(op, vars_of)():
                want.setdefault(v, set()).add(id(op))
        got = {v: set(ops) for v, ops in table.items()}
        if got != want:
            v = next(v for v in set(got) | set(want) if got.get(v) != want.get(v))
            raise IRError(f"block {block.idx}: the {what} map of {v.name} lists "
                          f"{_types(table.get(v, {}).values())} but the ops say "
                          f"{_types(o for o in block.ops if id(o) in want.get(v, ()))} (an "
                          f"op was edited without the Block's mutators)")
