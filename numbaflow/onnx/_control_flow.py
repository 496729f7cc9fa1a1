"""The ops of a block mapped to ONNX nodes in SSA form, control flow included.

ONNX names each value once, while a program may write a variable again (a `while` op
updates its loop variables in place, its body assigns them): `emit_block` gives every
variable written more than once a fresh name per write and reads each one by the name of
its latest write (ops see their variables through `_Renamed` views, so the one-op
mappings of `_ops.py` need not know).

Rewrites (what is matched -> what is put in its place):
- `select_input` whose X are [false, true] outputs of two `conditional_block`s, its Mask
  the `cast` of the true block's Cond (the lowering of `static.nn.cond`, numbaflow's and
  Paddle's) -> one ONNX `If` on Mask per such pair of blocks, its branches the blocks' ops,
  its outputs those of every select_input of the pair; the conditional_blocks themselves
  emit nothing (a conditional_block read otherwise is refused by name).
- `while` -> ONNX `Loop` without a trip count: the Condition and the loop variables (Out)
  are the loop-carried values, the body is the sub-block's ops and outputs the recomputed
  Condition (Loop's condition) and the carried values' new values.
- a tensor array -> an ONNX sequence (SequenceEmpty when read before any write; a loop
  carries it like a loop variable): `write_to_array` -> an `If` replacing element I
  (SequenceErase + SequenceInsert) or appending it, `read_from_array` -> SequenceAt,
  `lod_array_length` -> SequenceLength.
"""
import numpy as np

CONTROL_FLOW = ("conditional_block", "select_input", "while", "write_to_array")


class Unsupported(Exception):
    """An attribute value or structure ONNX cannot express (the message says which)."""


class _Var:
    def __init__(self, var, name):
        self.var, self.name, self.shape, self.dtype = var, name, var.shape, var.dtype


class _Renamed:
    """`op` with its variables seen under their ONNX names."""

    def __init__(self, op, ins, outs):
        self.type, self.attrs, self.op = op.type, op.attrs, op
        self.inputs = {k: [_Var(v, ins(v)) for v in vs] for k, vs in op.inputs.items()}
        self.outputs = {k: [_Var(v, outs(v)) for v in vs] for k, vs in op.outputs.items()}


def _fill_constant(g, op):
    shape = [int(d) for d in op.attrs["shape"]]
    if any(d < 0 for d in shape):
        raise Unsupported(f"fill_constant of an unknown shape {shape}")
    g.node("Identity", [g.const(np.full(shape, op.attrs["value"], np.dtype(op.attrs["dtype"])))],
           [op.outputs["Out"][0].name])


def _fill_any_like(g, op):
    x, out = op.inputs["X"][0], op.outputs["Out"][0]
    value = g.h.make_tensor("value", g.h.np_dtype_to_tensor_dtype(np.dtype(out.dtype)), [1],
                            [np.asarray(op.attrs["value"], out.dtype).item()])
    g.node("ConstantOfShape", [g.node("Shape", [x.name])], [out.name], value=value)


def _increment(g, op):
    x = op.inputs["X"][0]
    g.node("Add", [x.name, g.const(op.attrs["step"], x.dtype)], [op.outputs["Out"][0].name])


def _scalar(g, i):
    return g.node("Reshape", [i.name, g.ints([])])


def _read_from_array(g, op):
    g.node("SequenceAt", [op.inputs["X"][0].name, _scalar(g, op.inputs["I"][0])],
           [op.outputs["Out"][0].name])


def _array_length(g, op):
    n = g.node("SequenceLength", [op.inputs["X"][0].name])
    g.node("Reshape", [n, g.ints([1])], [op.outputs["Out"][0].name])


def _write_to_array(g, op, array, out):
    """Out = `array` (an ONNX sequence) with element I set to X: replaced when I < its
    length, else appended (ONNX refuses an I past the end, where Paddle leaves holes)."""
    x, i = op.inputs["X"][0], _scalar(g, op.inputs["I"][0])
    branches = []
    for hint in ("replace", "append"):
        sub = g.child()
        name = g.name(hint)
        seq = sub.node("SequenceErase", [array, i]) if hint == "replace" else array
        sub.node("SequenceInsert", [seq, x.name, i], [name])
        branches.append(g.h.make_graph(sub.nodes, hint, [], [_info(g, name, x.dtype, array=True)]))
    inside = g.node("Less", [i, g.node("SequenceLength", [array])])
    g.node("If", [inside], [out], then_branch=branches[0], else_branch=branches[1])


# the constants and loop helpers control flow programs use, the tensor arrays' reads
MAP = {"fill_constant": _fill_constant, "fill_any_like": _fill_any_like,
       "increment": _increment, "read_from_array": _read_from_array,
       "lod_array_length": _array_length,
       "logical_not": lambda g, op: g.node("Not", [op.inputs["X"][0].name],
                                           [op.outputs["Out"][0].name])}


def sub_blocks(ops):
    """Every op of `ops` and of the sub-blocks their control-flow ops run."""
    for op in ops:
        yield op
        if op.attrs.get("sub_block") is not None:
            yield from sub_blocks(op.attrs["sub_block"].ops)


