"""numbaflow's arrays file (`.pdparams`, `.pdopt`, `.pdiparams`) and its checked reader.

An uncompressed `.npz` holding `__numbaflow_format__` (the format version), a JSON index
(`__numbaflow_vars__`: kind, save id, and name/shape/dtype/CRC-32 per variable) and one
`.npy` member per variable. The reader checks everything against the index before any
array is returned, and a file that is not one it can read (damaged, truncated, another
version) raises FileFormatError (a ValueError) naming it. A Paddle pickle given where an
arrays file is expected is read by the restricted unpickler in `paddle_pickle`.
"""
import json
import os
import zipfile
import zlib

import numpy as np

from ..graph.serialize import FORMAT_KEY, FORMAT_VERSION, FileFormatError, check_format
from . import paddle_pickle
from .outside import open_outside

INDEX_KEY = "__numbaflow_vars__"
_NPY_HEADER_MAX = 1 << 16          # a .npy header is far smaller; beyond it: damaged


def _crc(a):
    return zlib.crc32(np.ascontiguousarray(a).reshape(-1).view(np.uint8))


def write_arrays(f, arrays, kind, save_id=None, extra=None, version=FORMAT_VERSION):
    """Write {name: ndarray} (in order) to the open binary file `f`."""
    index, payload = [], {}
    for i, (name, a) in enumerate(arrays.items()):
        a = np.asarray(a)
        a = a if a.flags.c_contiguous else a.copy(order="C")   # (ascontiguousarray: 0-D -> 1-D)
        key = f"v{i}"
        index.append({"name": name, "shape": list(a.shape), "dtype": str(a.dtype), "key": key,
                      "crc32": _crc(a)})
        payload[key] = a
    meta = {"kind": kind, "vars": index}
    if save_id is not None:
        meta["save_id"] = save_id
    meta.update(extra or {})
    np.savez(f, **{FORMAT_KEY: np.array(version, np.int64),
                   INDEX_KEY: np.frombuffer(json.dumps(meta).encode(), np.uint8)}, **payload)


def read_arrays(path, real_path=None, keep_name_table=False):
    """({name: ndarray}, meta) from the arrays file `path` (read from `real_path` when the
    bytes are elsewhere, e.g. a committed save's temp file). A Paddle pickle gives meta
    {"kind": "paddle"}. FileNotFoundError if absent; FileFormatError if not readable."""
    real_path = real_path or path
    # opened once: a save may rename a temp file into place meanwhile (loads take no lock);
    # only a regular file, read no further than its size
    with open_outside(real_path, path) as (f, size):
        head = f.read(4)
        if paddle_pickle.is_pickle(head):
            f.seek(0)
            obj = paddle_pickle.load_pickle(f.read(size), path)
            return paddle_pickle.paddle_state(obj, path, keep_name_table), {"kind": "paddle"}
        if not head:
            raise FileFormatError(f"file {path!r} is empty (an interrupted copy or save?)")
        if head != b"PK\x03\x04":
            raise FileFormatError(f"file {path!r} is not a numbaflow arrays file (an .npz) nor "
                                  f"a Paddle checkpoint (a pickle of protocol 2-4)"
                                  f"{_inference_hint(path, head)}")
        f.seek(0)
        try:
            return _read_npz(path, f)
        except (FileFormatError, MemoryError):
            raise
        except Exception as e:    # zipfile, numpy and json errors of a damaged file
            raise FileFormatError(f"file {path!r} is damaged ({type(e).__name__}: {e})") \
                from None


def _inference_hint(path, head):
    """What an inference model's file handed to a checkpoint reader is, and how to load it."""
    prefix = os.path.splitext(path)[0]
    how = f"load it with static.load_inference_model({prefix!r}, exe)"
    if head[:1] == b"{":
        return f"; it is numbaflow's inference program (JSON, .nfmodel): {how}"
    if path.endswith((".pdmodel", ".pdiparams")) or head == b"\0\0\0\0":
        return f"; it looks like a file of Paddle's inference model (.pdmodel/.pdiparams): {how}"
    return ""


def _member(zf, key, max_data, path):
    """The array stored as `key`, after checking its stored size cannot be a huge lie."""
    info = zf.getinfo(key + ".npy")
    if info.file_size > max_data + _NPY_HEADER_MAX or info.compress_type != zipfile.ZIP_STORED:
        raise FileFormatError(f"file {path!r} is damaged: member {key!r} does not have the "
                              f"size or layout its index gives")
    with zf.open(info) as m:
        # the .npy header read first: numpy's read_array allocates the shape it declares
        # before reading, so a crafted header could ask for gigabytes from a tiny member
        fmt = np.lib.format
        header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(
            fmt.read_magic(m))
        if header is None:
            raise FileFormatError(f"file {path!r} is damaged: member {key!r} is not a .npy "
                                  f"of version 1.0 or 2.0")
        shape, fortran, dtype = header(m)
        if dtype.hasobject:
            raise FileFormatError(f"file {path!r} is damaged: member {key!r} holds objects")
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if nbytes > max_data or nbytes > info.file_size:
            raise FileFormatError(f"file {path!r} is damaged: member {key!r} declares shape "
                                  f"{shape} ({nbytes} bytes), more than its index or its "
                                  f"{info.file_size} stored bytes allow")
        data = m.read(nbytes)
        if len(data) != nbytes:
            raise FileFormatError(f"file {path!r} is truncated: member {key!r} has "
                                  f"{len(data)} of its {nbytes} bytes")
        return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C").copy()


def _read_npz(path, f):
    with zipfile.ZipFile(f) as zf:
        names = set(zf.namelist())
        if FORMAT_KEY + ".npy" not in names or INDEX_KEY + ".npy" not in names:
            check_format({}, f"file {path!r}")
        version = _member(zf, FORMAT_KEY, 8, path)
        if version.shape != () or version.dtype.kind not in "iu":
            raise FileFormatError(f"file {path!r} is damaged: its format version is not an "
                                  f"integer")
        check_format({FORMAT_KEY: int(version)}, f"file {path!r}")
        raw = _member(zf, INDEX_KEY, zf.getinfo(INDEX_KEY + ".npy").file_size, path)
        meta = json.loads(bytes(raw).decode())
        if not isinstance(meta, dict) or not isinstance(meta.get("vars"), list):
            raise FileFormatError(f"file {path!r} is damaged: its index is not a dict of vars")
        out = {}
        for e in meta["vars"]:
            dtype, shape = np.dtype(e["dtype"]), tuple(int(d) for d in e["shape"])
            if dtype.hasobject or any(d < 0 for d in shape):
                raise FileFormatError(f"file {path!r} is damaged: {e['name']!r} is indexed as "
                                      f"shape {shape}, dtype {dtype}")
            a = _member(zf, e["key"], int(np.prod(shape, dtype=object)) * dtype.itemsize,
                        path)
            if a.shape != shape or a.dtype != dtype:
                raise FileFormatError(f"file {path!r} is corrupt: {e['name']!r} is indexed as "
                                      f"{list(shape)}/{dtype} but holds "
                                      f"{list(a.shape)}/{a.dtype}")
            if "crc32" in e and _crc(a) != e["crc32"]:
                raise FileFormatError(f"file {path!r} is corrupt: the data of {e['name']!r} "
                                      f"fails its checksum")
            out[e["name"]] = a
        return out, meta
