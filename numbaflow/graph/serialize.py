"""Program <-> plain dict (JSON-able), for `save_inference_model` / `load_inference_model`.

The dict names everything: variables carry their static facts, ops refer to variables by
name. Attribute values must be JSON values; the few that JSON cannot hold exactly are
tagged: non-finite floats as {"__float__": "inf" | "-inf" | "nan"} (JSON has no
Infinity/NaN) and numpy dtypes as {"__dtype__": "float32"}. Tuples come back as lists.

    d = program_to_dict(program, feed_names=['x'], fetch_names=['fc_0.tmp_1'])
    program = program_from_dict(json.loads(json.dumps(d)))
"""
import math
import numbers

import numpy as np

from .program import FORWARD, Block, Parameter, Program

FORMAT_KEY = "__numbaflow_format__"
# 2: every file of a save carries its save id, arrays carry a CRC-32 and an inference
# model's parameters file the SHA-256 of its program file. Version 1 files still load.
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)


class FileFormatError(ValueError):
    """A file that is damaged, not numbaflow's, or of a format version this code does not
    read; the message names the file and what is wrong."""


# ---------------------------------------------------------------- attribute values
def _encode(value, where):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isfinite(f):
            return f
        return {"__float__": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if isinstance(value, np.dtype):
        return {"__dtype__": str(value)}
    if isinstance(value, Block):            # a control-flow op's sub_block
        return {"__block__": value.idx}
    if isinstance(value, (list, tuple)):
        return [_encode(v, where) for v in value]
    if isinstance(value, np.ndarray):
        return [_encode(v, where) for v in value.tolist()]
    raise TypeError(f"{where}: attribute value of type {type(value).__name__} cannot be "
                    f"serialized; attributes must be None, bool, int, float, str or lists of them")


def _decode(value, program=None):
    if isinstance(value, list):
        return [_decode(v, program) for v in value]
    if isinstance(value, dict):
        if "__block__" in value and program is not None:
            return program.block(int(value["__block__"]))
        if "__float__" in value:
            return float(value["__float__"])
        if "__dtype__" in value:
            return np.dtype(value["__dtype__"])
        raise ValueError(f"unknown tagged attribute value {value!r}")
    return value


# ---------------------------------------------------------------- program
def _var_to_dict(v):
    d = {"name": v.name, "shape": list(v.shape), "dtype": str(v.dtype),
         "persistable": bool(v.persistable), "is_data": bool(v.is_data),
         "stop_gradient": bool(v.stop_gradient), "parameter": isinstance(v, Parameter)}
    if v.is_tensor_array:
        d["tensor_array"] = True
    if v.runtime_shape:
        d["runtime_shape"] = True
    if isinstance(v, Parameter):
        d["trainable"] = bool(v.trainable)
        d["learning_rate"] = float(v.optimize_attr.get("learning_rate", 1.0))
    return d


def _op_to_dict(op, where):
    return {"type": op.type, "role": op.role,
            "inputs": {k: [v.name for v in vs] for k, vs in op.inputs.items()},
            "outputs": {k: [v.name for v in vs] for k, vs in op.outputs.items()},
            "attrs": {k: _encode(a, f"{where} attr {k!r}") for k, a in op.attrs.items()}}


def program_to_dict(program, feed_names=(), fetch_names=(), save_id=None):
    """A JSON-able description of `program` (every block), with optional feed/fetch names
    and the id of the save it belongs to."""
    blocks = []
    for block in program.blocks:
        ops = [_op_to_dict(op, f"block {block.idx} op {i} ({op.type})")
               for i, op in enumerate(block.ops)]
        blocks.append({"idx": block.idx, "parent_idx": block.parent_idx,
                       "forward_block_idx": block.forward_block_idx,
                       "vars": [_var_to_dict(v) for v in block.vars.values()],
                       "ops": ops})
    d = {FORMAT_KEY: FORMAT_VERSION, "random_seed": int(program.random_seed),
         "blocks": blocks, "feed": list(feed_names), "fetch": list(fetch_names)}
    if save_id is not None:
        d["save_id"] = save_id
    return d


def check_format(d, what):
    """Raise FileFormatError (a ValueError) unless `d` carries a format version this code
    reads."""
    version = d.get(FORMAT_KEY) if isinstance(d, dict) else None
    if version is None:
        raise FileFormatError(f"{what} is not a numbaflow file: it has no {FORMAT_KEY!r} "
                              f"format version")
    if isinstance(version, bool) or version not in READ_VERSIONS:
        raise FileFormatError(f"{what} has format version {version!r}, but this numbaflow "
                              f"reads version {' or '.join(map(str, READ_VERSIONS))}; save "
                              f"it again with this version")


def program_from_dict(d):
    """Rebuild the Program described by `d` (from `program_to_dict`)."""
    check_format(d, "the program description")
    program = Program()
    program.random_seed = int(d.get("random_seed", 0))
    for bd in d["blocks"][1:]:
        block = program.create_block(int(bd.get("parent_idx", 0)))
        block.forward_block_idx = int(bd.get("forward_block_idx", -1))
    program.current_block_idx = 0
    for block, bd in zip(program.blocks, d["blocks"]):
        _read_vars(block, bd["vars"])
    for block, bd in zip(program.blocks, d["blocks"]):
        _read_ops(program, block, bd["ops"])
    return program


def _read_vars(block, var_dicts):
    for vd in var_dicts:
        if vd.get("parameter"):
            p = block.create_parameter(vd["name"], vd["shape"], vd["dtype"],
                                       trainable=vd.get("trainable", True),
                                       learning_rate=vd.get("learning_rate", 1.0))
            p.stop_gradient = vd["stop_gradient"]
        else:
            v = block.create_var(vd["name"], vd["shape"], vd["dtype"],
                                 persistable=vd["persistable"],
                                 stop_gradient=vd["stop_gradient"], is_data=vd["is_data"])
            v.is_tensor_array = bool(vd.get("tensor_array", False))
            v.runtime_shape = bool(vd.get("runtime_shape", False))


def _read_ops(program, block, op_dicts):
    def lookup(names, where):
        vs = [block.find_var_recursive(n) for n in names]
        if any(v is None for v in vs):
            missing = next(n for n, v in zip(names, vs) if v is None)
            raise ValueError(f"{where} refers to variable {missing!r}, which the program "
                             f"description does not declare")
        return vs

    for i, od in enumerate(op_dicts):
        where = f"block {block.idx} op {i} ({od['type']})"
        with program.role_guard(od.get("role", FORWARD)):
            # infer=False: keep the saved shapes exactly; `verify` re-checks them.
            block.append_op(od["type"],
                            {k: lookup(ns, where) for k, ns in od["inputs"].items()},
                            {k: lookup(ns, where) for k, ns in od["outputs"].items()},
                            {k: _decode(a, program) for k, a in od["attrs"].items()},
                            infer=False)
