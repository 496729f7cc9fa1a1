"""Paddle 2.x inference models: `.pdmodel` (a ProgramDesc protobuf) and `.pdiparams` (the
combined tensor stream), read into a numbaflow Program and written from one.

The tensor stream (Paddle's `save_combine`) holds the persistables sorted by name, each:
  uint32 version (0) | uint64 LoD level count, then per level uint64 byte size + offsets |
  uint32 version (0) | int32 TensorDesc size | TensorDesc protobuf | the raw data
(little-endian, C order).

Ops map one to one (numbaflow's op types and slots are Paddle's). What Paddle adds that
changes nothing here (op_role, op_callstack, use_cudnn, an empty optional slot, reshape2's
XShape ...) is dropped; any other attribute or input an OpDef does not declare is refused
with a FileFormatError naming the op and the attribute, never ignored.
"""
from __future__ import annotations

import struct

import numpy as np

from ..graph.program import Program
from ..graph.serialize import FileFormatError
from ..graph.verify import verify
from ..kernels.registry import all_op_types, get_op_def
from . import paddle_proto as pp

# VarType.Type <-> numpy dtype (the tensor types numbaflow has)
_DTYPES = {pp.VAR_TYPES[k]: np.dtype(v) for k, v in (
    ("BOOL", "bool"), ("INT16", "int16"), ("INT32", "int32"), ("INT64", "int64"),
    ("FP16", "float16"), ("FP32", "float32"), ("FP64", "float64"), ("UINT8", "uint8"),
    ("INT8", "int8"))}
_VAR_TYPE_OF = {d: k for k, d in _DTYPES.items()}
LOD_TENSOR, FEED, FETCH = (pp.VAR_TYPES[k] for k in ("LOD_TENSOR", "FEED_MINIBATCH", "FETCH_LIST"))
MAX_RANK = 16
# the largest file this reads; a bigger one is refused before it is read into memory
MAX_FILE_BYTES = 1 << 34

# Attributes Paddle puts on ops that choose an implementation or carry bookkeeping, and
# the values of that kind that compute what numbaflow computes (None: any value). They
# are dropped unless the OpDef declares them.
_NEUTRAL_ATTRS = {
    "op_role": None, "op_role_var": None, "op_namescope": None, "op_callstack": None,
    "op_device": None, "with_quant_attr": {False}, "use_mkldnn": None, "use_cudnn": None,
    "mkldnn_data_type": None, "use_quantizer": None, "is_test": None, "name": None,
    "padding_algorithm": {"EXPLICIT"}, "data_format": {"NCHW", "AnyLayout"},
    "fuse_relu": {False}, "fuse_with_relu": {False}, "exhaustive_search": {False},
    "workspace_size_MB": None, "use_addto": {False}, "force_fp32_output": {False},
    "force_cpu": None, "place_type": None,        # fill_constant's placement
    "str_value": None,       # fill_constant's value as text: read into `value` (_translate)
    "in_dtype": {-1}, "out_dtype": {-1},     # paddle.sum's reduce_sum: -1 = no cast
    "Scale_x": {1.0}, "Scale_y": {1.0}, "Scale_out": {1.0},   # oneDNN int8 scales, unused
}
# Inputs that carry an attribute's value as a one-element tensor; when a fill_constant of
# the program makes that tensor, its value is folded into the attribute (numbaflow fixes
# shapes before a run, so concat's axis must be known then).
_TENSOR_ATTRS = {("concat", "AxisTensor"): "axis", ("gather", "Axis"): "axis"}
# Paddle 2.6's assign_value holds its constant in the list of its dtype (numbaflow's: `values`)
_ASSIGN_LISTS = {"bool": ("bool_values", "INTS"), "float32": ("fp32_values", "FLOATS"),
                 "float64": ("fp64_values", "FLOAT64S"), "int32": ("int32_values", "INTS"),
                 "int64": ("int64_values", "LONGS")}
