"""Plan: a lowered program (lowering.py: the checks, concrete shapes and buffer
assignment) bound to buffers and kernels, and run.

Built once per signature and cached by the runner's PlanCache. Binding allocates the
pooled buffers and binds each op's kernel to them. A steady-state run is then: bind the fed arrays
(host: used in place, no copy; the ops reading them are rebound only when a new array
object is fed), call the kernels, copy the fetches out. Nothing else is allocated.

Kernels run one of three ways: on the Scheduler's worker threads (num_threads > 1,
ordered by `dependencies()`), in program order as bound thunks, or — once the plan is
hot — as compiled segments (segments.py: runs of numba kernels merged into one
generated njit function; a K-iteration run loops inside it).

Failure atomicity: persistables written up to the last op that may raise are backed up
into preallocated buffers at the start of each run and restored if it fails; so are
persistables set through the feed. Those written only after it (an optimizer's updates:
the parameters and their moments) cannot be left half-updated by an error, and Ctrl-C
(any signal handled in Python) is held back from the first of those ops to the end of the
run (atomic.SignalsDeferred), so they need no copy. A run where that does not hold (K
iterations, the scheduler's threads, a profiled run) backs up everything it writes.
"""
import sys
import threading
import time
from dataclasses import dataclass
from functools import partial

import numpy as np

from .. import config
from ..utils import profiling_hook
from ..utils.log import compile_notice, first_run
from ..kernels.registry import COLLECTIVE, get_op_def, may_fail
from .atomic import SignalsDeferred, backup_call, nothing, persistables_written, tail_start
from .backend import HostBackend
from .lowering import boxed, lower
from .memory import nbytes
from .precompile import precompile
from .profiled import run_profiled
from .segments import compile_in_background, flatten


# A plan's segments are compiled (in the background) once it is hot: compiling a segment
# cold costs about 0.1 s per kernel call in it (numba recompiles the callees into it; 3.3 s
# measured for the 32 calls of an MLP step, 24 ms from the warm disk cache), which a
# short run (a test, an evaluation pass) would never win back. A run of K > 1 iterations
# starts at once: its loop runs inside the segment.
HOT_RUNS = 8
# ... and only where they pay: a Python dispatch costs about a microsecond per kernel
# call; when that is under 1% of the run (big kernels) the plan stays op by op.
DISPATCH_S = 1e-6
PAYS_FRACTION = 0.01

# BuildStrategy.remove_unnecessary_lock=False: every kernel of every place runs behind
# this one process-wide lock (one kernel at a time); True (the default) needs none.
# Collectives wait for the other places, so they never hold it.
DEVICE_LOCK = threading.Lock()


def _locked(thunk):
    def run():
        with DEVICE_LOCK:
            thunk()
    return run


@dataclass(frozen=True)
class PlanOptions:
    """The execution settings a Plan is built for (from the effective strategies)."""
    memory_optimize: bool = True
    enable_inplace: bool = True
    num_threads: int = 1
    sequential: bool = False
    segments: bool = True        # merge runs of compiled kernels into one njit function
    device_lock: bool = False    # remove_unnecessary_lock=False: runs of all places take one lock
    comm: object = None          # data parallel: this device's endpoint for collective ops
    # (program, protected names, device) -> the rewrite passes applied to the plan's op
    # list (lowering.py), the program unchanged: a plain Program's default-on rewrites
    # (the executor's plain runner); None for a program that went through its passes
    rewrites: object = None
    # a `while` body's plan (executor/control_flow.py): every fed array is used in place,
    # written ones too (the loop variables: the body updates the enclosing block's
    # arrays), fetched ones are handed back as they are, and nothing is backed up (the
    # enclosing plan backs up its persistables)
    feed_in_place: bool = False


