"""A numbaflow Program written as Paddle 2.6's ProgramDesc (`.pdmodel`), as
`paddle.static.save_inference_model` writes it: every block (`idx`, `parent_idx`), the feed
and fetch ops in the global block, a control-flow op's `sub_block` as a BLOCK attribute
and its step-scope output (conditional_block's `Scope`, while's `StepScopes`: a
STEP_SCOPES variable Paddle's ops declare and fill at run time), tensor arrays as
LOD_TENSOR_ARRAY variables. The reader is paddle_model.py.
"""
import numpy as np

from ..graph.block import Block
from ..kernels.registry import get_op_def
from . import paddle_proto as pp
from . import paddle_xshape
from .paddle_model import ASSIGN_LISTS, DTYPE_ATTRS, FEED, FETCH, LOD_TENSOR, VAR_TYPE_OF

# attributes Paddle's kernels read with no default that numbaflow's op leaves out (their
# neutral values: paddle_model._NEUTRAL_ATTRS); written with each op of that type
_PADDLE_REQUIRES = {"reduce_sum_grad": {"out_dtype": -1, "in_dtype": -1}}
# the step-scope output slot Paddle's control-flow ops declare
SCOPE_OUTPUTS = {"conditional_block": "Scope", "while": "StepScopes"}
PROGRAM_VERSION = 2006002        # the Paddle version whose ProgramDesc this writes
TENSOR_ARRAY, STEP_SCOPES = pp.VAR_TYPES["LOD_TENSOR_ARRAY"], pp.VAR_TYPES["STEP_SCOPES"]


# list attributes Paddle declares FLOATS whose numbaflow default is empty (an empty list
# tells no type; interp_v2's `scale` read as INTS fails in Paddle)
_FLOAT_LISTS = {"scale"}


def _set_attr(a, name, value, default, where):
    """Fill OpDesc.Attr `a` with `value`, typed as Paddle's OpProto types it (the OpDef's
    default tells float from int)."""
    t = pp.ATTR_TYPES
    a.name = name
    if isinstance(value, np.dtype) or name in DTYPE_ATTRS and isinstance(value, str):
        value = VAR_TYPE_OF[np.dtype(value)]
    if isinstance(value, Block):                 # a control-flow op's sub_block
        a.type, a.block_idx = t["BLOCK"], value.idx
    elif isinstance(value, (bool, np.bool_)):
        a.type, a.b = t["BOOLEAN"], bool(value)
    elif isinstance(value, (int, np.integer)) and not isinstance(default, float):
        if -2**31 <= int(value) < 2**31:
            a.type, a.i = t["INT"], int(value)
        else:
            a.type, a.l = t["LONG"], int(value)
    elif isinstance(value, (int, float, np.integer, np.floating)):
        a.type, a.f = t["FLOAT"], float(value)
    elif isinstance(value, str):
        a.type, a.s = t["STRING"], value
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
        sample = items + list(default) if isinstance(default, (list, tuple)) else items
        if all(isinstance(v, (bool, np.bool_)) for v in items) and sample and \
                all(isinstance(v, (bool, np.bool_)) for v in sample):
            a.type = t["BOOLEANS"]
            a.bools.extend(bool(v) for v in items)
        elif all(isinstance(v, (int, np.integer)) for v in sample) and \
                not (name in _FLOAT_LISTS and not items):
            if all(-2**31 <= int(v) < 2**31 for v in items):
                a.type = t["INTS"]
                a.ints.extend(int(v) for v in items)
            else:
                a.type = t["LONGS"]
                a.longs.extend(int(v) for v in items)
        elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in items):
            a.type = t["FLOATS"]
            a.floats.extend(float(v) for v in items)
        elif all(isinstance(v, str) for v in items):
            a.type = t["STRINGS"]
            a.strings.extend(items)
        else:
            raise TypeError(f"{where}: attribute {name!r} = {value!r} has no Paddle type")
    else:
        raise TypeError(f"{where}: attribute {name!r} = {value!r} has no Paddle type")


