"""The feed and fetch rules at the run boundary: every fed value is converted and checked
against its variable (name, dtype, rank, known dims) and every fetch resolved to a
variable, before any kernel runs. Errors are TypeError / ValueError naming the variable
and the fix."""
import numpy as np

from ..graph.program import Variable
from ..utils.hints import close_names, foreign_fetch, one_place_feed, unknown_fetch


def check_feed(block, feed):
    """Convert and check every fed value; return {name: aligned C-contiguous ndarray}.

    Names must exist; values are converted by `feed_array`. Rank and known dims must
    match; a batch of 0 is refused. Every error is a TypeError / ValueError naming the
    variable.
    """
    if feed is None:
        return {}
    feed = one_place_feed(feed)         # Paddle also takes [feed_dict]
    out = {}
    for key, value in feed.items():
        var = feed_var(block, key)
        arr = feed_array(var, value)
        if var.persistable:
            if arr.shape != var.shape and arr.size == max(1, int(np.prod(var.shape))):
                arr = arr.reshape(var.shape)
        _check_shape(var, arr)
        # (np.require keeps 0-D arrays 0-D; aligned: a misaligned view is copied once here)
        out[var.name] = np.require(arr, requirements="CA")
    return out


def feed_var(block, key):
    """The variable a feed key (a name or a Variable) names; ValueError with close names."""
    name = key.name if isinstance(key, Variable) else key
    if not isinstance(name, str):
        raise TypeError(f"feed keys must be variable names (str) or Variables, got "
                        f"{type(key).__name__} {key!r}")
    var = block.vars.get(name)
    if var is None:
        close = close_names(name, list(block.vars))
        raise ValueError(f"feed: the program has no variable {name!r}" +
                         (f"; did you mean {close}?" if close else "") +
                         " Feed only variables created with static.data (or persistables).")
    return var


def feed_array(var, value):
    """`value` fed to `var` as an ndarray (shape not checked). Arrays (and objects with
    `__array__`) must have the declared dtype. Lists and scalars are read by numpy and
    converted to the declared dtype only when every value fits: numbers only (no None,
    strings, complex or ragged lists), integers in range, no fractional values into an
    int or bool variable, no finite float that overflows to inf."""
    name, dt = var.name, var.dtype
    if value is None:
        raise TypeError(f"feed {name!r}: expected an array of {dt} with shape "
                        f"{tuple(var.shape)}, got None")
    if np.ma.isMaskedArray(value) and np.ma.is_masked(value):
        raise TypeError(f"feed {name!r}: a masked array has no values at its masked "
                        f"positions; feed value.filled(fill_value) instead")
    if isinstance(value, np.ndarray) or hasattr(value, "__array__") and not \
            isinstance(value, (list, tuple, int, float)):
        arr = np.asarray(value)
        if arr.dtype != dt:
            raise ValueError(f"The data type of fed Variable {name!r} must be "
                             f"'{dt}', but received '{arr.dtype}'; convert it with "
                             f".astype('{dt}')")
        return arr
    cannot = f"feed {name!r}: cannot convert {type(value).__name__} to {dt}"
    try:
        raw = np.asarray(value)        # numpy's reading of the (nested) lists
    except (TypeError, ValueError) as e:      # ragged lists
        raise ValueError(f"{cannot}: {e}") from None
    if raw.dtype.kind not in "biuf":   # parsing strings would hide a mistake
        raise ValueError(f"{cannot}: numpy reads it as {raw.dtype}, not numbers (None, "
                         f"strings, complex numbers, mixed types or ints beyond 64 bits)")
    bad = unrepresentable(raw, dt)
    if bad is not None:
        raise ValueError(f"feed {name!r}: value {bad!r} cannot be represented as {dt} "
                         f"(converting would truncate, wrap or overflow it); convert "
                         f"it yourself or feed an array of {dt}")
    with np.errstate(over="ignore"):
        return raw.astype(dt)


def unrepresentable(raw, dt):
    """The first value of `raw` (bool/int/float) that `dt` cannot hold, else None."""
    if raw.size == 0 or raw.dtype == dt:
        return None
    flat = raw.ravel()
    with np.errstate(all="ignore"):
        if dt.kind == "b":
            bad = (flat != 0) & (flat != 1)
        elif dt.kind == "f":                    # rounding is fine, overflow is not
            bad = np.isfinite(flat) & ~np.isfinite(flat.astype(dt))
        elif flat.dtype.kind == "f":            # fractions, NaN, Inf, out of range
            bad = flat.astype(dt).astype(flat.dtype) != flat
        else:                                   # (a round trip hides int64 <-> uint64)
            info = np.iinfo(dt)
            bad = (flat < info.min) | (flat > info.max)
    i = np.flatnonzero(bad)
    return flat[i[0]].item() if i.size else None


