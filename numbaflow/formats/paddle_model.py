"""Paddle 2.x inference models: `.pdmodel` (a ProgramDesc protobuf) and `.pdiparams` (the
combined tensor stream), read into a numbaflow Program and written from one.

The tensor stream (Paddle's `save_combine`) holds the persistables sorted by name, each:
  uint32 version (0) | uint64 LoD level count, then per level uint64 byte size + offsets |
  uint32 version (0) | int32 TensorDesc size | TensorDesc protobuf | the raw data
(little-endian, C order).

Every block is read (control flow: a `conditional_block` / `while` op's `sub_block`
attribute names its body, a block whose `parent_idx` is the op's block); the writer is
paddle_writer.py. Ops map one to one (numbaflow's op types and slots are Paddle's). What
Paddle adds that changes nothing here (op_role, op_callstack, use_cudnn, an empty optional
slot, reshape2's XShape, control flow's step scopes ...) is dropped; any other attribute or
input an OpDef does not declare is refused with a FileFormatError naming the op and the
attribute, never ignored.
"""
from __future__ import annotations

import struct

import numpy as np

from ..graph.program import Program
from ..graph.serialize import FileFormatError
from ..graph.verify import verify
from ..kernels.registry import all_op_types, get_op_def
from . import paddle_proto as pp
from . import paddle_xshape

# VarType.Type <-> numpy dtype (the tensor types numbaflow has)
_DTYPES = {pp.VAR_TYPES[k]: np.dtype(v) for k, v in (
    ("BOOL", "bool"), ("INT16", "int16"), ("INT32", "int32"), ("INT64", "int64"),
    ("FP16", "float16"), ("FP32", "float32"), ("FP64", "float64"), ("UINT8", "uint8"),
    ("INT8", "int8"))}
VAR_TYPE_OF = {d: k for k, d in _DTYPES.items()}
LOD_TENSOR, FEED, FETCH, ARRAY, SCOPES = (pp.VAR_TYPES[k] for k in (
    "LOD_TENSOR", "FEED_MINIBATCH", "FETCH_LIST", "LOD_TENSOR_ARRAY", "STEP_SCOPES"))
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
    "skip_eager_deletion_vars": None,     # while / conditional_block: memory bookkeeping
    "str_value": None,       # fill_constant's value as text: read into `value` (_translate)
    "in_dtype": {-1}, "out_dtype": {-1},     # paddle.sum's reduce_sum: -1 = no cast
    "Scale_x": {1.0}, "Scale_y": {1.0}, "Scale_out": {1.0},   # oneDNN int8 scales, unused
    "fuse_activation": {""}, "fuse_alpha": {0.0}, "fuse_beta": {0.0},   # oneDNN fusions, off
    "fuse_residual_connection": {False},
}
# Inputs that carry an attribute's value as a one-element tensor; when a fill_constant of
# the program makes that tensor, its value is folded into the attribute (numbaflow fixes
# shapes before a run, so concat's axis must be known then).
_TENSOR_ATTRS = {("concat", "AxisTensor"): "axis", ("gather", "Axis"): "axis"}
# Paddle 2.6's assign_value holds its constant in the list of its dtype (numbaflow's: `values`)
ASSIGN_LISTS = {"bool": ("bool_values", "INTS"), "float32": ("fp32_values", "FLOATS"),
                "float64": ("fp64_values", "FLOAT64S"), "int32": ("int32_values", "INTS"),
                "int64": ("int64_values", "LONGS")}
# reshape2/transpose2/... keep the input's shape in XShape; conditional_block / while keep
# their run-time scopes in Scope / StepScopes (STEP_SCOPES variables, not declared here)
_NEUTRAL_OUTPUTS = {"XShape", "Scope", "StepScopes"}
# attributes holding a dtype: a VarType.Type number in the file, a numpy dtype here
DTYPE_ATTRS = {"dtype", "in_dtype", "out_dtype"}


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
        if a.dtype not in VAR_TYPE_OF:
            raise TypeError(f"tensor {name!r} has dtype {a.dtype}, which Paddle's format "
                            f"cannot hold")
        desc = pp.TensorDesc(data_type=VAR_TYPE_OF[a.dtype], dims=list(a.shape))
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
                          f"does not read (lists of blocks, variables and scalars as "
                          f"attributes are not supported)")


