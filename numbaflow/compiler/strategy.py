"""BuildStrategy and ExecutionStrategy: every option of Paddle's, with typed setters.

Unknown attributes raise AttributeError and wrongly typed values TypeError, so a typo
never passes silently. The objects are plain settings; `CompiledProgram` resolves the
effective values on copies and never writes back into them.
"""
from __future__ import annotations

import copy
import math
import os
import warnings

from ..distributed.modes import GradientScaleStrategy, ReduceStrategy
from ..distributed.mpi import env_rank, env_size
from . import pipeline

# Worker threads: ops are compute-bound, so more workers than cores only add hand-offs;
# far more (thousands) exhaust the process's thread limit and abort it.
MAX_NUM_THREADS = 256           # per place
MAX_TOTAL_THREADS = 1024        # num_threads x number of places


class _Strict:
    """Attributes limited to `_schema()` = {name: (types, default)}; None allowed if listed."""
    _SCHEMA = {}

    @classmethod
    def _schema(cls):
        return cls._SCHEMA

    def __init__(self):
        for name, (_, default) in self._schema().items():
            object.__setattr__(self, name, default() if callable(default) else default)

    def __setattr__(self, name, value):
        schema = self._schema()
        if name not in schema:
            import difflib
            close = difflib.get_close_matches(name, list(schema), n=1)
            raise AttributeError(f"{type(self).__name__} has no option {name!r}" +
                                 (f"; did you mean {close[0]!r}?" if close else ""))
        types, _ = schema[name]
        ok = isinstance(value, types) and not (bool not in _as_tuple(types)
                                               and isinstance(value, bool)
                                               and int in _as_tuple(types))
        if not ok:
            names = " or ".join("None" if t is type(None) else t.__name__ for t in _as_tuple(types))
            raise TypeError(f"{type(self).__name__}.{name} must be {names}, got "
                            f"{type(value).__name__} {value!r}")
        object.__setattr__(self, name, value)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._schema())
        return f"{type(self).__name__}({items})"


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


_B, _OB = bool, (bool, type(None))