def _bad_sample(col):
    """(sample index, value) of the first entry of the list `col` that is not a number
    or an array of numbers (None, a string, ...), or None."""
    for k, field in enumerate(col):
        try:
            kind = np.asarray(field).dtype.kind
        except (TypeError, ValueError):
            return k, field
        if kind not in "biuf":
            return k, field
    return None


def samples_to_array(var, col, lossy=False, where="DataFeeder"):
    """The samples' fields for `var` (a list of them, or one stacked array) as one array
    of its dtype and shape, under exe.run's feed rules: a value the dtype cannot hold (a
    fraction or NaN into an int, an overflow to inf, an int out of range) raises naming
    the variable, the sample and the value, unless `lossy` (then numpy's cast applies)."""
    dt = np.dtype(var.dtype)
    n = len(col)
    try:
        raw = np.asarray(col)
    except (TypeError, ValueError) as e:       # ragged fields
        raw, why = None, str(e)
    if raw is None or raw.dtype.kind not in "biuf":
        bad = _bad_sample(col)
        what = (f"sample #{bad[0]} holds {type(bad[1]).__name__} {bad[1]!r}" if bad else
                f"the samples' fields do not form one array ({why if raw is None else raw.dtype})")
        raise ValueError(f"{where}: cannot feed {var.name!r} ({dt}, shape {var.shape}): "
                         f"{what}; expected a number or an array of numbers in each sample")
    if not lossy:
        value = unrepresentable(raw, dt)
        if value is not None:
            flat = raw.ravel()
            at = np.flatnonzero(np.isnan(flat) if value != value else flat == value)[0]
            k = int(at) // max(1, raw.size // max(1, n))
            raise ValueError(f"{where}: sample #{k} of {var.name!r} holds {value!r}, which "
                             f"{dt} cannot represent (casting would truncate, wrap or "
                             f"overflow it); fix the data, or pass lossy_cast=True to cast "
                             f"as numpy does")
    with np.errstate(all="ignore"):
        arr = raw.astype(dt)
    shape = tuple(n if d == -1 and i == 0 else d for i, d in enumerate(var.shape))
    if arr.ndim != len(shape) and list(shape).count(-1) <= 1:
        try:
            arr = arr.reshape(shape)
        except ValueError:
            pass                              # reported below with the declared shape
    if arr.ndim != len(shape) or any(d >= 0 and d != a for d, a in zip(shape, arr.shape)):
        raise ValueError(f"{where}: {var.name!r} is declared with shape {var.shape} but "
                         f"the minibatch has shape {arr.shape} ({n} samples); "
                         f"make each sample's field hold {var.shape[1:]} values")
    return arr


def _check_shape(var, arr):
    expected = var.shape
    ok = len(expected) == arr.ndim and all(e == -1 or e == a for e, a in zip(expected, arr.shape))
    if not ok:
        raise ValueError(f"The fed Variable {var.name!r} should have dimensions = "
                         f"{len(expected)}, shape = {expected}, but received fed shape "
                         f"{tuple(arr.shape)}" +
                         ("" if len(expected) == arr.ndim else
                          f" (rank {arr.ndim}); reshape it to rank {len(expected)}"))
    if arr.ndim and arr.shape[0] == 0:
        raise ValueError(f"The fed Variable {var.name!r} has a batch of size 0 (shape "
                         f"{tuple(arr.shape)}); feed at least one sample")


def resolve_fetch(block, fetch_list):
    if fetch_list is None:
        return []
    if isinstance(fetch_list, (Variable, str)):
        fetch_list = [fetch_list]
    out = []
    for f in fetch_list:
        name = f.name if isinstance(f, Variable) else f
        if not isinstance(name, str):
            raise TypeError(f"fetch_list items must be Variables or names, got {type(f).__name__}")
        var = block.vars.get(name)
        if var is None:
            raise ValueError(foreign_fetch(f, block) if isinstance(f, Variable)
                             and f.block.program is not block.program
                             else unknown_fetch(name, block))
        out.append(var)
    return out
