"""Executor: validates feeds and fetches at the API boundary, then runs a cached Plan."""
import numpy as np

from ..graph.program import Program, Variable, default_main_program
from .backend import backend_for
from .place import CPUPlace, to_place
from .plan import Plan, PlanOptions, _close

DEFAULT_OPTIONS = PlanOptions()
from .scope import Tensor, global_scope

MAX_CACHED_PLANS = 64    # feed signatures kept per executor (each holds its buffers)


class Executor:
    """Runs programs on one place.

    >>> exe = static.Executor(paddle.CPUPlace())
    >>> exe.run(static.default_startup_program())
    >>> loss_val, = exe.run(feed={'x': x}, fetch_list=[loss])
    """

    def __init__(self, place=None):
        self.place = CPUPlace() if place is None else to_place(place)
        self._backend = backend_for(self.place)
        self._plans = {}
        self._last = None       # (program, version, scope, options, fetch, feed specs, plan)

    def close(self):
        self._plans.clear()
        self._last = None

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed",
            fetch_var_name="fetch", scope=None, return_numpy=True, use_program_cache=True,
            return_merged=True, use_prune=False):
        from .compiled_program import CompiledProgram
        if program is None:
            program = default_main_program()
        scope = global_scope() if scope is None else scope
        target = program._program if isinstance(program, CompiledProgram) else program
        for hook in getattr(target, "_lr_hooks", ()):   # learning-rate schedules (optimizer.lr)
            hook(scope)
        if isinstance(program, CompiledProgram):
            return program._run(self, feed, fetch_list, scope, return_numpy, return_merged)
        if not isinstance(program, Program):
            raise TypeError(f"Executor.run: program must be a Program or CompiledProgram, got "
                            f"{type(program).__name__}")
        return self._run_program(program, feed, fetch_list, scope, return_numpy)

    def _run_program(self, program, feed, fetch_list, scope, return_numpy=True,
                     options=None):
        plan, feed_arrays = self._plan_for(program, feed, fetch_list, scope, options)
        results = plan.run(feed_arrays)
        if return_numpy:
            return results
        return [_Fetched(r) for r in results]

    def _plan_for(self, program, feed, fetch_list, scope, options=None):
        """(the cached Plan for this signature, the checked feed arrays)."""
        options = options or DEFAULT_OPTIONS
        hit = self._repeat(program, feed, fetch_list, scope, options)
        if hit is not None:
            return hit
        block = program.global_block()
        feed_arrays = check_feed(block, feed)
        fetch_vars = resolve_fetch(block, fetch_list)
        key = (program._uid, program.version, id(scope),
               tuple((n, a.shape, a.dtype.str) for n, a in feed_arrays.items()),
               tuple(v.name for v in fetch_vars), options)
        last = (program, program.version, scope, options,
                      tuple(fetch_list) if isinstance(fetch_list, (list, tuple)) else None,
                      tuple((n, a.shape, a.dtype) for n, a in feed_arrays.items()))
        plan = self._plans.get(key)
        if plan is None:
            plan = Plan(program, {block.vars[n]: a for n, a in feed_arrays.items()},
                        fetch_vars, scope, self._backend, options)
            if len(self._plans) >= MAX_CACHED_PLANS:      # forget the oldest signature
                del self._plans[next(iter(self._plans))]
            self._plans[key] = plan
        self._last = last + (plan,)
        return plan, feed_arrays

    def _repeat(self, program, feed, fetch_list, scope, options):
        """The plan of the previous call when this one repeats it exactly (same program,
        scope, fetch objects, and C-contiguous ndarrays of the same names, shapes and
        dtypes): a training loop then skips feed conversion and the cache lookup."""
        last = self._last
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
        arrays = {}
        for name, shape, dtype in specs:
            a = feed.get(name)
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype or \
                    not a.flags.c_contiguous:
                return None
            arrays[name] = a
        return last[6], arrays


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
    """Convert and check every fed value; return {name: C-contiguous ndarray}.

    Names must exist; values get the declared dtype if they are lists/scalars and must
    match it if they are arrays; rank and known dims must match; a batch of 0 is refused.
    """
    if feed is None:
        return {}
    if not isinstance(feed, dict):
        raise TypeError(f"feed must be a dict of {{name: array}}, got {type(feed).__name__}")
    out = {}
    for key, value in feed.items():
        name = key.name if isinstance(key, Variable) else key
        var = block.vars.get(name)
        if var is None:
            close = _close(name, list(block.vars))
            raise ValueError(f"feed: the program has no variable {name!r}" +
                             (f"; did you mean {close}?" if close else "") +
                             " Feed only variables created with static.data (or persistables).")
        if isinstance(value, np.ndarray) or hasattr(value, "__array__") and not \
                isinstance(value, (list, tuple, int, float)):
            arr = np.asarray(value)
            if arr.dtype != var.dtype:
                raise ValueError(f"The data type of fed Variable {name!r} must be "
                                 f"'{var.dtype}', but received '{arr.dtype}'; convert it with "
                                 f".astype('{var.dtype}')")
        else:
            try:
                arr = np.asarray(value, dtype=var.dtype)
            except (TypeError, ValueError) as e:
                raise ValueError(f"feed {name!r}: cannot convert {type(value).__name__} to "
                                 f"{var.dtype}: {e}") from None
        if var.persistable:
            if arr.shape != var.shape and arr.size == max(1, int(np.prod(var.shape))):
                arr = arr.reshape(var.shape)
        _check_shape(var, arr)
        out[name] = np.require(arr, requirements='C')   # keeps 0-D arrays 0-D
    return out


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
            close = _close(name, list(block.vars))
            raise ValueError(f"Cannot find fetched variable {name!r} in the program" +
                             (f"; did you mean {close}?" if close else "") +
                             " (fetch a variable of the program being run)")
        out.append(var)
    return out
