"""Read Paddle's pickled checkpoints (`.pdparams` / `.pdopt`) without running their code.

Paddle 2.x writes a pickled dict {name: numpy array} (protocol 2-4); `paddle.save` of a
state dict adds the key `StructuredToParameterName@@` ({structured name: parameter name})
and protocols 2-3 split arrays over 1 GiB into `name@@.0`, `name@@.1`... described by
`UnpackBigParamInfor@@`. A pickle can name any callable; this unpickler resolves only
stand-ins for numpy's array/dtype/scalar rebuilders and plain containers, so any other
global ends the read with a ValueError before it is called. No real constructor is
reachable: arrays are built only from the bytes the file holds, and their total may not
exceed the file's size (bytes shared through the pickle's memo count each time they are
used); objects the pickle shares stay shared when the stand-ins are replaced, so a few
hundred bytes of tuples cannot expand into 2**40 copies.
"""
import collections
import functools
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


# Numpy's own rebuilders are never handed the file's arguments: these stand-ins check
# them (only what `ndarray.__reduce__` / `dtype.__reduce__` produce for plain numeric
# arrays) and build the result from a bytes copy, so a damaged or crafted file cannot
# reach numpy's C code with odd states, nor allocate more than its own size.
class _DtypeStandIn:
    def __init__(self, code, align=False, copy=True):
        if not isinstance(code, str) or not code[:1].isalpha() or len(code) > 4 or \
                not isinstance(align, bool) or not isinstance(copy, bool):
            raise pickle.UnpicklingError(f"dtype{(code, align, copy)!r}")
        self.dtype = np.dtype(code)
        if self.dtype.hasobject or self.dtype.names is not None or \
                self.dtype.kind not in "biufc":
            raise pickle.UnpicklingError(f"dtype {code!r} is not a numeric type")

    def __setstate__(self, state):
        if not isinstance(state, tuple) or len(state) < 2 or state[1] not in "<>|=":
            raise pickle.UnpicklingError(f"dtype state {state!r}")
        self.dtype = self.dtype.newbyteorder(state[1]) if state[1] in "<>" else self.dtype


class _NdarrayName:
    """What `numpy.ndarray` resolves to: only a token that `_reconstruct` accepts as its
    subtype; called (REDUCE) or instantiated (NEWOBJ) it refuses, since the real
    `ndarray(shape, dtype)` allocates from a shape alone (50 bytes asking for a GiB)."""
    def __new__(cls, *args, **kwargs):
        raise _Refused("numpy", "ndarray", "called with a shape: it would allocate memory "
                       "the file does not hold")


class _ArrayStandIn:
    def __init__(self, budget, subtype, shape, typecode):
        if subtype is not _NdarrayName or shape != (0,) or typecode != b"b":
            raise pickle.UnpicklingError("an array rebuilt from other than ndarray.__reduce__")
        self.array, self.budget = None, budget

    def __setstate__(self, state):
        if not isinstance(state, tuple) or len(state) != 5 or self.array is not None:
            raise pickle.UnpicklingError("array state")
        _, shape, dtype, fortran, raw = state
        if not isinstance(dtype, _DtypeStandIn) or not isinstance(fortran, bool) or \
                not isinstance(shape, tuple) or \
                not all(isinstance(d, int) and d >= 0 for d in shape):
            raise pickle.UnpicklingError("array state")
        raw = raw.encode("latin1") if isinstance(raw, str) else raw
        if not isinstance(raw, (bytes, bytearray)) or \
                len(raw) != int(np.prod(shape, dtype=object)) * dtype.dtype.itemsize:
            raise pickle.UnpicklingError("array data does not match its shape")
        self.budget.spend(len(raw))
        flat = np.frombuffer(raw, dtype.dtype).copy()
        self.array = flat.reshape(shape, order="F" if fortran else "C")


def _scalar(dtype, raw):
    if not isinstance(dtype, _DtypeStandIn) or not isinstance(raw, (bytes, str)):
        raise pickle.UnpicklingError("scalar")
    raw = raw.encode("latin1") if isinstance(raw, str) else raw
    if len(raw) != dtype.dtype.itemsize:
        raise pickle.UnpicklingError("scalar data does not match its dtype")
    return np.frombuffer(raw, dtype.dtype)[0]


class _Budget:
    """Bytes of array data a load may still build: the file's size (a real checkpoint's
    arrays are all in its bytes; a crafted one reuses one bytes object many times)."""
    def __init__(self, nbytes):
        self.left = nbytes

    def spend(self, n):
        self.left -= n
        if self.left < 0:
            raise _OverBudget()


class _OverBudget(Exception):
    pass


