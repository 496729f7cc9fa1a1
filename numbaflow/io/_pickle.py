"""Read Paddle's pickled checkpoints (`.pdparams` / `.pdopt`) without running their code.

Paddle 2.x writes a pickled dict {name: numpy array} (protocol 2-4); `paddle.save` of a
state dict adds the key `StructuredToParameterName@@` ({structured name: parameter name})
and protocols 2-3 split arrays over 1 GiB into `name@@.0`, `name@@.1`... described by
`UnpackBigParamInfor@@`. A pickle can name any callable; this unpickler resolves only
numpy's array/dtype/scalar rebuilders and plain containers, so any other global ends
the read with a ValueError before it is called.
"""
import collections
import io
import pickle

import numpy as np

from ..graph.serialize import FileFormatError

NAME_TABLE_KEY = "StructuredToParameterName@@"
UNPACK_KEY = "UnpackBigParamInfor@@"


def _latin1_encode(text, encoding="latin1"):
    """`_codecs.encode` as protocol 2 uses it for bytes; only the latin-1 codec."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


_RECONSTRUCT = np.zeros(1).__reduce__()[0]
_SCALAR = np.float32(0).__reduce__()[0]
_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("_codecs", "encode"): _latin1_encode,
}
for _m in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _ALLOWED[(_m, "_reconstruct")] = _RECONSTRUCT
    _ALLOWED[(_m, "scalar")] = _SCALAR
for _m in ("builtins", "__builtin__"):
    for _t in (set, frozenset, complex):
        _ALLOWED[(_m, _t.__name__)] = _t


class _Refused(Exception):
    def __init__(self, module, name):
        super().__init__(f"{module}.{name}")
        self.module, self.name = module, name


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        obj = _ALLOWED.get((module, name))
        if obj is None:
            raise _Refused(module, name)
        return obj

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("persistent ids are not allowed")


def is_pickle(head):
    """Whether the first bytes of a file are a pickle of protocol 2-4 (Paddle's)."""
    return len(head) >= 2 and head[0] == 0x80 and head[1] in (2, 3, 4)


def load_pickle(data, path):
    """The object pickled in `data` (bytes of the file `path`), built by the restricted
    unpickler; ValueError naming the file if it refers to anything else or is damaged."""
    try:
        return _RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load()
    except _Refused as e:
        raise FileFormatError(
            f"file {path!r} refers to {e.module}.{e.name}, which a Paddle checkpoint never "
            f"holds; numbaflow builds only numpy arrays, dtypes and plain containers from a "
            f"pickle, so the file was refused without running any of it") from None
    except MemoryError:
        raise
    except Exception as e:
        raise FileFormatError(f"file {path!r} is not a numbaflow arrays file, and read as a "
                              f"Paddle pickle it is damaged ({type(e).__name__}: {e})") from None


def paddle_state(obj, path, keep_name_table=False):
    """{name: ndarray} of an unpickled Paddle checkpoint: big arrays re-joined, the name
    table dropped (or kept with `keep_name_table`), everything else checked."""
    if not isinstance(obj, dict):
        raise FileFormatError(f"file {path!r} holds a pickled {type(obj).__name__}, not a "
                              f"dict of arrays as Paddle's save writes")
    obj = dict(obj)
    table = obj.pop(NAME_TABLE_KEY, None)
    unpack = obj.pop(UNPACK_KEY, None)
    try:
        for key, info in (unpack or {}).items():
            parts = [obj.pop(p) for p in info["slices"]]
            obj[key] = np.concatenate(parts).reshape(info["OriginShape"])
    except Exception as e:
        raise FileFormatError(f"file {path!r}: its {UNPACK_KEY!r} entry does not describe "
                              f"its arrays ({type(e).__name__}: {e})") from None
    out = {}
    for key, value in obj.items():
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(key, str) or not isinstance(value, np.ndarray) or \
                value.dtype.hasobject:
            raise FileFormatError(f"file {path!r}: entry {key!r} is a "
                                  f"{type(value).__name__}"
                                  f"{' of Python objects' if isinstance(value, np.ndarray) else ''}"
                                  f", not a numeric array")
        out[key] = value
    if keep_name_table and table is not None:
        out[NAME_TABLE_KEY] = table
    return out