def _conform(value, default, name, where):
    """`value` of attribute `name` as the OpDef's default types it; FileFormatError when the
    file gives another kind of value (a damaged file, or another op's attribute)."""
    def bad(expected):
        return FileFormatError(f"{where}: attribute {name!r} is {value!r}; numbaflow's op "
                               f"expects {expected}")
    if name in DTYPE_ATTRS and isinstance(value, int) and not isinstance(value, bool):
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
    for i, bd in enumerate(desc.blocks):
        if bd.idx != i or (bd.parent_idx >= i if i else bd.parent_idx != -1):
            raise FileFormatError(f"file {path!r}: block {i} has idx {bd.idx} and parent_idx "
                                  f"{bd.parent_idx}; Paddle numbers blocks in order, each "
                                  f"after its enclosing block (the global block's is -1)")
    return desc


def _translate(op, where, sub_block):
    """(inputs, outputs, attrs) of `op` (an OpDesc) in numbaflow's terms; FileFormatError
    naming what numbaflow would have to ignore. `sub_block(idx)`: the Block of a BLOCK
    attribute (a control-flow op's body), read before the op is appended."""
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
        if a.type == pp.ATTR_TYPES["BLOCK"] and a.name in opdef.attrs:
            attrs[a.name] = sub_block(a.block_idx)
            continue
        value = _attr_value(a, where)
        if op.type == "assign_value" and a.name.endswith("_values"):   # ASSIGN_LISTS
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


def _declare_vars(block, block_desc, path):
    """Create the variables of BlockDesc `block_desc` in `block` (a tensor array as a
    tensor-array Variable of its element's shape; feed/fetch lists and step scopes, which
    Paddle fills at run time, are not variables here)."""
    for vd in block_desc.vars:
        if vd.type.type in (FEED, FETCH, SCOPES):
            continue
        where = f"file {path!r}: variable {vd.name!r}"
        if vd.type.type not in (LOD_TENSOR, ARRAY):
            kind = {v: k for k, v in pp.VAR_TYPES.items()}.get(vd.type.type, vd.type.type)
            raise FileFormatError(f"{where} is a {kind}; numbaflow has dense tensors and "
                                  f"tensor arrays only")
        if vd.name in block.vars:
            raise FileFormatError(f"{where} is declared twice")
        array = vd.type.type == ARRAY
        t = (vd.type.tensor_array if array else vd.type.lod_tensor).tensor
        # Paddle's compile-time shapes multiply unknown dims: instance_norm's SavedMean of
        # an (N, C) input is declared [N * C] = [-C] when N is -1; any negative dim is unknown
        dims = [max(int(d), -1) for d in t.dims]
        if t.data_type not in _DTYPES or len(dims) > MAX_RANK:
            raise FileFormatError(f"{where} has data type {t.data_type} and {len(dims)} dims; "
                                  f"expected one of numbaflow's dtypes and at most "
                                  f"{MAX_RANK} dims")
        try:
            v = block.create_var(vd.name, dims, _DTYPES[t.data_type],
                                 persistable=vd.persistable, stop_gradient=True,
                                 is_data=vd.need_check_feed)
        except (TypeError, ValueError) as e:     # e.g. a float16 variable (fuzz-found)
            raise FileFormatError(f"{where} cannot be a variable here: {e}") from None
        v.is_tensor_array = array