class BuildStrategy(_Strict):
    """How `CompiledProgram` builds the graph: which passes run, how data-parallel
    gradients are combined. Set options as attributes; an unknown name raises
    AttributeError (with the closest option) and a wrongly typed value TypeError.

    Pass flags (bool, default False unless marked; the rows of the pass table
    compiler/pipeline.py, in the order the passes run):

    PASS_FLAGS

    Other options (name (type, default): meaning):

    - memory_optimize (bool or None, default None): reuse buffers of dead temporaries;
      None means on.
    - enable_inplace (bool, default True): let an op write its output over an input
      that is no longer needed.
    - enable_sequential_execution (bool, default False): run ops strictly in program
      order (no thread scheduling).
    - reduce_strategy (ReduceStrategy, default AllReduce): `AllReduce` sums every
      gradient on every place; `Reduce` also sums them but updates each parameter (and
      keeps its optimizer state) only on one owner, then broadcasts it.
    - gradient_scale_strategy (GradientScaleStrategy, default CoeffNumDevice): the
      `loss@GRAD` seed per place: `CoeffNumDevice` its share of the global batch
      (equals one device on the whole batch), `One` 1 per place, `Customized` taken
      from the feed.
    - fuse_all_reduce_ops (bool or None, default None): all-reduce gradients in
      buckets of `fuse_grad_size_in_MB` instead of one by one; None means on under
      AllReduce.
    - fuse_grad_size_in_MB (int or float, default 32): the bucket size for
      `fuse_all_reduce_ops`.
    - fuse_broadcast_ops (bool or None, default None): in Reduce mode, broadcast the
      updated parameters in one message per owner; None means on under Reduce.
    - remove_unnecessary_lock (bool, default True): False runs the kernels of all
      places behind one lock.
    - debug_graphviz_path (str, default ''): if set, write `<path>_original_graph`,
      `<path>_fused_graph` and `<path>_multi_devices_graph` (DOT).
    - num_trainers (int, default from mpiexec's environment, else 1): the number of
      processes; informational (numbaflow reads both from MPI).
    - trainer_id (int, default from mpiexec's environment, else 0): this process's
      rank; informational.

    `effective()` returns a copy with every None resolved.

    Example:
        >>> bs = static.BuildStrategy()
        >>> bs.fuse_elewise_add_act_ops = True
        >>> bs.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
        >>> bs.fuse_elewise_add_ops = True
        Traceback (most recent call last):
        ...
        AttributeError: BuildStrategy has no option 'fuse_elewise_add_ops'; did you mean ...?
    """
    ReduceStrategy = ReduceStrategy
    GradientScaleStrategy = GradientScaleStrategy
    _SCHEMA = {
        "debug_graphviz_path": (str, ""),
        "enable_sequential_execution": (_B, False),
        "fuse_broadcast_ops": (_OB, None),
        "gradient_scale_strategy": (GradientScaleStrategy, GradientScaleStrategy.CoeffNumDevice),
        "memory_optimize": (_OB, None),
        "reduce_strategy": (ReduceStrategy, ReduceStrategy.AllReduce),
        "remove_unnecessary_lock": (_B, True),
        "enable_inplace": (_B, True),
        "fuse_all_reduce_ops": (_OB, None),
        "fuse_grad_size_in_MB": ((int, float), 32),
        "num_trainers": (int, env_size),
        "trainer_id": (int, env_rank),
    }

    @classmethod
    def _schema(cls):
        # the pass flags are the pass table's rows (compiler/pipeline.py)
        rows = {name: (_B, default) for name, (default, _) in pipeline.flags().items()}
        return {**rows, **cls._SCHEMA}

    def __setattr__(self, name, value):
        # value checks once the type is right (the base class raises TypeError otherwise)
        num = isinstance(value, (int, float)) and not isinstance(value, bool)
        if name == "fuse_grad_size_in_MB" and num and not (math.isfinite(value) and value > 0):
            raise ValueError(f"BuildStrategy.fuse_grad_size_in_MB must be a finite number > 0 "
                             f"(the gradient bucket size in MiB), got {value!r}")
        num = num and isinstance(value, int)
        if name == "num_trainers" and num and value < 1:
            raise ValueError(f"BuildStrategy.num_trainers must be >= 1, got {value}")
        if name == "trainer_id" and num and value < 0:
            raise ValueError(f"BuildStrategy.trainer_id must be >= 0, got {value}")
        super().__setattr__(name, value)

    def effective(self) -> BuildStrategy:
        """A copy with every None resolved to what it means under these settings.

        Returns:
            BuildStrategy: the resolved copy (this object is not changed).

        Raises:
            ValueError: num_trainers / trainer_id disagree with the job (the trainers are
                the MPI ranks, so another value would be silently ignored).

        Example:
            >>> static.BuildStrategy().effective().fuse_all_reduce_ops
            True
        """
        size, rank = env_size(), env_rank()
        if self.num_trainers != size:
            raise ValueError(f"BuildStrategy.num_trainers={self.num_trainers} but this job has "
                             f"{size} trainer process(es) (the MPI ranks: mpiexec -n {size}). "
                             f"Leave num_trainers unset or set it to {size}.")
        if self.trainer_id != rank:
            where = "outside the job's ranks 0.." if self.trainer_id >= size else \
                "not this process's rank; ranks are 0.."
            raise ValueError(f"BuildStrategy.trainer_id={self.trainer_id} is {where}{size - 1} "
                             f"(this process is rank {rank}). Leave trainer_id unset or set it "
                             f"to {rank}.")
        e = copy.copy(self)
        allreduce = e.reduce_strategy is ReduceStrategy.AllReduce
        if e.fuse_broadcast_ops is None:
            object.__setattr__(e, "fuse_broadcast_ops", not allreduce)
        if e.fuse_all_reduce_ops is None:
            object.__setattr__(e, "fuse_all_reduce_ops", allreduce)
        if e.memory_optimize is None:
            object.__setattr__(e, "memory_optimize", True)
        if not allreduce:      # Reduce mode updates each parameter on its owner only
            object.__setattr__(e, "fuse_all_optimizer_ops", False)
        return e