_NEUTRAL_OUTPUTS = {"XShape"}      # reshape2/transpose2/... keep the input's shape here
# attributes holding a dtype: a VarType.Type number in the file, a numpy dtype here
_DTYPE_ATTRS = {"dtype", "in_dtype", "out_dtype"}


# ---------------------------------------------------------------- tensor stream
class _Reader:
    def __init__(self, data, path):
        self.data, self.pos, self.path = memoryview(data), 0, path

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.data):
            raise FileFormatError(f"file {self.path!r} is truncated or damaged: {what} needs "
                                  f"{n} bytes at offset {self.pos}, the file has "
                                  f"{len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]


def _tensor_desc(raw, path, what):
    desc = pp.TensorDesc()
    try:
        desc.ParseFromString(bytes(raw))
    except Exception as e:         # protobuf's DecodeError, or a missing required field
        raise FileFormatError(f"file {path!r}: the TensorDesc of {what} is damaged "
                              f"({type(e).__name__}: {e})") from None
    if desc.data_type not in _DTYPES:
        raise FileFormatError(f"file {path!r}: {what} has data type {desc.data_type} "
                              f"(VarType.Type), which numbaflow does not have")
    dims = list(desc.dims)
    if len(dims) > MAX_RANK or any(d < 0 for d in dims):
        raise FileFormatError(f"file {path!r}: {what} declares dims {dims[:MAX_RANK + 1]}; "
                              f"a stored tensor has at most {MAX_RANK} non-negative dims")
    # checked with zeros left out too: numpy refuses a shape past 2**63 elements even when
    # a zero dim makes it empty (and would do so with its own message, without the file)
    nonzero = int(np.prod([d for d in dims if d], dtype=object))
    if nonzero * _DTYPES[desc.data_type].itemsize >= 2 ** 63:
        raise FileFormatError(f"file {path!r}: {what} declares dims {dims}, whose product "
                              f"overflows 2**63 bytes; no tensor has that many elements: the "
                              f"file is damaged or crafted (re-export the model)")
    return _DTYPES[desc.data_type], tuple(dims)


def read_tensors(data, names, path):
    """{name: ndarray} of the tensor stream `data` (the bytes of `path`), whose tensors are
    `names` in order; FileFormatError naming the file and the tensor if it is damaged."""
    r = _Reader(data, path)
    out = {}
    for name in names:
        what = f"tensor {name!r}"
        if r.unpack("<I", f"{what}'s version") != 0:
            raise FileFormatError(f"file {path!r}: {what} has an unknown version (Paddle "
                                  f"writes 0); not a Paddle .pdiparams file, or damaged")
        levels = r.unpack("<Q", f"{what}'s LoD level count")
        if levels > MAX_RANK:
            raise FileFormatError(f"file {path!r}: {what} declares {levels} LoD levels")
        for _ in range(levels):
            r.take(r.unpack("<Q", f"{what}'s LoD size"), f"{what}'s LoD")
        if r.unpack("<I", f"{what}'s tensor version") != 0:
            raise FileFormatError(f"file {path!r}: {what} has an unknown tensor version")
        dtype, shape = _tensor_desc(r.take(r.unpack("<i", f"{what}'s TensorDesc size"),
                                           f"{what}'s TensorDesc"), path, what)
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        raw = r.take(nbytes, f"{what} of shape {shape}, {dtype}")
        out[name] = np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    if r.pos != len(r.data):
        raise FileFormatError(f"file {path!r} has {len(r.data) - r.pos} bytes after its "
                              f"{len(names)} tensors: it does not belong to this model")
    return out


def write_tensors(f, arrays):
    """Write {name: ndarray} to the binary file `f` as Paddle's tensor stream, sorted by
    name (the order Paddle's `load_inference_model` reads)."""
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        if a.dtype not in _VAR_TYPE_OF:
            raise TypeError(f"tensor {name!r} has dtype {a.dtype}, which Paddle's format "
                            f"cannot hold")
        desc = pp.TensorDesc(data_type=_VAR_TYPE_OF[a.dtype], dims=list(a.shape))
        raw = desc.SerializeToString()
        f.write(struct.pack("<IQIi", 0, 0, 0, len(raw)))
        f.write(raw)
        f.write(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())


# ---------------------------------------------------------------- ProgramDesc -> Program
def _attr_value(a, where):
    t = pp.ATTR_TYPES
    simple = {t["INT"]: "i", t["FLOAT"]: "f", t["STRING"]: "s", t["BOOLEAN"]: "b",
              t["LONG"]: "l", t["FLOAT64"]: "float64"}
    lists = {t["INTS"]: "ints", t["FLOATS"]: "floats", t["STRINGS"]: "strings",
             t["BOOLEANS"]: "bools", t["LONGS"]: "longs", t["FLOAT64S"]: "float64s"}
    if a.type in simple:
        return getattr(a, simple[a.type])
    if a.type in lists:
        return list(getattr(a, lists[a.type]))
    kind = {v: k for k, v in t.items()}.get(a.type, a.type)
    raise FileFormatError(f"{where}: attribute {a.name!r} is of type {kind}, which numbaflow "
                          f"does not read (sub-blocks, variables and scalars as attributes "
                          f"are not supported)")


def _conform(value, default, name, where):
    """`value` of attribute `name` as the OpDef's default types it; FileFormatError when the
    file gives another kind of value (a damaged file, or another op's attribute)."""
    def bad(expected):
        return FileFormatError(f"{where}: attribute {name!r} is {value!r}; numbaflow's op "
                               f"expects {expected}")
    if name in _DTYPE_ATTRS and isinstance(value, int) and not isinstance(value, bool):
        if value not in _DTYPES:
            raise bad("a data type numbaflow has (VarType.Type)")
        return _DTYPES[value]
    if default is None or isinstance(default, np.dtype):
        return value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("a bool")
    elif isinstance(default, int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad("an int")
    elif isinstance(default, float):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise bad("a number")
        value = float(value)
    elif isinstance(default, str):
        if not isinstance(value, str):
            raise bad("a str")
    elif isinstance(default, (list, tuple)):
        if not isinstance(value, list):
            raise bad("a list")
        kinds = {type(v) for v in default}
        if kinds and value and not {type(v) for v in value} <= kinds | (
                {int} if float in kinds else set()):
            raise bad(f"a list of {sorted(k.__name__ for k in kinds)}")
    return value


def parse_program_desc(raw, path):
    """The ProgramDesc message in `raw` (the bytes of `path`)."""
    desc = pp.ProgramDesc()
    try:
        desc.ParseFromString(raw)
    except RecursionError:
        raise FileFormatError(f"file {path!r} nests messages too deeply: not a Paddle "
                              f"model, or crafted") from None
    except Exception as e:         # DecodeError: truncated, bit-flipped, required missing
        raise FileFormatError(f"file {path!r} is not a Paddle ProgramDesc (.pdmodel), or is "
                              f"damaged ({type(e).__name__}: {e})") from None
    if not desc.blocks:
        raise FileFormatError(f"file {path!r}: the ProgramDesc has no blocks")
    if len(desc.blocks) > 1:
        raise FileFormatError(f"file {path!r}: the program has {len(desc.blocks)} blocks "
                              f"(control flow: while/conditional_block); numbaflow reads "
                              f"single-block programs only")
    return desc


def _translate(op, where):
    """(inputs, outputs, attrs) of `op` (an OpDesc) in numbaflow's terms; FileFormatError
    naming what numbaflow would have to ignore."""
    if op.type not in all_op_types():
        raise FileFormatError(f"{where}: numbaflow has no op {op.type!r}; the model cannot "
                              f"be run here")
    opdef = get_op_def(op.type)
    slots_in = {s.name for s in opdef.inputs}
    slots_out = {s.name for s in opdef.outputs}
    inputs, outputs, attrs = {}, {}, {}
    for v in op.inputs:
        if not v.arguments:
            continue                         # an unused optional input
        if v.parameter not in slots_in:
            raise FileFormatError(f"{where}: input {v.parameter!r} ({list(v.arguments)}) is "
                                  f"not implemented by numbaflow's {op.type}; it reads only "
                                  f"{sorted(slots_in)}")
        inputs[v.parameter] = list(v.arguments)
    for v in op.outputs:
        if not v.arguments or v.parameter in _NEUTRAL_OUTPUTS and v.parameter not in slots_out:
            continue
        if v.parameter not in slots_out:
            raise FileFormatError(f"{where}: output {v.parameter!r} is not produced by "
                                  f"numbaflow's {op.type}; it writes {sorted(slots_out)}")
        outputs[v.parameter] = list(v.arguments)
    for a in op.attrs:
        value = _attr_value(a, where)
        if op.type == "assign_value" and a.name.endswith("_values"):   # _ASSIGN_LISTS
            attrs["values"] = value or attrs.get("values", [])
            continue
        if a.name in opdef.attrs:
            attrs[a.name] = _conform(value, opdef.attrs[a.name], a.name, where)
            continue
        allowed = _NEUTRAL_ATTRS.get(a.name, ())
        if a.name in _NEUTRAL_ATTRS and (allowed is None or not isinstance(value, list)
                                         and value in allowed):
            continue
        raise FileFormatError(
            f"{where}: attribute {a.name!r} = {value!r} is not implemented by numbaflow's "
            f"{op.type} (it honours {sorted(opdef.attrs)}); running the model without it "
            f"would compute something else")
    text = next((a.s for a in op.attrs if a.name == "str_value"), "")
    if op.type == "fill_constant" and text:      # Paddle: str_value, when set, is the value
        try:
            attrs["value"] = float(text)
        except ValueError:
            raise FileFormatError(f"{where}: attribute 'str_value' = {text!r} is not a "
                                  f"number") from None
    return inputs, outputs, attrs


def _fold_constants(op, constants):
    """`op`, or a copy with each _TENSOR_ATTRS input made by a fill_constant (value in
    `constants`) turned into its attribute."""
    folds = [(v, _TENSOR_ATTRS[(op.type, v.parameter)]) for v in op.inputs
             if (op.type, v.parameter) in _TENSOR_ATTRS and len(v.arguments) == 1
             and v.arguments[0] in constants]
    if not folds:
        return op
    new = type(op)()
    new.CopyFrom(op)
    for v, attr in folds:
        value = constants[v.arguments[0]]
        del next(x for x in new.inputs if x.parameter == v.parameter).arguments[:]
        a = next((a for a in new.attrs if a.name == attr), None) or new.attrs.add(name=attr)
        a.type, a.i = pp.ATTR_TYPES["INT"], int(value)
    return new


def program_from_desc(desc, path):
    """(Program, feed names, fetch names) equivalent to the ProgramDesc `desc` of `path`."""
    block_desc = desc.blocks[0]
    program = Program()
    block = program.global_block()
    feeds, fetches, constants = {}, {}, {}
    for vd in block_desc.vars:
        if vd.type.type in (FEED, FETCH):
            continue
        where = f"file {path!r}: variable {vd.name!r}"
        if vd.type.type != LOD_TENSOR:
            kind = {v: k for k, v in pp.VAR_TYPES.items()}.get(vd.type.type, vd.type.type)
            raise FileFormatError(f"{where} is a {kind}; numbaflow has dense tensors only")
        if vd.name in block.vars:
            raise FileFormatError(f"{where} is declared twice")
        t = vd.type.lod_tensor.tensor
        # Paddle's compile-time shapes multiply unknown dims: instance_norm's SavedMean of
        # an (N, C) input is declared [N * C] = [-C] when N is -1; any negative dim is unknown
        dims = [max(int(d), -1) for d in t.dims]
        if t.data_type not in _DTYPES or len(dims) > MAX_RANK:
            raise FileFormatError(f"{where} has data type {t.data_type} and {len(dims)} dims; "
                                  f"expected one of numbaflow's dtypes and at most "
                                  f"{MAX_RANK} dims")
        try:
            block.create_var(vd.name, dims, _DTYPES[t.data_type], persistable=vd.persistable,
                             stop_gradient=True, is_data=vd.need_check_feed)
        except (TypeError, ValueError) as e:     # e.g. a float16 variable (fuzz-found)
            raise FileFormatError(f"{where} cannot be a variable here: {e}") from None
    for i, op in enumerate(block_desc.ops):
        where = f"file {path!r}: op {i} ({op.type})"
        if op.type in ("feed", "fetch"):
            col = next((a.i for a in op.attrs if a.name == "col"), None)
            side, table = ("Out", feeds) if op.type == "feed" else ("X", fetches)
            names = [n for v in (op.outputs if op.type == "feed" else op.inputs)
                     if v.parameter == side for n in v.arguments]
            if col is None or len(names) != 1 or col in table or not 0 <= col < 1 << 20:
                raise FileFormatError(f"{where} must name one variable and a new 'col'")
            table[col] = names[0]
            continue
        op = _fold_constants(op, constants)
        inputs, outputs, attrs = _translate(op, where)
        # Paddle's inference programs leave out outputs nothing reads (an is_test dropout's
        # Mask): a temporary takes each required output slot the file omits
        for slot in get_op_def(op.type).outputs:
            if not slot.optional and slot.name not in outputs:
                tmp = f"{op.type}_{i}.{slot.name}.omitted"
                if tmp not in block.vars:
                    block.create_var(tmp, (), "float32", stop_gradient=True)
                outputs[slot.name] = [tmp]
        if op.type == "fill_constant" and list(attrs.get("shape", [])) in ([1], []):
            constants[outputs["Out"][0]] = attrs["value"]

        def lookup(names, where=where):
            missing = [n for n in names if n not in block.vars]
            if missing:
                raise FileFormatError(f"{where} refers to {missing}, which the program does "
                                      f"not declare")
            return [block.vars[n] for n in names]
        try:      # outputs take numbaflow's inferred shapes (Paddle declares some aux
            # outputs, e.g. layer_norm's Mean, with other ranks); `verify` checks the rest
            block.append_op(op.type, {k: lookup(v) for k, v in inputs.items()},
                            {k: lookup(v) for k, v in outputs.items()}, attrs)
        except (FileFormatError, MemoryError):
            raise
        except Exception as e:       # shape inference meeting values no real model has
            raise FileFormatError(f"{where}: {type(e).__name__}: {e}") from None
    feed_names = [feeds[c] for c in sorted(feeds)]
    fetch_names = [fetches[c] for c in sorted(fetches)]
    if not fetch_names:
        raise FileFormatError(f"file {path!r} has no fetch op: not an inference model, or "
                              f"truncated")
    for n in feed_names + fetch_names:
        if n not in block.vars:
            raise FileFormatError(f"file {path!r}: feed/fetch variable {n!r} is not declared")
    for n in feed_names:
        block.vars[n].is_data = True
    try:
        verify(program)
    except MemoryError:
        raise
    except Exception as e:        # IRError / ValueError: shapes or wiring that do not add up
        raise FileFormatError(f"file {path!r}: the program does not check out here "
                              f"({type(e).__name__}: {e})") from None
    return program, feed_names, fetch_names


def read_model(model_raw, params_raw, model_path, params_path):
    """(Program, feed names, fetch names, {name: ndarray}) of a Paddle inference model."""
    program, feeds, fetches = program_from_desc(parse_program_desc(model_raw, model_path),
                                                model_path)
    names = sorted(v.name for v in program.list_vars() if v.persistable and not v.is_data)
    return program, feeds, fetches, read_tensors(params_raw, names, params_path)


# ---------------------------------------------------------------- Program -> ProgramDesc
# Paddle's ops that also write the input's shape to an XShape output (for their grad op);
# its InferShape expects one, with dims [0] + the input's dims.
_XSHAPE_OPS = {"reshape2": "X", "transpose2": "X", "squeeze2": "X", "unsqueeze2": "X",
               "flatten_contiguous_range": "X"}
PROGRAM_VERSION = 2006002        # the Paddle version whose ProgramDesc this writes


# list attributes Paddle declares FLOATS whose numbaflow default is empty (an empty list
# tells no type; interp_v2's `scale` read as INTS fails in Paddle)
_FLOAT_LISTS = {"scale"}


def _set_attr(a, name, value, default, where):
    """Fill OpDesc.Attr `a` with `value`, typed as Paddle's OpProto types it (the OpDef's
    default tells float from int)."""
    t = pp.ATTR_TYPES
    a.name = name
    if isinstance(value, np.dtype) or name in _DTYPE_ATTRS and isinstance(value, str):
        value = _VAR_TYPE_OF[np.dtype(value)]
    if isinstance(value, (bool, np.bool_)):
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


def _add_var(block_desc, name, shape, dtype, persistable=False, feed=False):
    vd = block_desc.vars.add(name=name, persistable=persistable, need_check_feed=feed)
    vd.type.type = LOD_TENSOR
    vd.type.lod_tensor.tensor.data_type = _VAR_TYPE_OF[np.dtype(dtype)]
    vd.type.lod_tensor.tensor.dims.extend(int(d) for d in shape)
    return vd


def program_to_desc(program, feed_names, fetch_names):
    """The ProgramDesc of the inference program `program` (one block) with Paddle's feed
    and fetch ops, as `paddle.static.save_inference_model` writes it."""
    if program.num_blocks != 1:
        raise ValueError(f"the program has {program.num_blocks} blocks; only single-block "
                         f"programs can be written in Paddle's format")
    desc = pp.ProgramDesc()
    desc.version.version = PROGRAM_VERSION
    bd = desc.blocks.add(idx=0, parent_idx=-1)
    block = program.global_block()
    for name, kind in (("feed", FEED), ("fetch", FETCH)):
        bd.vars.add(name=name, persistable=True).type.type = kind
    for v in block.vars.values():
        if v.dtype not in _VAR_TYPE_OF:
            raise TypeError(f"variable {v.name!r} has dtype {v.dtype}, which Paddle's "
                            f"format cannot hold")
        _add_var(bd, v.name, v.shape, v.dtype, v.persistable and not v.is_data,
                 v.name in feed_names)

    def io_op(type, x, out, col):
        od = bd.ops.add(type=type)
        od.inputs.add(parameter="X", arguments=[x])
        od.outputs.add(parameter="Out", arguments=[out])
        od.attrs.add(name="col", type=pp.ATTR_TYPES["INT"], i=col)

    for col, n in enumerate(feed_names):
        io_op("feed", "feed", n, col)
    for i, op in enumerate(block.ops):
        where = f"op {i} ({op.type})"
        opdef = get_op_def(op.type)
        od = bd.ops.add(type=op.type)
        for slot, vs in op.inputs.items():
            od.inputs.add(parameter=slot, arguments=[v.name for v in vs])
        for slot, vs in op.outputs.items():
            od.outputs.add(parameter=slot, arguments=[v.name for v in vs])
        if op.type in _XSHAPE_OPS:
            x = op.inputs[_XSHAPE_OPS[op.type]][0]
            name = op.outputs["Out"][0].name + ".xshape"
            _add_var(bd, name, (0,) + tuple(x.shape), x.dtype)
            od.outputs.add(parameter="XShape", arguments=[name])
        for k in sorted(op.attrs):
            if op.type == "assign_value" and k == "values":
                name, kind = _ASSIGN_LISTS[np.dtype(op.attrs["dtype"]).name]
                getattr(od.attrs.add(name=name, type=pp.ATTR_TYPES[kind]), kind.lower()).extend(
                    np.asarray(op.attrs[k], op.attrs["dtype"]).ravel().tolist())
            elif op.attrs[k] is not None:
                _set_attr(od.attrs.add(), k, op.attrs[k], opdef.attrs.get(k), where)
    for col, n in enumerate(fetch_names):
        io_op("fetch", n, "fetch", col)
    return desc