class _OpReader:
    """Appends the ops of a ProgramDesc's blocks to `program`: a block's ops in order, a
    control-flow op's sub-block (`sub_block` attribute) read just before that op, so its
    ops see the enclosing block's variables as the ops before it left them."""

    def __init__(self, program, desc, path):
        self.program, self.desc, self.path = program, desc, path
        self.feeds, self.fetches, self.constants = {}, {}, {}
        self.xshapes = {}                # XShape name -> the X it holds the shape of
        self.state = {}                  # block idx -> "reading" / "read"

    def sub_block(self, idx, parent, where):
        if not 0 < idx < len(self.desc.blocks) or self.desc.blocks[idx].parent_idx != parent:
            raise FileFormatError(f"{where}: its sub_block is block {idx}, which is not a "
                                  f"block enclosed by block {parent}")
        if self.state.get(idx) is not None:
            raise FileFormatError(f"{where}: block {idx} is the body of two ops")
        self.read(idx)
        return self.program.block(idx)

    def read(self, idx):
        self.state[idx] = "reading"
        block, path = self.program.block(idx), self.path
        for i, op in enumerate(self.desc.blocks[idx].ops):
            where = f"file {path!r}: op {i} ({op.type})" + (f" of block {idx}" if idx else "")
            if op.type in ("feed", "fetch"):
                col = next((a.i for a in op.attrs if a.name == "col"), None)
                side, table = ("Out", self.feeds) if op.type == "feed" else ("X", self.fetches)
                names = [n for v in (op.outputs if op.type == "feed" else op.inputs)
                         if v.parameter == side for n in v.arguments]
                if idx or col is None or len(names) != 1 or col in table or \
                        not 0 <= col < 1 << 20:
                    raise FileFormatError(f"{where} must be in the global block and name one "
                                          f"variable and a new 'col'")
                table[col] = names[0]
                continue
            op = paddle_xshape.from_paddle(_fold_constants(op, self.constants), self.xshapes,
                                           block, where)
            self.append(block, i, op, where)
        self.state[idx] = "read"

    def append(self, block, i, op, where):
        inputs, outputs, attrs = _translate(
            op, where, lambda k: self.sub_block(k, block.idx, where))
        # Paddle's inference programs leave out outputs nothing reads (an is_test dropout's
        # Mask): a temporary takes each required output slot the file omits
        for slot in get_op_def(op.type).outputs:
            if not slot.optional and slot.name not in outputs:
                tmp = f"{op.type}_{i}.{slot.name}.omitted" + (f"@{block.idx}" if block.idx
                                                               else "")
                if tmp not in block.vars:
                    block.create_var(tmp, (), "float32", stop_gradient=True)
                outputs[slot.name] = [tmp]
        if op.type == "fill_constant" and list(attrs.get("shape", [])) in ([1], []):
            self.constants[outputs["Out"][0]] = attrs["value"]

        def lookup(names):
            found = [block.find_var_recursive(n) for n in names]
            missing = [n for n, v in zip(names, found) if v is None]
            if missing:
                raise FileFormatError(f"{where} refers to {missing}, which the program does "
                                      f"not declare")
            return found
        try:      # outputs take numbaflow's inferred shapes (Paddle declares some aux
            # outputs, e.g. layer_norm's Mean, with other ranks); `verify` checks the rest
            block.append_op(op.type, {k: lookup(v) for k, v in inputs.items()},
                            {k: lookup(v) for k, v in outputs.items()}, attrs)
        except (FileFormatError, MemoryError):
            raise
        except Exception as e:       # shape inference meeting values no real model has
            raise FileFormatError(f"{where}: {type(e).__name__}: {e}") from None


def program_from_desc(desc, path):
    """(Program, feed names, fetch names) equivalent to the ProgramDesc `desc` of `path`
    (every block: control flow's sub-blocks enclosed as Paddle's `parent_idx` says)."""
    program = Program()
    for bd in desc.blocks[1:]:
        program.create_block(bd.parent_idx)
    program.current_block_idx = 0
    for block, block_desc in zip(program.blocks, desc.blocks):
        _declare_vars(block, block_desc, path)
    reader = _OpReader(program, desc, path)
    reader.read(0)       # a block no op runs (none in an inference model) stays empty
    block = program.global_block()
    feed_names = [reader.feeds[c] for c in sorted(reader.feeds)]
    fetch_names = [reader.fetches[c] for c in sorted(reader.fetches)]
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
