"""Executor: runs one program on one place. Validates feeds and fetches at the API
boundary, then runs a cached Plan.

This is the one way to a Plan: `PlanCache.plan_for` does the feed check, the fetch
resolution, the cache lookup (bounded, least recently used first out) and the repeat-call
fast path, for plain programs, compiled programs (`compiler/`) and each data-parallel
replica (`distributed/`). Those layers sit above this one: `Executor.run` hands any
program object that is not a `Program` to its `_executor_run(executor, ...)` method,
so nothing here imports them.

Threads: runs on one Scope are serialised (its lock is held from the feed binding to
the fetch), so concurrent `run` calls give the results of running them one after
another; runs on different scopes proceed concurrently.
"""
from __future__ import annotations

import collections
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import config
from ..graph.program import Program, Variable, default_main_program
from .backend import backend_for
from .place import CPUPlace, to_place
from .plan import Plan, PlanOptions, _close
from .scope import Tensor, global_scope
from ..utils.hints import default_program_feed, one_place_feed, unknown_fetch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from .place import CUDAPlace
    from .scope import Scope

DEFAULT_OPTIONS = PlanOptions()


def max_cached_plans():
    """How many plans each plan cache keeps (NUMBAFLOW_MAX_PLANS, default 64): every feed
    signature (a new batch size, a short last batch) has its own plan and buffers."""
    return config.max_plans()


class PlanCache:
    """Plans by (program, version, scope, feed signature, fetch names, options), at most
    `max_cached_plans()` of them; the least recently used one is dropped first
    (its buffers go with it once no run holds it).

    `plan_for` remembers the previous call: when the next one repeats it exactly (same
    program version, scope, options and fetch objects, C-contiguous ndarrays of the same
    names, shapes and dtypes), it skips feed conversion and the lookup, so a training
    loop pays for neither."""

    def __init__(self, backend, limit=None):
        self.backend = backend
        self.limit = limit
        self._plans = collections.OrderedDict()
        self._lock = threading.Lock()
        self._last = None  # (program, version, scope, options, fetch objects, feed specs, plan)

    def __len__(self):
        return len(self._plans)

    def plans(self):
        with self._lock:
            return list(self._plans.values())

    def clear(self):
        with self._lock:
            self._plans.clear()
            self._last = None

    def plan_for(self, program, feed, fetch_list, scope, options=DEFAULT_OPTIONS):
        """(the Plan for this signature, the checked feed arrays {name: ndarray})."""
        hit = self._repeat(program, feed, fetch_list, scope, options)
        if hit is not None:
            return hit
        block = program.global_block()
        feed_arrays = check_feed(block, feed)
        fetch_vars = resolve_fetch(block, fetch_list)
        key = (program._uid, program.version, id(scope),
               tuple((n, a.shape, a.dtype.str) for n, a in feed_arrays.items()),
               tuple(v.name for v in fetch_vars), options)
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
        if plan is None:
            # built outside the lock: another thread may look up other plans meanwhile
            plan = Plan(program, {block.vars[n]: a for n, a in feed_arrays.items()},
                        fetch_vars, scope, self.backend, options)
            with self._lock:
                plan = self._plans.setdefault(key, plan)
                limit = self.limit or max_cached_plans()
                while len(self._plans) > limit:
                    self._plans.popitem(last=False)
        self._last = (program, program.version, scope, options,
                      tuple(fetch_list) if isinstance(fetch_list, (list, tuple)) else None,
                      tuple((n, a.shape, a.dtype) for n, a in feed_arrays.items()), plan)
        return plan, feed_arrays

    def _repeat(self, program, feed, fetch_list, scope, options):
        last = self._last       # one read: another thread may replace it meanwhile
        if last is None or last[0] is not program or last[1] != program.version or \
                last[2] is not scope or last[3] is not options or type(feed) is not dict:
            return None
        fetch, specs = last[4], last[5]
        if fetch is None or not isinstance(fetch_list, (list, tuple)) or \
                len(fetch_list) != len(fetch) or len(feed) != len(specs):
            return None
        for a, b in zip(fetch_list, fetch):
            if a is not b:
                return None
        for name, shape, dtype in specs:
            a = feed.get(name)
            if type(a) is not np.ndarray or a.shape != shape or \
                    (a.dtype is not dtype and a.dtype != dtype):
                return None
            flags = a.flags
            if not (flags.c_contiguous and flags.aligned):
                return None
        # every key is one of the names checked (as many keys as names): the feed itself
        # is the {name: ndarray} the plan takes
        return last[6], feed