def _pass_flag_help():
    lines = []
    for name, (default, doc) in pipeline.flags().items():
        lines.append(f"- {name}: {doc}" if default is False else
                     f"- {name} (default {default}; a plain Program run by Executor.run "
                     f"gets it too): {doc}")
    import textwrap
    return "\n    ".join(textwrap.fill(line, 84, subsequent_indent="  ").replace("\n", "\n    ")
                          for line in lines)


BuildStrategy.__doc__ = BuildStrategy.__doc__.replace("PASS_FLAGS", _pass_flag_help())


class ExecutionStrategy(_Strict):
    """How a compiled program is executed: threads, iterations per run, when pooled
    temporaries are released. Given through `CompiledProgram.with_data_parallel(...,
    exec_strategy=es)`.

    Options (name (type, default): meaning):

    - num_threads (int, default 0): worker threads that run ready ops over the plan's
      dependency graph (results are bit-identical for every count); 0 means one per place.
    - num_iteration_per_run (int, default 1): iterations per `Executor.run` (a dict
      feed is reused, an iterator gives one feed per iteration; the fetch is the last
      iteration's).
    - num_iteration_per_drop_scope (int, default 100): release the pooled temporaries
      every this many runs.
    - allow_op_delay (bool, default False): accepted for Paddle compatibility; True
      warns (DeprecationWarning) and does nothing.
    - use_thread_barrier (bool, default False): accepted for Paddle compatibility; no
      effect.

    Example:
        >>> es = static.ExecutionStrategy()
        >>> es.num_threads = 2
        >>> es.num_iteration_per_run = 4
        >>> es
        ExecutionStrategy(num_threads=2, num_iteration_per_drop_scope=100,
            num_iteration_per_run=4, allow_op_delay=False, use_thread_barrier=False)
    """
    _SCHEMA = {
        "num_threads": (int, 0),
        "num_iteration_per_drop_scope": (int, 100),
        "num_iteration_per_run": (int, 1),
        "allow_op_delay": (_B, False),
        "use_thread_barrier": (_B, False),
    }

    def __setattr__(self, name, value):
        if name == "num_threads" and isinstance(value, int) and \
                not 0 <= value <= MAX_NUM_THREADS:
            raise ValueError(f"ExecutionStrategy.num_threads must be in [0, {MAX_NUM_THREADS}] "
                             f"(0 = auto: one worker per place), got {value}; workers beyond "
                             f"the core count ({os.cpu_count()} here) only add overhead")
        if name in ("num_iteration_per_drop_scope", "num_iteration_per_run") and \
                isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise ValueError(f"ExecutionStrategy.{name} must be >= 1, got {value}")
        super().__setattr__(name, value)
        if name == "allow_op_delay" and value:
            warnings.warn("ExecutionStrategy.allow_op_delay has no effect and is deprecated",
                          DeprecationWarning, stacklevel=2)

    def effective(self, num_places: int = 1) -> ExecutionStrategy:
        """A copy with num_threads=0 (auto) resolved.

        Args:
            num_places (int): the number of places the program runs on.

        Returns:
            ExecutionStrategy: the resolved copy (this object is not changed).

        Raises:
            ValueError: num_threads workers on each of `num_places` places would exceed
                MAX_TOTAL_THREADS.

        Example:
            >>> static.ExecutionStrategy().effective().num_threads
            1
        """
        if self.num_threads * num_places > MAX_TOTAL_THREADS:
            raise ValueError(f"ExecutionStrategy.num_threads={self.num_threads} on {num_places} "
                             f"places is {self.num_threads * num_places} worker threads, more "
                             f"than {MAX_TOTAL_THREADS}; use num_threads <= "
                             f"{max(1, MAX_TOTAL_THREADS // num_places)} (or 0 = auto)")
        e = copy.copy(self)
        if e.num_threads == 0:
            # one worker per place: a place's kernels already use every core it gets
            # (numba's parallel loops, BLAS; data-parallel places split the cores), and
            # measured here a second worker on 2 cores only adds hand-off latency.
            object.__setattr__(e, "num_threads", 1)
        return e
