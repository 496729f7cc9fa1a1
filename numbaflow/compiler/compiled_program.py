"""CompiledProgram: a program plus the BuildStrategy / ExecutionStrategy it runs under.

It lowers, the executor runs: `Executor.run(compiled, ...)` asks `_lower` for a
`Lowered` record (the program after the pass pipeline for these fed and fetched names,
its plan options and places, the iterations per run) and runs that with a runner it
makes and keeps (so `exe.close()` frees every plan). Nothing is built until the
first run, which binds the compiled program to that run's scope and place. The user's
Program and strategy objects are never modified: the resolved settings live in
`build_strategy_effective` / `exec_strategy_effective`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..graph.graphviz import write_dot
from ..graph.ir_graph import Graph
from ..graph.program import BACKWARD, Program
from ..distributed import mpi
from ..distributed.runner import DataParallelRunner
from ..executor.executor import Lowered, runner_of
from ..executor.plan import PlanOptions
from ..executor.backend import backend_for
from ..executor.place import CUDAPlace, cpu_places, cuda_places, to_place
from .pipeline import Context, is_training, run_pipeline
from .strategy import BuildStrategy, ExecutionStrategy

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
        _check_strategy("build_strategy", build_strategy, BuildStrategy)
        self._build_strategy = build_strategy
        self._exec_strategy = None
        self._is_data_parallel = False
        self._loss_name = None
        self._places = None
        self._share_vars_from = None
        self._scope = None
        self._place = None
        # the one memo: (fetch names, fed names, version) -> Lowered; `_last` is the
        # record of the last run, reused while the same call repeats
        self._lowered = {}
        self._last = None           # (executor, scope, fed keys, fetch objects, Lowered)
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
        _check_strategy("build_strategy", build_strategy, BuildStrategy)
        _check_strategy("exec_strategy", exec_strategy, ExecutionStrategy)
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
            bs = self._build_strategy or BuildStrategy()
            es = self._exec_strategy or ExecutionStrategy()
            self._device_places = self._resolve_places(place)
            self.build_strategy_effective = bs.effective()
            self.exec_strategy_effective = es.effective(len(self._device_places))
            self._options = self._plan_options()
            # last: a bound scope says the rest is whole (an interrupt above binds again)
            self._scope, self._place = scope, place
        elif scope is not self._scope and self._share_vars_from is None:
            # (with share_vars_from the source's scopes are used and `scope` is ignored)
            raise ValueError("Cannot compile program with different scope.")
        elif place != self._place:
            raise ValueError("Cannot compile program with different place.")

    def _lower(self, exe, feed, fetch_list, scope):
        """`Executor.run(compiled, ...)` asks this first: the `Lowered` record to run (the
        program after the passes for these fed and fetched names, its runner, the
        iterations per run). The last call's record is reused while the call repeats
        (same executor, scope, program version, feed names and fetch objects)."""
        last = self._last
        if last is not None and type(feed) is dict and type(fetch_list) in _SEQUENCES:
            l_exe, l_scope, version, keys, fetch, lowered = last
            # (tuple ==: identity first, and Variables compare by identity; one C call)
            if l_exe is exe and l_scope is scope and version == self._program.version and \
                    keys is not None and feed.keys() == keys and tuple(fetch_list) == fetch:
                return lowered
        self._bind(exe, scope)
        first = next(iter(feed), {}) if isinstance(feed, (list, tuple)) else feed
        fetch = tuple(f.name if hasattr(f, "name") else f for f in
                      ([fetch_list] if isinstance(fetch_list, str) else fetch_list or []))
        fed = tuple(sorted(k.name if hasattr(k, "name") else k for k in
                           (first if isinstance(first, dict) else {})))
        key = (fetch, fed, self._program.version)
        lowered = self._lowered.get(key)
        if lowered is None:
            lowered = self._lowered[key] = self._compile(set(fetch) | set(fed))
        repeatable = type(feed) is dict and type(fetch_list) in (list, tuple)
        self._last = (exe, scope, self._program.version,
                      frozenset(feed) if repeatable else None,
                      tuple(fetch_list) if repeatable else (), lowered)
        return lowered

    def _compile(self, protected):
        """The Lowered record for a private copy of the user's program after the pass
        pipeline (`protected`: the fed and fetched names, which no pass may remove)."""
        program = self._program.clone()
        bs = self.build_strategy_effective
        world = _world()
        devices = len(self._device_places) * (world.size if world is not None else 1) \
            if self._is_data_parallel else 1
        ctx = Context(devices=devices,
                      data_parallel=self._is_data_parallel, loss_name=self._loss_name,
                      device="gpu" if isinstance(self._place, CUDAPlace) else "cpu",
                      protected=frozenset(protected), training=is_training(program))
        path = bs.debug_graphviz_path
        if path:
            write_dot(program, path + "_original_graph")
        self.passes = run_pipeline(
            program, bs, ctx,
            (lambda stage: write_dot(program, f"{path}_{stage}_graph")) if path else None)
        lowered = Lowered(self._program, program, self._scope,
                          self.exec_strategy_effective.num_iteration_per_run, self._options,
                          self.exec_strategy_effective.num_iteration_per_drop_scope, owner=self)
        if self._is_data_parallel:
            lowered.key = program.uid        # a runner (device scopes) per compiled version
            lowered.data_parallel = lambda: self._data_parallel_runner(program, world)
        return lowered

    @property
    def _runners(self):
        """{id(program): DataParallelRunner} of the compiled versions (data parallel) that
        the executor of the last run keeps."""
        if self._last is None:
            return {}
        found = {id(lw.program): runner_of(self._last[0], lw, make=False)
                 for lw in self._lowered.values() if lw.data_parallel is not None}
        return {k: r for k, r in found.items() if r is not None}

    def _data_parallel_runner(self, program, world):
        source = None
        if self._share_vars_from is not None:
            other = self._share_vars_from
            if not getattr(other, "_is_data_parallel", False):
                raise ValueError("The shared Program is not data parallel, cannot share "
                                 "variables from it.")
            runners = other._runners        # (kept by the executor that ran it)
            if not runners:
                raise ValueError("The shared Program is not compiled and executed, so there "
                                 "is no variables to share.")
            source = next(iter(runners.values()))
        return DataParallelRunner(program, self._loss_name, self._device_places, self._scope,
                                  self.build_strategy_effective, self._options,
                                  [backend_for(p) for p in self._device_places], world,
                                  source,
                                  self.exec_strategy_effective.num_iteration_per_drop_scope)

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
        plan = last_plan(self)
        if plan is None:
            raise RuntimeError("memory_stats: the compiled program has not run yet")
        return plan.memory_stats()

    def drop_local_exe_scopes(self) -> None:
        """Release the pooled temporaries now (they are reallocated on the next run);
        persistables are untouched.
        """
        if self._last is None:
            return
        runners = (runner_of(self._last[0], lw, make=False) for lw in self._lowered.values())
        for runner in {id(r): r for r in runners if r is not None}.values():
            runner.release()


_SEQUENCES = (list, tuple)


def _check_strategy(name, value, cls):
    if value is not None and not isinstance(value, cls):
        raise TypeError(f"{name} must be a static.{cls.__name__} (or None), got "
                        f"{type(value).__name__} {value!r}; create one, set its options as "
                        f"attributes and pass it")


def _world():
    """The MPI world when launched by mpiexec with several ranks, else None."""
    if mpi.env_size() <= 1:
        return None
    w = mpi.world()
    return w if w is not None and w.size > 1 else None


def last_plan(compiled):
    """The plan of `compiled`'s last run (device 0's for data parallelism), or None before
    its first run (for tests and tools: Paddle's CompiledProgram shows no plan).

    Example:
        >>> from numbaflow.compiler.compiled_program import last_plan
        >>> last_plan(static.CompiledProgram(static.Program())) is None
        True
    """
    if compiled._last is None:
        return None
    runner = runner_of(compiled._last[0], compiled._last[5], make=False)
    return runner.last_plan if runner is not None else None


def passed_programs(compiled):
    """The programs `compiled` really runs (after its passes), one per compiled feed and
    fetch signature (for the benches: Paddle's CompiledProgram has no such property)."""
    return [lw.program for lw in compiled._lowered.values()]


class Replica(NamedTuple):
    """One device of a data-parallel run: its `scope` (device 0's is the user's), the
    `program` it runs (under ReduceStrategy.Reduce with only its parameters' optimizer
    ops), the `plans` it keeps cached, and the names of the parameters it `updates`."""
    scope: object
    program: Program
    plans: list
    updates: frozenset


def replicas(compiled):
    """The devices of `compiled`'s last data-parallel run, one Replica each ([] before
    its first run or when it is not data parallel): to inspect each device's copy of
    the parameters and which device updates which parameter.

    Example:
        >>> x = static.data('x', [None, 2])
        >>> loss = paddle.mean(static.nn.fc(x, size=2))
        >>> _ = paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
        >>> exe = static.Executor()
        >>> _ = exe.run(static.default_startup_program())
        >>> dp = static.CompiledProgram(static.default_main_program()).with_data_parallel(
        ...     loss_name=loss.name, places=[paddle.CPUPlace()] * 2)
        >>> _ = exe.run(dp, feed={'x': np.ones((4, 2), 'float32')}, fetch_list=[loss])
        >>> from numbaflow.compiler.compiled_program import replicas
        >>> [len(r.plans) for r in replicas(dp)]
        [1, 1]
    """
    r = None if compiled._last is None or not compiled._is_data_parallel else \
        runner_of(compiled._last[0], compiled._last[5], make=False)
    if r is None:
        return []
    first = (r.group.world.rank if r.reduce and r.group.world is not None else 0) * r.D
    everything = frozenset(p.name for p in r.program.all_parameters())
    return [Replica(scope, program, cache.plans(),
                    everything if r.owners is None else
                    frozenset(p for p, o in r.owners.items() if o == first + i))
            for i, (scope, program, cache) in enumerate(zip(r.scopes, r.programs,
                                                            r.device_caches))]