def _materialize(obj, done=None, busy=None):
    """Replace the stand-ins left in plain containers by the arrays/dtypes they built; an
    object reached twice is built once and shared (memo by id), a container inside itself
    is refused."""
    done = {} if done is None else done
    busy = set() if busy is None else busy
    key = id(obj)
    if key in done:
        return done[key][1]
    if isinstance(obj, _ArrayStandIn):
        if obj.array is None:
            raise pickle.UnpicklingError("an array without its data")
        out = obj.array
    elif isinstance(obj, _DtypeStandIn):
        out = obj.dtype
    elif isinstance(obj, (dict, list, tuple, set, frozenset)):
        if key in busy:
            raise pickle.UnpicklingError("a container that holds itself")
        busy.add(key)
        if isinstance(obj, dict):
            out = type(obj)((_materialize(k, done, busy), _materialize(v, done, busy))
                            for k, v in obj.items())
        else:
            out = type(obj)(_materialize(v, done, busy) for v in obj)
        busy.discard(key)
    else:
        return obj
    done[key] = (obj, out)        # obj kept alive: its id is not reused meanwhile
    return out


_ALLOWED = {
    ("numpy", "ndarray"): _NdarrayName,
    ("numpy", "dtype"): _DtypeStandIn,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("_codecs", "encode"): _latin1_encode,
}
for _m in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _ALLOWED[(_m, "_reconstruct")] = _ArrayStandIn
    _ALLOWED[(_m, "scalar")] = _scalar
for _m in ("builtins", "__builtin__"):
    for _t in (set, frozenset, complex):
        _ALLOWED[(_m, _t.__name__)] = _t


class _Refused(Exception):
    def __init__(self, module, name, why=None):
        super().__init__(f"{module}.{name}")
        self.module, self.name, self.why = module, name, why


class _RestrictedUnpickler(pickle._Unpickler):
    # the pure-Python unpickler: its memo is a dict, where the C one grows an array to the
    # largest memo index, so one flipped bit in a LONG_BINPUT asks for gigabytes.
    # Protocol 5's opcodes are dropped: BYTEARRAY8 allocates its length before reading.
    dispatch = {op: f for op, f in pickle._Unpickler.dispatch.items()
                if op not in (pickle.BYTEARRAY8[0], pickle.NEXT_BUFFER[0],
                              pickle.READONLY_BUFFER[0])}
    def __init__(self, file, nbytes, **kwargs):
        super().__init__(file, **kwargs)
        self.budget = _Budget(nbytes)

    def find_class(self, module, name):
        obj = _ALLOWED.get((module, name))
        if obj is None:
            raise _Refused(module, name)
        if obj is _ArrayStandIn:
            return functools.partial(_ArrayStandIn, self.budget)
        return obj

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("persistent ids are not allowed")


# protocols 2-3 cannot hold an object over 4 GiB: Paddle splits arrays over this many
# bytes into flat slices and records how to re-join them under UNPACK_KEY
_SPLIT_BYTES = 1 << 30


def writer(arrays, protocol, split=True):
    """A writer (for persistence/atomic.commit) of {name: ndarray} as Paddle's `static.save` and
    `paddle.save` write it: one pickled dict, big arrays split as Paddle splits them
    (`split=False` for `.pdopt`, which Paddle neither splits nor re-joins)."""
    out = {k: np.ascontiguousarray(a) for k, a in arrays.items()}
    if protocol < 4 and split:
        info = {}
        for key in [k for k, a in out.items() if a.nbytes > _SPLIT_BYTES]:
            a = out.pop(key)
            step = max(_SPLIT_BYTES // a.itemsize, 1)
            flat = a.reshape(-1)
            names = [f"{key}@@.{i}" for i in range((flat.size + step - 1) // step)]
            for i, name in enumerate(names):
                out[name] = flat[i * step:(i + 1) * step]
            info[key] = {"OriginShape": a.shape, "slices": names}
        if info:
            out[UNPACK_KEY] = info

    def write(f):
        pickle.dump(out, f, protocol=protocol)
    return write


def is_pickle(head):
    """Whether the first bytes of a file are a pickle of protocol 2-4 (Paddle's)."""
    return len(head) >= 2 and head[0] == 0x80 and head[1] in (2, 3, 4)


def load_pickle(data, path):
    """The object pickled in `data` (bytes of the file `path`), built by the restricted
    unpickler; ValueError naming the file if it refers to anything else or is damaged."""
    try:
        return _materialize(_RestrictedUnpickler(io.BytesIO(data), len(data),
                                                 encoding="latin1").load())
    except _Refused as e:
        how = e.why or "which a Paddle checkpoint never holds"
        raise FileFormatError(
            f"file {path!r} refers to {e.module}.{e.name}, {how}; numbaflow builds only "
            f"numpy arrays (from their bytes), dtypes and plain containers from a pickle, "
            f"so the file was refused without running any of it") from None
    except _OverBudget:
        raise FileFormatError(
            f"file {path!r} asks for more array data than its {len(data)} bytes hold (one "
            f"piece of data reused for many arrays): a crafted or damaged pickle, refused "
            f"before allocating; use the checkpoint as Paddle's save wrote it") from None
    except MemoryError:
        raise
    except Exception as e:
        raise FileFormatError(f"file {path!r} is not a numbaflow arrays file, and read as a "
                              f"Paddle pickle it is damaged or holds other than numeric "
                              f"arrays ({type(e).__name__}: {e})") from None


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