def emit_block(g, ops, env, mapping, problems):
    """Append to `g` the nodes of `ops`; `env` maps Variables to their ONNX names (the
    enclosing scope's on entry, updated); `mapping[op.type](g, op)` maps one plain op.
    What ONNX cannot express is added to `problems`, each naming its op."""
    writes = {}
    for op in ops:
        for v in op.output_vars():
            writes[v] = writes.get(v, 0) + 1
    cond_of, done = _match_conds(ops), set()

    def define(v):
        name = v.name if writes.get(v) == 1 and v not in env and v.name not in g.used \
            else g.name(v.name)
        g.used.add(name)
        env[v] = name
        return name

    def read(v):
        if v.is_tensor_array and v not in env:      # never written: Paddle's empty array
            env[v] = g.node("SequenceEmpty", [], dtype=g.h.np_dtype_to_tensor_dtype(
                np.dtype(v.dtype)))
        return env.get(v, v.name)

    for i, op in enumerate(ops):
        where = f"op {i} ({op.type})" + (f" of block {op.block.idx}" if op.block.idx else "")
        try:
            if op.type == "conditional_block":
                if not all(v in cond_of for v in op.output_vars()):
                    raise Unsupported("a conditional_block whose outputs are not all picked "
                                      "by a select_input of static.nn.cond's lowering")
            elif op.type == "select_input":
                if op not in cond_of:
                    raise Unsupported("a select_input that does not pick between the two "
                                      "conditional_blocks of static.nn.cond's lowering")
                if op not in done:
                    done.update(_emit_if(g, cond_of[op], env, read, define, mapping,
                                         problems))
            elif op.type == "write_to_array":
                array = op.outputs["Out"][0]
                prev = read(array)
                _write_to_array(g, _Renamed(op, read, lambda v: None), prev, define(array))
            elif op.type == "while":
                _emit_loop(g, op, env, read, define, mapping, problems)
            else:
                mapping[op.type](g, _Renamed(op, read, define))
        except Unsupported as e:
            problems.append(f"{where}: {e}")


def _match_conds(ops):
    """{select_input op: its group, conditional_block output: the group}, a group being
    (mask, true block op, false block op, [select_input ops])."""
    producer = {v: op for op in ops if op.type == "conditional_block" for v in op.output_vars()}
    cast_of = {op.outputs["Out"][0]: op.inputs["X"][0] for op in ops if op.type == "cast"}
    groups, out = {}, {}
    for op in ops:
        if op.type != "select_input" or len(op.inputs["X"]) != 2:
            continue
        f, t = (producer.get(x) for x in op.inputs["X"])
        mask = op.inputs["Mask"][0]
        if f is None or t is None or f is t or cast_of.get(mask) is not t.inputs["Cond"][0]:
            continue
        group = groups.setdefault((mask, t, f), (mask, t, f, []))
        group[3].append(op)
        out[op] = group
        out.update({x: group for x in op.inputs["X"]})
    return out


def _subgraph(g, ops, env, outputs, inputs, mapping, hint, problems):
    """An ONNX GraphProto of `ops` (a sub-block's) seeing `env` (copied); its outputs the
    final names of the Variables `outputs` (each given a fresh name through Identity)."""
    sub = g.child()
    env = dict(env)
    emit_block(sub, ops, env, mapping, problems)
    outs = []
    for v in outputs:
        name = g.name(f"{v.name}@{hint}")
        sub.node("Identity", [env.get(v, v.name)], [name])
        outs.append(_info(g, name, v.dtype, array=v.is_tensor_array))
    return g.h.make_graph(sub.nodes, hint, inputs, outs)


def _info(g, name, dtype, shape=None, array=False):
    """A value's ValueInfo: a tensor, or a sequence of them (a tensor array)."""
    elem = g.h.np_dtype_to_tensor_dtype(np.dtype(dtype))
    if array:
        return g.h.make_tensor_sequence_value_info(name, elem, shape)
    return g.h.make_tensor_value_info(name, elem, shape)


def _emit_if(g, group, env, read, define, mapping, problems):
    mask, t, f, selects = group
    branches = [_subgraph(g, block_op.attrs["sub_block"].ops, env,
                          [s.inputs["X"][k] for s in selects], [], mapping, name, problems)
                for k, block_op, name in ((1, t, "then"), (0, f, "else"))]
    cond = g.node("Cast", [read(mask)], to=g.onnx.TensorProto.BOOL)
    g.node("If", [cond], [define(s.outputs["Out"][0]) for s in selects],
           then_branch=branches[0], else_branch=branches[1])
    return selects


def _emit_loop(g, op, env, read, define, mapping, problems):
    cond = op.inputs["Condition"][0]
    # the Condition is carried too (its value after the loop, false, is a Loop output)
    carried = [cond] + [v for v in op.outputs["Out"] if v is not cond]
    body_env = dict(env)
    inputs = [_info(g, g.name("iter"), "int64", []), _info(g, g.name("cond"), "bool")]
    for v in carried:
        inputs.append(_info(g, g.name(f"{v.name}@in"), v.dtype, array=v.is_tensor_array))
        body_env[v] = inputs[-1].name
    body = _subgraph(g, op.attrs["sub_block"].ops, body_env, [cond] + carried, inputs,
                     mapping, "body", problems)
    start = g.node("Reshape", [read(cond), g.ints([])])     # Loop's cond is a scalar
    g.node("Loop", ["", start] + [read(v) for v in carried], [define(v) for v in carried],
           body=body)
