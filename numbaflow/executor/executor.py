"""Executor: the one driver, and the owner of every plan. `Executor.run` runs a `Program`
through its LocalRunner, and anything else that can be lowered (a `CompiledProgram`, a
higher layer: it answers `_lower(executor, feed, fetch_list, scope)` with a `Lowered`
record naming what to run and where) through a runner the executor makes for that record
and keeps (so `close` frees every plan). Learning-rate hooks, the K-iteration feeds and
fetch wrapping happen here, once, for every kind of program.

Threads: runs on one Scope are serialised (its lock is held from the feed binding to
the fetch), so concurrent `run` calls give the results of running them one after
another; runs on different scopes proceed concurrently.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import config
from ..graph.program import Program, Variable, default_main_program
from .backend import backend_for
from .feed import check_feed, feed_array, feed_var, resolve_fetch  # noqa: F401 (their old home)
from .place import CPUPlace, to_place
from .plan import PlanOptions
from .plan_cache import DEFAULT_OPTIONS, PlanCache, max_cached_plans  # noqa: F401 (their old home)
from .runner import LocalRunner, iteration_feeds
from .scope import Scope, Tensor, global_scope
from ..utils.hints import default_program_feed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from .place import CUDAPlace


class Lowered:
    """What a program object above this layer hands the executor to run: `source` (the
    user's program: its learning-rate hooks run first), `program` (what runs, e.g. after
    the BuildStrategy's passes), `scope`, `iterations` per run, and how and where:
    `options` (the PlanOptions of its plans), `drop_every` (release pooled temporaries
    every N runs, 0: never), `owner` and `key` (the executor keeps one runner per owner
    and key, dropped with the owner) and `data_parallel`: None to run on the executor's
    place, else a function () -> the Runner over several places, called once."""
    __slots__ = ("source", "program", "scope", "iterations", "options", "drop_every",
                 "owner", "key", "data_parallel")

    def __init__(self, source, program, scope, iterations=1, options=None, drop_every=0,
                 owner=None, key="local", data_parallel=None):
        self.source, self.program, self.scope = source, program, scope
        self.iterations, self.options, self.drop_every = iterations, options, drop_every
        self.owner, self.key, self.data_parallel = owner, key, data_parallel


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
        self._runner = LocalRunner(self._backend, DEFAULT_OPTIONS if config.plain_rewrites()
                                   else PlanOptions())   # plain Programs: their rewrites
        self._owned = weakref.WeakKeyDictionary()   # Lowered.owner -> {Lowered.key: Runner}

    def close(self) -> None:
        """Drop the cached plans and their buffers, of plain and compiled programs alike
        (the scope is untouched).

        Example:
            >>> exe = static.Executor(paddle.CPUPlace())
            >>> exe.close()
        """
        for runner in runners(self):
            runner.clear()

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
        if scope is None:
            scope = global_scope()
        elif not isinstance(scope, Scope):
            raise TypeError(f"Executor.run: scope must be a Scope (static.Scope() or "
                            f"static.global_scope()), got {type(scope).__name__} {scope!r}; "
                            f"leave it out to use the global scope")
        if type(program) is Program or isinstance(program, Program):
            runnable, runner, k = program, self._runner, 1
        else:
            lower = getattr(program, "_lower", None)      # CompiledProgram
            if lower is None:
                raise TypeError(f"Executor.run: program must be a Program or CompiledProgram, "
                                f"got {type(program).__name__}")
            lowered = lower(self, feed, fetch_list, scope)
            program, runnable, runner = lowered.source, lowered.program, runner_of(self, lowered)
            scope, k = lowered.scope, lowered.iterations
        for hook in program.run_hooks:     # learning-rate schedules set the rate first
            hook(scope)
        if type(feed) is dict or feed is None:
            results = runner.run(runnable, feed, fetch_list, scope, k, return_merged)
        else:
            feeds = iteration_feeds(feed, k)    # a list (one per device) or K of an iterator
            if len(feeds) == 1:
                results = runner.run(runnable, feeds[0], fetch_list, scope, k, return_merged)
            else:
                results = runner.run_feeds(runnable, feeds, fetch_list, scope, return_merged)
        results = [_unboxed(r) if getattr(r, "dtype", None) == object and r.ndim == 0 else r
                   for r in results]
        return results if return_numpy else [r if isinstance(r, list) else _Fetched(r)
                                              for r in results]


def _unboxed(box):
    """What a plan's 0-d object array holds, fetched: a tensor array's list of numpy arrays
    (as Paddle gives it), or a run-time-shaped value's array (lowering.boxed)."""
    item = box[()]
    if item is None or isinstance(item, list):
        return [a.copy() for a in item or []]
    return np.array(item)


def cached_plans(exe):
    """The plans `exe` has built and keeps for plain Programs, oldest first (for the warm-up
    tool and the benches: Paddle's Executor has no public plan list, so this is a function
    here)."""
    return exe._runner.cache.plans()


def plain_runner(exe):
    """The LocalRunner that runs plain Programs for `exe`: its `cache` (a PlanCache), the
    `options` it plans with and its `last_plan`.

    Example:
        >>> from numbaflow.executor.executor import plain_runner
        >>> len(plain_runner(static.Executor()).cache)
        0
    """
    return exe._runner


def runners(exe):
    """Every runner `exe` keeps: the plain Programs' first, then one per compiled version
    of each live CompiledProgram (those go with their CompiledProgram).

    Example:
        >>> from numbaflow.executor.executor import runners
        >>> len(runners(static.Executor()))
        1
    """
    return [exe._runner] + [r for rs in list(exe._owned.values()) for r in rs.values()]


def last_plan(exe):
    """The plan of `exe`'s last plain-Program run (its ops after the default-on rewrites),
    or None before one (for tests and tools, as compiled_program.last_plan).

    Example:
        >>> from numbaflow.executor.executor import last_plan
        >>> last_plan(static.Executor(paddle.CPUPlace())) is None
        True
    """
    return exe._runner.last_plan


def runner_of(exe, lowered, make=True):
    """The runner `exe` keeps for `lowered` (made at the first call; with make=False, None
    when there is none yet)."""
    runners = exe._owned.get(lowered.owner)
    runner = runners.get(lowered.key) if runners is not None else None
    if runner is None and make:
        if runners is None:
            runners = exe._owned[lowered.owner] = {}
        runner = runners[lowered.key] = (
            lowered.data_parallel() if lowered.data_parallel is not None else
            LocalRunner(exe._backend, lowered.options, lowered.drop_every))
    return runner


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


