"""CompiledProgram: a program plus the BuildStrategy / ExecutionStrategy it runs under.

Nothing is built until the first run, which binds the compiled program to that run's
scope and place. The user's Program and strategy objects are never modified: the
resolved settings live in `build_strategy_effective` / `exec_strategy_effective`.
"""
from __future__ import annotations

import collections.abc
from typing import TYPE_CHECKING

from ..graph.graphviz import write_dot
from ..graph.ir_graph import Graph
from ..graph.passes import apply_passes, fusion_pass_names
from ..graph.program import BACKWARD, Program
from ..distributed.runner import DataParallelRunner
from ..executor.executor import PlanCache, _Fetched
from ..executor.plan import PlanOptions, run_transaction
from ..executor.backend import backend_for
from ..executor.place import CUDAPlace, cpu_places, cuda_places, to_place
from ..executor.strategy import BuildStrategy, ExecutionStrategy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..executor.place import CPUPlace
    from ..graph.program import Variable


class CompiledProgram:
    """A program plus the BuildStrategy (passes) and, through `with_data_parallel`, the
    ExecutionStrategy and places it runs with. Run it with `Executor.run` like a Program.
    The user's program is never modified: the passes run on a private copy at the first run.

    Args:
        program_or_graph (Program or Graph): what to compile.
        build_strategy (BuildStrategy, optional): default BuildStrategy().

    Attributes:
        build_strategy_effective (BuildStrategy): the resolved settings (after a run).
        exec_strategy_effective (ExecutionStrategy): likewise.
        passes (list): the passes of the last compile, with their `refusals`.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1, activation='relu'))
        >>> _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> bs = static.BuildStrategy()
        >>> bs.fuse_elewise_add_act_ops = True
        >>> compiled = static.CompiledProgram(static.default_main_program(), build_strategy=bs)
        >>> loss_val, = exe.run(compiled, feed={'x': np.ones((4, 3), 'float32')}, fetch_list=[loss])
        >>> loss_val.shape
        ()
    """

    def __init__(self, program_or_graph: Program | Graph,
                 build_strategy: BuildStrategy | None = None) -> None:
        if isinstance(program_or_graph, Graph):
            self._program = program_or_graph.program
        elif isinstance(program_or_graph, Program):
            self._program = program_or_graph
        else:
            raise TypeError("The type of program_to_graph parameter is wrong, expected Graph or "
                            f"Program, but received {type(program_or_graph).__name__}")
        if build_strategy is not None and not isinstance(build_strategy, BuildStrategy):
            raise TypeError(f"build_strategy must be a BuildStrategy, got "
                            f"{type(build_strategy).__name__}")
        self._build_strategy = build_strategy
        self._exec_strategy = None
        self._is_data_parallel = False
        self._loss_name = None
        self._places = None
        self._share_vars_from = None
        self._scope = None
        self._place = None
        self._executor = None
        self._passed = {}           # (fetch names, feed names) -> the program after the passes
        self._cache = None          # PlanCache of the place this program is bound to
        self._fast = None           # (executor, scope, version, passed program) of the last run
        self._last_plan = None
        self._runs = 0
        self._runners = {}          # id(passed program) -> DataParallelRunner
        self.passes = []            # the passes of the last compile (with their refusals)
        self.build_strategy_effective = None
        self.exec_strategy_effective = None

    @property
    def program(self) -> Program:
        """The user's program (never modified by the passes)."""
        return self._program

    def with_data_parallel(self, loss_name: str | Variable | None = None,
                           build_strategy: BuildStrategy | None = None,
                           exec_strategy: ExecutionStrategy | None = None,
                           share_vars_from: CompiledProgram | None = None,
                           places: Sequence[CPUPlace | CUDAPlace] | None = None
                           ) -> CompiledProgram:
        """Run on several places (threads) and MPI ranks: a dict feed is split along axis 0,
        gradients are summed across places and ranks.

        Args:
            loss_name (str or Variable, optional): the loss; required when the program trains.
            build_strategy (BuildStrategy, optional): replaces the constructor's.
            exec_strategy (ExecutionStrategy, optional): threads, iterations per run.
            share_vars_from (CompiledProgram, optional): a data-parallel trainer whose
                parameter arrays this (test) program reads, without a copy.
            places (list of places, optional): default `static.cpu_places()` (CPU_NUM) or
                every GPU.

        Returns:
            CompiledProgram: self.

        Raises:
            ValueError: loss_name is unknown or not a scalar, or missing for a training program.
            RuntimeError: called twice.

        Example:
            >>> x = static.data('x', [None, 3])
            >>> loss = paddle.mean(static.nn.fc(x, size=1, activation='relu'))
            >>> _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
            >>> exe = static.Executor(paddle.CPUPlace())
            >>> _ = exe.run(static.default_startup_program())
            >>> compiled = static.CompiledProgram(static.default_main_program()).with_data_parallel(
            ...     loss_name=loss.name, places=static.cpu_places(2))
            >>> feed = {'x': np.ones((4, 3), 'float32')}
            >>> per_place, = exe.run(compiled, feed=feed, fetch_list=[loss])
            >>> per_place.shape                        # one loss per place
            (2,)
        """
        if self._is_data_parallel:
            raise RuntimeError("Already compiled with parallel, cannot be recompiled.")
        block = self._program.global_block()
        if loss_name is not None:
            name = loss_name.name if hasattr(loss_name, "name") else loss_name
            var = block.vars.get(name)
            if var is None:
                raise ValueError(f"with_data_parallel: loss_name {name!r} is not a variable of "
                                 f"the program")
            if any(d not in (1,) for d in var.shape):
                raise ValueError(f"with_data_parallel: loss {name!r} must be a scalar or have "
                                 f"one element, got shape {var.shape}")
            loss_name = name
        elif any(op.role == BACKWARD for op in block.ops):
            raise ValueError("with_data_parallel: the program has backward ops, so loss_name "
                             "must be set (e.g. loss_name=loss.name); without it replicas would "
                             "train unsynchronised")
        if build_strategy is not None:
            self._build_strategy = build_strategy
        self._exec_strategy = exec_strategy
        self._loss_name = loss_name
        self._share_vars_from = share_vars_from
        if places is not None:
            places = [to_place(p) for p in (places if isinstance(places, (list, tuple)) else [places])]
            if not places:
                raise ValueError("with_data_parallel: places is empty")
        self._places = places
        self._is_data_parallel = True
        return self

    def _resolve_places(self, exe_place):
        if not self._is_data_parallel:
            return [exe_place]
        places = self._places
        if places is None:
            places = cuda_places() if isinstance(exe_place, CUDAPlace) else cpu_places()
        kind = type(exe_place)
        if any(not isinstance(p, kind) for p in places):
            raise ValueError("Place type not match. You may set wrong type of places: the "
                             f"executor runs on {exe_place} but places are {places}")
        return places

    def _bind(self, exe, scope):
        place = exe.place
        if self._scope is None:
            self._scope, self._place = scope, place
            bs = self._build_strategy or BuildStrategy()
            es = self._exec_strategy or ExecutionStrategy()
            self._device_places = self._resolve_places(place)
            self.build_strategy_effective = bs.effective()
            self.exec_strategy_effective = es.effective(len(self._device_places))
            self._options = self._plan_options()
            self._drop_every = self.exec_strategy_effective.num_iteration_per_drop_scope
            self._cache = PlanCache(backend_for(place))
        elif scope is not self._scope and self._share_vars_from is None:
            # (with share_vars_from the source's scopes are used and `scope` is ignored)
            raise ValueError("Cannot compile program with different scope.")
        elif place != self._place:
            raise ValueError("Cannot compile program with different place.")
        self._executor = exe

    def _executor_run(self, exe, feed, fetch_list, scope, return_numpy, return_merged):
        """`Executor.run(compiled, ...)` lands here."""
        for hook in self._program._lr_hooks:     # learning-rate schedules set the rate first
            hook(scope)
        fast = self._fast
        if fast is not None and fast[0] is exe and fast[1] is scope and \
                fast[2] == self._program.version and type(feed) is dict:
            # the last run's executor, scope and program version, one iteration, no
            # replicas: the plan cache's repeat check decides the rest
            hit = self._cache._repeat(fast[3], feed, fetch_list, self._scope, self._options)
            if hit is not None:
                plan, arrays = hit
                result = plan.run(arrays)       # (holds the scope's lock)
                self._after_run(plan)
                return result if return_numpy else [_Fetched(r) for r in result]
        return self._run(exe, feed, fetch_list, scope, return_numpy, return_merged)

    def _run(self, exe, feed, fetch_list, scope, return_numpy, return_merged):
        self._bind(exe, scope)
        k = self.exec_strategy_effective.num_iteration_per_run
        iterator = isinstance(feed, collections.abc.Iterator)
        feeds = _iteration_feeds(feed, k)       # [feed] for a reused dict / list feed
        program = self._compiled_program(feeds[0], fetch_list)
        runner = self._runners.get(id(program))
        if runner is not None:
            result = runner.run(feeds[0], fetch_list, return_merged, k,
                                feeds if iterator else None)
            self._after_run(runner.last_plans[0])
        else:
            if any(isinstance(f, (list, tuple)) for f in feeds):
                raise TypeError("a list feed gives one dict per device: it needs "
                                "with_data_parallel over several places")
            # every feed is checked and every plan built before anything runs
            steps = [self._cache.plan_for(program, f, fetch_list, self._scope, self._options)
                     for f in feeds]
            with self._scope._lock:
                if len(steps) == 1:
                    # a dict feed is reused: the K iterations are one plan run (looping
                    # inside the compiled segment when there is one)
                    plan, arrays = steps[0]
                    result = plan.run(arrays, k)
                else:
                    result = run_transaction(steps)
            plan = steps[-1][0]
            self._after_run(plan)
            if k == 1 and type(feed) is dict:
                self._fast = (exe, scope, self._program.version, program)
        if not return_numpy:
            result = [_Fetched(r) for r in result]
        return result

    def _after_run(self, plan):
        self._last_plan = plan
        self._runs += 1
        if self._runs % self._drop_every == 0:
            self._release(periodic=True)

    def _data_parallel_runner(self, program, world):
        source = None
        if self._share_vars_from is not None:
            other = self._share_vars_from
            if not getattr(other, "_is_data_parallel", False):
                raise ValueError("The shared Program is not data parallel, cannot share "
                                 "variables from it.")
            if not other._runners:
                raise ValueError("The shared Program is not compiled and executed, so there "
                                 "is no variables to share.")
            source = next(iter(other._runners.values()))
        return DataParallelRunner(program, self._loss_name, self._device_places, self._scope,
                                  self.build_strategy_effective, self._options,
                                  [backend_for(p) for p in self._device_places], world,
                                  source)

    @property
    def device_count(self) -> int:
        """The number of local places (known after the first run)."""
        return len(self._device_places) if self._scope is not None else \
            len(self._places or [None])

    def _plan_options(self):
        bs, es = self.build_strategy_effective, self.exec_strategy_effective
        return PlanOptions(memory_optimize=bs.memory_optimize, enable_inplace=bs.enable_inplace,
                           num_threads=es.num_threads,
                           sequential=bs.enable_sequential_execution,
                           device_lock=not bs.remove_unnecessary_lock)

    def memory_stats(self) -> dict[str, int]:
        """Memory of the last run's plan.

        Returns:
            dict: 'peak_bytes', 'pool_bytes', 'num_buffers', ... (see Plan.memory_stats).

        Raises:
            RuntimeError: before the first run.

        Example:
            >>> x = static.data('x', [None, 3])
            >>> loss = paddle.mean(static.nn.fc(x, size=1, activation='relu'))
            >>> _ = paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
            >>> exe = static.Executor(paddle.CPUPlace())
            >>> _ = exe.run(static.default_startup_program())
            >>> compiled = static.CompiledProgram(static.default_main_program())
            >>> _ = exe.run(compiled, feed={'x': np.ones((4, 3), 'float32')}, fetch_list=[loss])
            >>> compiled.memory_stats()['peak_bytes'] > 0
            True
        """
        if self._last_plan is None:
            raise RuntimeError("memory_stats: the compiled program has not run yet")
        return self._last_plan.memory_stats()

    def _compiled_program(self, feed, fetch_list):
        """The user's program after the BuildStrategy's passes, built once per set of
        fed and fetched names (those are protected: no pass may fuse them away)."""
        fetch = tuple(f.name if hasattr(f, "name") else f for f in
                      ([fetch_list] if isinstance(fetch_list, str) else fetch_list or []))
        names = (feed[0] if feed else {}) if isinstance(feed, (list, tuple)) else (feed or {})
        fed = tuple(sorted(k.name if hasattr(k, "name") else k for k in names))
        key = (fetch, fed, self._program.version)
        program = self._passed.get(key)
        if program is None:
            program = self._program.clone()
            bs = self.build_strategy_effective
            path = bs.debug_graphviz_path
            if path:
                write_dot(program, path + "_original_graph")
            device = "gpu" if isinstance(self._place, CUDAPlace) else "cpu"
            world = _world()
            names = fusion_pass_names(bs)
            if self._is_data_parallel and len(self._device_places) * (
                    world.size if world is not None else 1) > 1:
                # each device's weight gradient must be summed before its update
                names = [n for n in names if n != "fuse_sgd_into_gemm"]
            self.passes = apply_passes(program, names, set(fetch) | set(fed), device)
            if path:
                write_dot(program, path + "_fused_graph")
            if self._is_data_parallel:
                self._runners[id(program)] = self._data_parallel_runner(program, world)
                self.passes.append(self._runners[id(program)].rewrite)
            if path:
                write_dot(program, path + "_multi_devices_graph")
            self._passed[key] = program
        return program

    def drop_local_exe_scopes(self) -> None:
        """Release the pooled temporaries now (they are reallocated on the next run);
        persistables are untouched.
        """
        self._release(periodic=False)

    def _release(self, periodic):
        """Release the plans' pooled temporaries. Every num_iteration_per_drop_scope runs
        (`periodic`) a pool under DROP_MIN_BYTES is kept: freeing it gives back nothing
        measurable and the next run would pay a rebind (~0.2 ms for the seed model)."""
        plans = list(self._cache.plans()) if self._cache is not None else []
        for runner in self._runners.values():
            plans += runner.plans()
        for plan in plans:
            if not periodic or plan.pool_bytes() >= DROP_MIN_BYTES:
                plan.release()


DROP_MIN_BYTES = 1 << 20     # periodic drops keep smaller pools (see CompiledProgram._release)


def _world():
    """The MPI world when launched by mpiexec with several ranks, else None."""
    from ..executor.strategy import _mpi_env
    if _mpi_env()[0] <= 1:
        return None
    from .. import distributed
    w = distributed.world()
    return w if w is not None and w.size > 1 else None


def _iteration_feeds(feed, k):
    """The feeds of one run of K iterations: a dict (or per-device list), reused by all K
    (so it is returned once), or K items from an iterator."""
    if feed is None or isinstance(feed, (dict, list, tuple)):
        return [feed]
    if isinstance(feed, collections.abc.Iterator):
        out = []
        for i in range(k):
            try:
                out.append(next(feed))
            except StopIteration:
                raise ValueError(f"num_iteration_per_run={k} but the feed iterator ended after "
                                 f"{i} feeds") from None
        return out
    raise TypeError(f"feed must be a dict, a list of dicts (one per device) or an iterator "
                    f"of those, got {type(feed).__name__}")