def _add_var(block_desc, name, shape, dtype, persistable=False, feed=False, array=False):
    vd = block_desc.vars.add(name=name, persistable=persistable, need_check_feed=feed)
    vd.type.type = TENSOR_ARRAY if array else LOD_TENSOR
    desc = vd.type.tensor_array.tensor if array else vd.type.lod_tensor.tensor
    desc.data_type = VAR_TYPE_OF[np.dtype(dtype)]
    desc.dims.extend(int(d) for d in shape)
    return vd


def _write_op(bd, op, where, declared):
    """Append `op` to BlockDesc `bd` as Paddle declares it (`declared`: the names of bd's
    variables, which this may add to)."""
    opdef = get_op_def(op.type)
    od = bd.ops.add(type=op.type)
    for slot, vs in op.inputs.items():
        od.inputs.add(parameter=slot, arguments=[v.name for v in vs])
    for slot, vs in op.outputs.items():
        od.outputs.add(parameter=slot, arguments=[v.name for v in vs])

    def declare(name, shape, dtype):
        if name not in declared:
            declared.add(name)
            _add_var(bd, name, shape, dtype)
    paddle_xshape.to_paddle(op, od, declare)
    if op.type in SCOPE_OUTPUTS:
        name = f"{op.type}_{bd.idx}_{len(bd.ops) - 1}.scope"
        bd.vars.add(name=name).type.type = STEP_SCOPES
        od.outputs.add(parameter=SCOPE_OUTPUTS[op.type], arguments=[name])
    attrs = {**_PADDLE_REQUIRES.get(op.type, {}), **op.attrs}
    for k in sorted(attrs):
        if op.type == "assign_value" and k == "values":
            name, kind = ASSIGN_LISTS[np.dtype(attrs["dtype"]).name]
            getattr(od.attrs.add(name=name, type=pp.ATTR_TYPES[kind]), kind.lower()).extend(
                np.asarray(attrs[k], attrs["dtype"]).ravel().tolist())
        elif attrs[k] is not None:
            _set_attr(od.attrs.add(), k, attrs[k], opdef.attrs.get(k), where)


def program_to_desc(program, feed_names, fetch_names):
    """The ProgramDesc of the inference program `program` (every block) with Paddle's feed
    and fetch ops, as `paddle.static.save_inference_model` writes it."""
    desc = pp.ProgramDesc()
    desc.version.version = PROGRAM_VERSION
    for block in program.blocks:
        bd = desc.blocks.add(idx=block.idx, parent_idx=block.parent_idx)
        if block.forward_block_idx >= 0:
            bd.forward_block_idx = block.forward_block_idx
        if block.idx == 0:
            for name, kind in (("feed", FEED), ("fetch", FETCH)):
                bd.vars.add(name=name, persistable=True).type.type = kind
        for v in block.vars.values():
            if np.dtype(v.dtype) not in VAR_TYPE_OF:
                raise TypeError(f"variable {v.name!r} has dtype {v.dtype}, which Paddle's "
                                f"format cannot hold")
            _add_var(bd, v.name, v.shape, v.dtype, v.persistable and not v.is_data,
                     block.idx == 0 and v.name in feed_names, v.is_tensor_array)
    bd = desc.blocks[0]

    def io_op(type, x, out, col):
        od = bd.ops.add(type=type)
        od.inputs.add(parameter="X", arguments=[x])
        od.outputs.add(parameter="Out", arguments=[out])
        od.attrs.add(name="col", type=pp.ATTR_TYPES["INT"], i=col)

    for col, n in enumerate(feed_names):
        io_op("feed", "feed", n, col)
    for block, block_desc in zip(program.blocks, desc.blocks):
        declared = {vd.name for vd in block_desc.vars}
        for i, op in enumerate(block.ops):
            where = f"op {i} ({op.type})" + (f" of block {block.idx}" if block.idx else "")
            _write_op(block_desc, op, where, declared)
    for col, n in enumerate(fetch_names):
        io_op("fetch", n, "fetch", col)
    return desc