class Executor:
    """Runs programs on one place.

    The first run of a (program version, feed shapes, fetch list) builds and caches a plan
    (shapes, buffers, bound kernels); later runs reuse it.

    Args:
        place (CPUPlace, CUDAPlace or str, optional): where to run; default CPUPlace().

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> (loss_value,) = exe.run(feed={'x': np.ones((4, 3), 'float32')}, fetch_list=[loss])
        >>> loss_value.shape
        ()
    """

    def __init__(self, place: CPUPlace | CUDAPlace | str | None = None) -> None:
        self.place = CPUPlace() if place is None else to_place(place)
        self._backend = backend_for(self.place)
        self._cache = PlanCache(self._backend)

    def close(self) -> None:
        """Drop the cached plans and their buffers (the scope is untouched).

        Example:
            >>> exe = static.Executor(paddle.CPUPlace())
            >>> exe.close()
        """
        self._cache.clear()

    def run(self, program: Program | Any = None,      # Any: a CompiledProgram (a higher layer)
            feed: dict[str, ArrayLike] | list[dict[str, ArrayLike]] | None = None,
            fetch_list: Sequence[Variable | str] | Variable | str | None = None,
            feed_var_name: str = "feed", fetch_var_name: str = "fetch",
            scope: Scope | None = None, return_numpy: bool = True,
            use_program_cache: bool = True, return_merged: bool = True,
            use_prune: bool = False) -> list:
        """Run `program` once (K times with ExecutionStrategy.num_iteration_per_run=K).

        Feeds are checked against the data variables (names, rank, shape, dtype) before any
        kernel runs; a run that fails part-way leaves every persistable as it was.

        Args:
            program (Program or CompiledProgram, optional): default the default main program.
            feed (dict, optional): {data name: numpy array}; for a data-parallel
                CompiledProgram also a list of dicts (one per place) or an iterator of feeds.
            fetch_list (list of Variable or str, optional): what to return.
            feed_var_name (str): accepted for Paddle compatibility.
            fetch_var_name (str): accepted for Paddle compatibility.
            scope (Scope, optional): where persistables live; default `static.global_scope()`.
            return_numpy (bool): numpy arrays (default) or Tensor objects.
            use_program_cache (bool): accepted for Paddle compatibility (plans are always
                cached).
            return_merged (bool): for data parallelism, concatenate the places' fetches
                (default) or return a list per fetch.
            use_prune (bool): accepted for Paddle compatibility.

        Returns:
            list: one numpy array per fetch (a scalar loss gives a 0-d array).

        Raises:
            ValueError: an unknown feed or fetch name, a missing feed, a shape or dtype mismatch.
            RuntimeError: a parameter is not initialised (run the startup program first).

        Example:
            >>> x = static.data('x', [None, 3])
            >>> loss = paddle.mean(static.nn.fc(x, size=1))
            >>> _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
            >>> exe = static.Executor(paddle.CPUPlace())
            >>> _ = exe.run(static.default_startup_program())
            >>> feed = {'x': np.ones((4, 3), 'float32')}
            >>> first, = exe.run(static.default_main_program(), feed=feed, fetch_list=[loss])
            >>> second, = exe.run(static.default_main_program(), feed=feed, fetch_list=[loss])
            >>> bool(second < first)                  # one SGD step lowered the loss
            True
        """
        if program is None:
            program = default_main_program()
            default_program_feed(program, feed)     # the layers were built in another one?
        scope = global_scope() if scope is None else scope
        if type(program) is not Program and not isinstance(program, Program):
            run = getattr(program, "_executor_run", None)     # CompiledProgram
            if run is None:
                raise TypeError(f"Executor.run: program must be a Program or CompiledProgram, "
                                f"got {type(program).__name__}")
            return run(self, feed, fetch_list, scope, return_numpy, return_merged)
        for hook in program._lr_hooks:     # learning-rate schedules set the rate first
            hook(scope)
        plan, feed_arrays = self._cache.plan_for(program, feed, fetch_list, scope)
        results = plan.run(feed_arrays)       # (holds the scope's lock)
        return results if return_numpy else [_Fetched(r) for r in results]


class _Fetched(Tensor):
    """A fetched value when return_numpy=False (numpy-convertible, like Paddle's tensor)."""

    def __init__(self, array):
        self._array = array

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)

    def shape(self):
        return list(self._array.shape)

    def _dtype(self):
        return self._array.dtype


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
        close = _close(name, list(block.vars))
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
    bad = _unrepresentable(raw, dt)
    if bad is not None:
        raise ValueError(f"feed {name!r}: value {bad!r} cannot be represented as {dt} "
                         f"(converting would truncate, wrap or overflow it); convert "
                         f"it yourself or feed an array of {dt}")
    with np.errstate(over="ignore"):
        return raw.astype(dt)


def _unrepresentable(raw, dt):
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
            raise ValueError(unknown_fetch(name, block))
        out.append(var)
    return out