class Plan:
    def __init__(self, program, feed, fetch_vars, scope, backend=None, options=None):
        """feed: {Variable: ndarray (already dtype/shape-checked)}; backend: where buffers
        live and which kernels run (HostBackend by default, CudaBackend for a GPU)."""
        self.backend = backend or HostBackend()
        self.options = options or PlanOptions()
        self.compiling = None             # segments.BackgroundCompile in flight
        self._run_seconds = []             # op-by-op run times until hot
        self.segments_pay = None           # do segments pay here? (decided when hot)
        self._loops = False                # has a run asked for K > 1 iterations?
        self.scheduler = None
        self._binders = None
        self.buffers = None
        self.units = None
        self.runs = 0
        self.lowering = low = lower(program, feed, fetch_vars, scope, self.options,
                                    isinstance(self.backend, HostBackend))
        self.ops, self.concrete, self.shapes = low.ops, low.concrete, low.shapes
        self.defines, self.written, self.assignment = low.defines, low.written, low.assignment
        self.feed_vars, self.fetch_vars = low.feed_vars, low.fetch_vars
        self.zero_copy, self.handoff, self.users = low.zero_copy, low.handoff, low.users
        self.scope = scope
        self.scope_version = None
        self._binders = [None] * len(self.ops)
        self._held_refs = {}
        self._feed_seen = {}
        self._hold = SignalsDeferred()         # signals held back over a run's tail
        self._defer_at = None                  # this run's tail start when held back

    def bind(self, feed_arrays):
        """Allocate buffers and bind kernels (again after the scope replaced an array or
        the pool was released). Whole or not at all: `buffers` is what says a plan is
        bound, so an exception anywhere in here (Ctrl-C included) leaves it unbound and
        the next run binds again."""
        try:
            self._bind(feed_arrays)
        except BaseException:
            self.buffers = None
            raise

    def _bind(self, feed_arrays):
        scope, shapes, backend = self.scope, self.shapes, self.backend
        scope.bound()
        self.pool = [backend.empty((size,), np.uint8) for size in self.assignment.sizes]
        self._held_refs = {}
        bufs = {}
        for v in self.zero_copy:
            bufs[v] = feed_arrays[v.name]
            self._feed_seen[v] = bufs[v]
        for op_vars in [self.feed_vars] + [op.input_vars() + op.output_vars()
                                           for op in self.ops] + [self.fetch_vars]:
            for v in op_vars:
                if v in bufs:
                    continue
                if boxed(v):      # a tensor array's list (tensor_array.py), a run-time
                    bufs[v] = np.empty((), object)      # shaped value's array
                elif v.persistable:
                    bufs[v] = self._persistable_buffer(v)
                elif v in self.assignment.buffer_of:
                    bufs[v] = backend.view(self.pool[self.assignment.buffer_of[v]],
                                           shapes[v].shape, shapes[v].dtype,
                                           self.assignment.offset_of.get(v, 0))
                else:
                    bufs[v] = backend.empty(shapes[v].shape, shapes[v].dtype)
        self.persistable_names = [v.name for v in bufs if v.persistable]
        self.scope_version = scope.version
        self.buffers = bufs
        self.feed_slots = [(v.name, bufs[v]) for v in self.feed_vars if v not in self.zero_copy]
        # tensor arrays start each run empty (Paddle's local scope); a fed one (a while
        # body's) is the enclosing block's list
        self.arrays = [bufs[v] for v in bufs if v.is_tensor_array and v not in self.feed_vars]
        self.thunks = [self._bind_op(i) for i in range(len(self.ops))]
        check = config.check_nan_inf()
        # what the run writes up to its last op that may fail (fed persistables included)
        # is backed up at the start of the run and restored if it ends by any exception;
        # the tail after that op runs with signals held back (module docstring)
        host = isinstance(backend, HostBackend)
        self._tail = len(self.ops) if not host or check else tail_start(self.ops)
        self._early = self._backups(self._persistables_written(self._tail))
        self._everything = None       # the backups of every written one, made when first needed
        self._skip_backups = False
        # a run that is one compiled call can only happen whole when no kernel in it may
        # raise and no persistable is fed (copied in before it)
        self.indivisible = (host and not check and self.feed_slots == [] and not self.arrays
                             and not any(may_fail(op) for op in self.ops))
        # fetched arrays handed over as they are (host temporaries) or copied out
        in_place = set(self.zero_copy) if self.options.feed_in_place else set()
        # (a boxed value's 0-d object array is a host object on every place: the executor
        # copies what it holds)
        self._fetch_out = [(v, boxed(v) or host and (v in self.handoff or v in in_place))
                           for v in self.fetch_vars]
        threads = 1 if self.options.sequential else self.options.num_threads
        if threads > 1 and self.scheduler is None:
            from .scheduler import Scheduler
            self.scheduler = Scheduler(self.dependencies(), threads)
        self._segments_ok = (self.scheduler is None and self.options.segments and not check
                             and isinstance(backend, HostBackend))
        if self.units is not None:
            # the same kernels on new arrays of the same types: the units (compiled or
            # still compiling) take the new steps; nothing is recompiled
            steps = {i: flatten(t) for i, t in enumerate(self.thunks)}
            if not all(unit.refresh(steps) for unit in self.units):
                self._start_compile()

    def _persistables_written(self, upto):
        return [] if self.options.feed_in_place else persistables_written(
            self.ops[:upto], self.feed_vars)

    def _backups(self, variables):
        """(pairs of (live, backup) arrays, the call copying them) for `variables`."""
        pairs = [(self.buffers[v], self.backend.empty(self.buffers[v].shape, self.buffers[v].dtype))
                 for v in variables]
        return pairs, backup_call(pairs, self.backend)

    def _backups_for(self, defer):
        """(pairs, copy call) of the backups this run takes: the early ones when Ctrl-C is
        held back over the tail (`defer`), else every written persistable's (allocated on
        first need)."""
        if self._skip_backups:
            return [], nothing
        if defer or self._tail == len(self.ops):
            return self._early
        if self._everything is None:
            self._everything = self._backups(self._persistables_written(len(self.ops)))
        return self._everything

    def _bind_op(self, i):
        op, bufs = self.ops[i], self.buffers
        ins = {k: [bufs[v] for v in vs] for k, vs in op.inputs.items()}
        outs = {k: [bufs[v] for v in vs] for k, vs in op.outputs.items()}
        if self._binders[i] is None:     # specialise once; rebinding only binds arrays
            self._binders[i] = self.backend.binder(get_op_def(op.type), self.concrete[i])
        thunk = self._binders[i](ins, outs)
        if config.check_nan_inf():
            thunk = _nan_checked(thunk, op, [(v.name, bufs[v]) for v in op.output_vars()],
                                 self.backend)
        if self.options.device_lock and not get_op_def(op.type).has(COLLECTIVE):
            thunk = _locked(thunk)
        return thunk

    def dependencies(self):
        """For each op, the earlier ops it must wait for (see Lowering.dependencies)."""
        return self.lowering.dependencies()

    def memory_key(self, v):
        return self.lowering.memory_key(v)

    def release(self):
        """Free the pooled temporaries (drop_local_exe_scopes); the next run rebinds."""
        with self.scope.locked():
            self.buffers = self.pool = self.thunks = None
            for unit in self.units or ():   # (compiled code kept: refreshed on bind)
                unit.release()

    def skip_backups(self):
        """Take no per-run backups until the next bind (the benchmark of what failure
        atomicity costs; a run that then fails leaves what it wrote)."""
        self._skip_backups = True

    def pool_bytes(self):
        """Bytes of the pooled temporaries."""
        return sum(self.assignment.sizes)

    def memory_stats(self):
        """Bytes this plan holds: `pool_bytes` (temporaries, after reuse and in-place),
        `num_buffers` (pool buffers), `peak_bytes` (pool + fed + persistable bytes the
        run touches + fetched copies: what one run needs at once), `backup_bytes` (the
        copies of persistables the bound plan keeps for failure atomicity: those written
        before its last op that may fail; all it writes once a run needed that)."""
        pool = sum(self.assignment.sizes)
        other = sum(nbytes(self.shapes[v]) for v in self.shapes
                    if v.persistable or v in self.feed_vars)
        fetched = sum(nbytes(self.shapes[v]) for v in self.fetch_vars)
        kept = [] if self.buffers is None else self._early[0] + (self._everything or ([],))[0]
        return {"peak_bytes": pool + other + fetched, "pool_bytes": pool,
                "num_buffers": len(self.assignment.sizes),
                "live_temporary_bytes": self.assignment.peak_live_bytes,
                "backup_bytes": sum(saved.nbytes for _, saved in kept)}

    def _persistable_buffer(self, v):
        """The scope's array for `v`. A variable this plan only reads or updates in place
        must still have the shape and dtype the plan was built for; one it defines (an
        initialiser's output, a fed value) is (re)allocated when missing or different."""
        info, spec = self.shapes[v], self.scope.spec(v.name)
        if spec is not None and spec[0] == tuple(info.shape) and spec[1] == info.dtype:
            return self.backend.scope_array(self.scope, v.name)
        if spec is None or v in self.defines or v in self.feed_vars:
            return self.backend.ensure(self.scope, v.name, info.shape, info.dtype)
        raise self._mismatch(v, spec)

    def _mismatch(self, v, spec):
        info = self.shapes[v]
        return ValueError(f"scope variable {v.name!r} now holds shape {spec[0]} {spec[1]}, but "
                          f"the program uses it as {tuple(info.shape)} {info.dtype}; set an array "
                          f"of that shape and dtype (Scope.set) or rebuild the program")

    def _failed_op(self, e, i):
        """(the error, the op it came from) for an exception raised by unit or thunk i."""
        from .scheduler import OpFailed
        if getattr(e, "failed_op", None) is not None:     # read back from a device
            return e, e.failed_op
        if isinstance(e, OpFailed):
            return e.error, self.ops[e.index]
        if self.scheduler is None and self.units is not None:
            ops = [self.ops[j] for j in self.units[i].ops]
            # a compiled segment covers several ops: the one that can fail on bad data
            return e, next((op for op in ops if may_fail(op)), ops[0])
        return e, self.ops[i]

    def _refs(self, v):
        return sys.getrefcount(self.buffers[v])

    def _take_buffers(self, feed_arrays):
        """Use new fed array objects in place, and give a fetched variable a new array
        when the caller still holds the one of the last run: rebind the ops that use
        them (and refresh the compiled units holding those ops; nothing is recompiled)."""
        changed = []
        for v in self.zero_copy:
            arr = feed_arrays[v.name]
            seen = self._feed_seen[v]
            if arr is not seen and not _same_memory(arr, seen):
                self._feed_seen[v] = self.buffers[v] = arr
                changed.append(v)
        for v in self.handoff:
            if self._refs(v) > self._held_refs.get(v, sys.maxsize):
                self.buffers[v] = self.backend.empty(self.shapes[v].shape, self.shapes[v].dtype)
                changed.append(v)
        rebound = {}
        for v in changed:
            for i in self.users[v]:
                self.thunks[i] = self._bind_op(i)
                rebound[i] = flatten(self.thunks[i])
        if rebound and self.units is not None:
            for unit in self.units:
                if any(i in rebound for i in unit.ops) and not unit.refresh(rebound):
                    self._start_compile()
                    break

    def _start_compile(self):
        """Units usable at once, op by op; their segments compile in the background."""
        if self.compiling is not None:
            self.compiling.cancel()
        self.compiling = compile_in_background(
            self.thunks, f"a plan of {len(self.ops)} ops", self._loops)
        self.units = self.compiling.units

    def _decide_segments(self):
        """True when the Python dispatch a segment saves is worth its compile: at least
        PAYS_FRACTION of the op-by-op run time (measured over the first runs). Decided
        once per plan."""
        if self.segments_pay is None:
            calls = sum(len(flatten(t)) for t in self.thunks)
            times = sorted(self._run_seconds)
            typical = times[len(times) // 2] if times else 0.0
            self.segments_pay = calls >= 2 and calls * DISPATCH_S >= PAYS_FRACTION * typical
        return self.segments_pay

    def wait_compiled(self, timeout=None):
        """Block until the background segment compile (if any) is done and in use (for
        tests and benchmarks; a run never waits for it)."""
        if self.compiling is not None:
            self.compiling.wait(timeout)
            if self.compiling.done.is_set():
                self.compiling = None

    def run(self, feed_arrays, iterations=1):
        """feed_arrays: {name: ndarray} matching the signature this plan was built for.
        A run that ends by any exception (Ctrl-C included) leaves every persistable as it
        was before the run, then re-raises. Runs on one scope never interleave: the run
        holds the scope's lock (so does `release`)."""
        # a CUDA place: its device is current in this thread for the whole run
        with self.scope.locked(), self.backend.activate():
            if self.runs:
                return self._run(feed_arrays, iterations)
            # the first run compiles every kernel not yet in numba's disk cache
            with compile_notice(first_run(self.ops, feed_arrays)):
                return self._run(feed_arrays, iterations)

    def _run_steps(self, iterations):
        """The kernels, `iterations` times: on the scheduler, as units, or op by op.
        `self._at` follows the unit / op running, for the error message."""
        self._at = 0
        if self.scheduler is not None:
            for _ in range(iterations):
                self.scheduler.run(self.thunks)
        elif self.units is not None:
            # units hold the ops in program order: the first reaching the tail starts the hold
            hold_at = None if self._defer_at is None else next(
                n for n, unit in enumerate(self.units) if unit.ops[-1] >= self._defer_at)
            if len(self.units) == 1:
                if iterations == 1:
                    if hold_at is not None:
                        self._hold.start()
                    self.units[0].run()
                else:
                    self.units[0].loop(iterations)
            else:
                for _ in range(iterations):
                    for self._at, unit in enumerate(self.units):
                        if self._at == hold_at:
                            self._hold.start()
                        unit.run()
        else:
            for _ in range(iterations):
                for self._at, thunk in enumerate(self.thunks):
                    if self._at == self._defer_at:
                        self._hold.start()
                    thunk()

    def _run(self, feed_arrays, iterations):
        if self.buffers is None or self.scope.version != self.scope_version:
            self.bind(feed_arrays)
        else:
            try:
                self._take_buffers(feed_arrays)
            except BaseException:
                self.buffers = None     # half rebound: the next run binds whole again
                raise
        if self.runs == 0 and isinstance(self.backend, HostBackend):
            precompile(self.thunks)     # a cold cache: two processes compile (precompile.py)
        self.runs += 1
        if self.compiling is not None and not self.compiling.poll():
            self.compiling = None
        self._loops |= iterations > 1
        if self.units is None and self._segments_ok and (
                iterations > 1 or self.runs >= HOT_RUNS and self._decide_segments()):
            self._start_compile()
        timed = self.units is None and self._segments_ok and self.runs < HOT_RUNS
        t0 = time.perf_counter() if timed else 0.0
        backend = self.backend
        backend.before_run(self.scope, self.persistable_names)
        backed_up = False       # set once the backups are whole: only then restore them
        units, run_steps = self.units, self._run_steps
        profiled = profiling_hook.recorder is not None
        if profiled:   # a profiler records: each op timed
            units, run_steps = None, partial(run_profiled, self, profiling_hook.recorder)
        defer = (iterations == 1 and self.scheduler is None and not profiled
                 and self._tail < len(self.ops))
        self._defer_at = self._tail if defer else None
        self._at = 0
        try:
            if self.indivisible and iterations == 1 and units is not None and \
                    len(units) == 1 and units[0].compiled:
                # the whole run is one native call in which nothing can raise: it
                # happens entirely or not at all, so there is nothing to back up
                units[0].run()
            else:
                backups, backup = self._backups_for(defer)
                backup()
                backed_up = True
                for holder in self.arrays:
                    holder[()] = []
                for name, buf in self.feed_slots:
                    backend.copy_in(buf, feed_arrays[name])
                run_steps(iterations)
                if backend.defers_errors:
                    backend.check_errors(self.ops)   # a GPU's bad-data record, once per run
        except BaseException as e:
            if backed_up:
                for live, saved in backups:
                    backend.copy(live, saved)
            self._hold.end()    # (a Ctrl-C held back lands here: all is restored by now)
            if not isinstance(e, Exception):
                raise           # KeyboardInterrupt, SystemExit: as they are
            raise _op_error(*self._failed_op(e, self._at)) from e

        if timed:
            self._run_seconds.append((time.perf_counter() - t0) / iterations)
        backend.after_run(self.scope, self.written)
        buffers = self.buffers
        for v in self.handoff:        # our own references, before the caller gets one
            self._held_refs[v] = sys.getrefcount(buffers[v])
        fetched = [buffers[v] if handed else backend.to_host(buffers[v])
                   for v, handed in self._fetch_out]
        self._hold.end()        # a Ctrl-C held back over the tail lands after the whole run
        return fetched


def _same_memory(a, b):
    """True when `a` is another view of exactly the memory `b` (bound) shows: the bound
    kernels keep `b` (and so that memory) alive, so they may go on using it. A
    data-parallel feed is a fresh slice object of the same array every run."""
    return (a.ctypes.data == b.ctypes.data and a.shape == b.shape and a.strides == b.strides
            and a.dtype == b.dtype)


def _op_error(e, op):
    msg = (f"op {op.type} failed (inputs {op.input_arg_names}, outputs {op.output_arg_names}): "
           f"{e}. Parameters and optimizer state were left as before this run.")
    try:
        return type(e)(msg)
    except Exception:
        return RuntimeError(msg)


def _nan_checked(thunk, op, outputs, backend):
    def run():
        thunk()
        for name, a in outputs:
            if a.dtype.kind == "f" and not np.isfinite(backend.to_host(a)).all():
                raise FloatingPointError(f"NUMBAFLOW_CHECK_NAN_INF: op {op.type} produced a "
                                         f"NaN or Inf in {name!r}")
    return run
