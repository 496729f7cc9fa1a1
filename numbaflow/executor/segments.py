"""Compiled segments: a run of bound kernels becomes ONE generated @njit function.

A bound CPU kernel is usually `functools.partial(dispatcher, *args)` (a numba kernel
with its buffers and sizes), or `partial(run_calls, (step, ...))` of such steps. A
maximal run of such calls, cut only at host-side work (numpy, Python), is rendered as

    f0 = sys.modules['numbaflow.kernels.math.linalg'].gemm
    f1 = sys.modules['numbaflow_generated.nfk_1a2b...'].kernel

    @njit(nogil=True, cache=True)
    def segment(a0, a1, a2, a3, ...):
        f0(a0, a1, a2)
        f1(a3, ...)

so a run makes one native call per segment instead of one Python dispatch per op, and
`segment_loop(k, ...)` repeats the body k times (num_iteration_per_run) without
returning to Python. The module is cached on disk by the hash of its source, which
names each callee and a fingerprint of the callee's source file, so a changed kernel
never reuses a stale compiled segment. NUMBAFLOW_DUMP_DIR dumps the segments too.

Segments never stall a run: a plan runs its ops one by one at once, and once it is hot
its segments are compiled on a background thread (`compile_in_background`), a piece of
at most MAX_CALLS calls at a time (a cold piece compiles in well under a second), each
piece taking over from the per-op steps as soon as it is ready. numba compiles in Python
and holds the GIL while it types and lowers, but the kernels release it, so a run goes
on beside the compile (measured: per-call dispatch unchanged at the median).
"""
import atexit
import functools
import hashlib
import logging
import queue
import sys
import threading
import time

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from ..kernels.codegen import cache
from ..kernels.registry import run_calls

log = logging.getLogger("numbaflow")

MIN_CALLS = 2          # a single call gains nothing from a segment
# A cold segment costs numba ~50-100 ms per call in it (it compiles the callees into the
# segment): 12 calls keep one piece well under a second, and a piece of 12 calls still
# turns 12 Python dispatches into one.
MAX_CALLS = 12
SLOW_COMPILE_S = 2.0   # a background compile longer than this logs one INFO line

_fingerprints = {}


def _fingerprint(module_name):
    fp = _fingerprints.get(module_name)
    if fp is None:
        mod = sys.modules[module_name]
        path = getattr(mod, "__file__", None)
        data = open(path, "rb").read() if path else module_name.encode()
        fp = _fingerprints[module_name] = hashlib.sha256(data).hexdigest()[:16]
    return fp


def _importable(dispatcher):
    """The segment module reaches a callee as `sys.modules[module].name`: that must be
    this kernel (or the same code, when its generated module was loaded again)."""
    fn = dispatcher.py_func
    mod = sys.modules.get(fn.__module__)
    other = getattr(mod, fn.__name__, None) if mod is not None else None
    return other is dispatcher or (isinstance(other, CPUDispatcher)
                                   and other.py_func.__code__ == fn.__code__)


def _typeable(arg):
    t = type(arg)
    if t is np.ndarray:
        return arg.dtype.kind in "biufc"
    if t in (int, float, bool, np.bool_):
        return True
    try:
        t = numba.typeof(arg)
    except (ValueError, TypeError):
        return False
    return not isinstance(t, (numba.types.Dispatcher, numba.types.PyObject,
                              numba.types.List, numba.types.Set, numba.types.DictType))


def compilable(call):
    """True when `call` is partial(numba kernel, positional numba-typeable args)."""
    return (isinstance(call, functools.partial) and isinstance(call.func, CPUDispatcher)
            and not call.keywords and _importable(call.func)
            and all(_typeable(a) for a in call.args))


def flatten(thunk):
    """The steps of a bound kernel (a run_calls sequence is opened up)."""
    if isinstance(thunk, functools.partial) and thunk.func is run_calls and not thunk.keywords:
        return [c for step in thunk.args[0] for c in flatten(step)]
    return [thunk]


def segment_source(calls):
    """The module of one segment calling `calls` in order: partials of numba kernels,
    or (kernel, number of arguments) pairs."""
    lines = ["# numbaflow compiled segment (generated)", "import sys",
             "from numba import njit", ""]
    names, params, body = {}, [], []
    for call in calls:
        func, nargs = (call.func, len(call.args)) if isinstance(call, functools.partial) \
            else call
        fn = func.py_func
        key = (fn.__module__, fn.__name__)
        if key not in names:
            names[key] = f"f{len(names)}"
            lines.append(f"{names[key]} = sys.modules[{fn.__module__!r}].{fn.__name__}"
                         f"  # source {_fingerprint(fn.__module__)}")
        args = [f"a{len(params) + j}" for j in range(nargs)]
        params += args
        body.append(f"{names[key]}({', '.join(args)})")
    sig = ", ".join(params)
    lines += ["", "", "@njit(nogil=True, cache=True)", f"def segment({sig}):"]
    lines += [f"    {b}" for b in body]
    lines += ["", "", "@njit(nogil=True, cache=True)",
              f"def segment_loop(k{', ' if sig else ''}{sig}):", "    for _ in range(k):"]
    lines += [f"        {b}" for b in body]
    # a `while` body (executor/control_flow.py): runs while flag[0] (which the body
    # rewrites) holds, at most k times; returns the number of iterations run
    lines += ["", "", "@njit(nogil=True, cache=True)",
              f"def segment_while(k, flag{', ' if sig else ''}{sig}):", "    n = 0",
              "    while n < k and flag[0]:"]
    lines += [f"        {b}" for b in body] + ["        n += 1", "    return n"]
    return "\n".join(lines) + "\n"


class Unit:
    """What the plan calls: one step as it is, or a run of steps that becomes a compiled
    segment once `compile()` has run (until then, and for good if the compile fails,
    its steps run one by one, so a Unit is usable at once).

    `where[k]` = (op index, step index within that op's flattened kernel) of call k, so
    a unit can be refreshed when an op is rebound (a new fed array) without compiling
    anything: the new steps have the same kernels, only their arrays changed."""

    def __init__(self, calls, where):
        self.where = tuple(where)
        self.ops = tuple(dict.fromkeys(i for i, _ in self.where))
        self.segment = len(calls) >= MIN_CALLS
        self._compiled = self.compiled_loop = self._while = None
        self.ready = None          # (segment, segment_loop) compiled, not yet in use
        # what each call must stay (kernel, number of arguments) for the compiled code, and
        # the argument types it is compiled for: the compile thread needs no arrays
        self._kinds = tuple((getattr(c, "func", None), len(getattr(c, "args", ())))
                            for c in calls)
        self._types = tuple(numba.typeof(a) for c in calls for a in c.args) \
            if self.segment else ()
        self._set(calls)

    @property
    def compiled(self):
        return self._compiled is not None

    def _set(self, calls):
        self.calls = tuple(calls)
        if self._compiled is not None:
            self.args = tuple(a for c in self.calls for a in c.args)
            self.run = functools.partial(self._compiled, *self.args)
        elif len(self.calls) == 1:
            self.run = self.calls[0]
        else:
            self.run = functools.partial(run_calls, self.calls)

    def compile(self, with_loop=False):
        """Compile this unit's segment for its arguments' types (any thread); `activate`
        then puts it to use (on the thread that runs the plan)."""
        if not self.segment or self.ready is not None or self._compiled is not None:
            return
        mod = cache.load_source(segment_source(self._kinds), label="segment")
        sig = self._types
        mod.segment.compile(sig)
        if with_loop:
            mod.segment_loop.compile((numba.types.intp,) + sig)
        self.ready = (mod.segment, mod.segment_loop if with_loop else None)

    def activate(self):
        """Use the compiled segment from now on (with the current arguments)."""
        if self.ready is not None:
            # every field is computed before any is stored, and the stores run without a
            # call between them (no signal lands there): an interrupt leaves the unit
            # either as it was (then `ready` is still set) or swapped whole
            compiled, loop = self.ready
            args = tuple(a for c in self.calls for a in c.args)
            run = functools.partial(compiled, *args)
            self.args, self.run, self.compiled_loop, self._compiled, self.ready = \
                args, run, loop, compiled, None

    def loop(self, k):
        """Run k times (in compiled code for a segment)."""
        if self.compiled_loop is not None:
            self.compiled_loop(k, *self.args)
        else:
            for _ in range(k):
                self.run()

    def compile_while(self, flag):
        """Compile this (compiled) unit's `segment_while` for the 1-d bool view `flag`
        (on the calling thread: a `while` body's one-off; numba's disk cache keeps it).
        Compiled once: later calls return at once."""
        if self._while is not None:
            return
        mod = cache.load_source(segment_source(self._kinds), label="segment")
        mod.segment_while.compile((numba.types.intp, numba.typeof(flag)) + self._types)
        self._while = mod.segment_while

    def run_while(self, k, flag):
        """Run the body while flag[0] holds, at most k times, in one native call; the
        number of iterations run."""
        return self._while(k, flag, *self.args)

    def release(self):
        """Drop the arrays this unit holds (the plan released its buffers); `refresh` with
        every op's new steps gives them back."""
        self.calls = tuple(None for _ in self.where)
        self.args = ()
        self.run = None

    def refresh(self, steps_of):
        """Take the new steps of rebound ops ({op index: flattened steps}); returns False
        when their structure changed (then the plan recompiles its units)."""
        new = []
        for call, (func, nargs), (i, k) in zip(self.calls, self._kinds, self.where):
            if i not in steps_of:
                if call is None:        # released: every op's steps are needed
                    return False
                new.append(call)
                continue
            steps = steps_of[i]
            if k >= len(steps):
                return False
            step = steps[k]
            if self.segment and (not isinstance(step, functools.partial)
                                 or step.func is not func or len(step.args) != nargs):
                return False
            new.append(step)
        self._set(new)
        return True


def plan_units(thunks):
    """Group the plan's bound kernels into Units, in order: consecutive compilable steps
    (of one op or across ops, at most MAX_CALLS) become one segment; anything else (numpy,
    Python, host work) runs as it is and cuts the segment. Nothing is compiled here."""
    units = []
    pending, where = [], []

    def flush():
        if len(pending) >= MIN_CALLS:
            units.append(Unit(pending, where))
        else:
            units.extend(Unit([c], [w]) for c, w in zip(pending, where))
        pending.clear()
        where.clear()

    for i, thunk in enumerate(thunks):
        for k, step in enumerate(flatten(thunk)):
            if compilable(step):
                if len(pending) >= MAX_CALLS:
                    flush()
                pending.append(step)
                where.append((i, k))
            else:
                flush()
                units.append(Unit([step], [(i, k)]))
    flush()
    return units


class BackgroundCompile:
    """The compile of one plan's units on the compile thread: `poll()` (on the thread
    that runs the plan) activates the units that are ready and says whether any are
    still to come; `cancel()` stops it between pieces (the plan was rebound)."""

    def __init__(self, units, what, with_loop=False):
        self.units = units
        self.what = what
        self.with_loop = with_loop
        self.cancelled = False
        self.done = threading.Event()
        self.error = None
        self._activated = 0

    def work(self):
        t0 = time.perf_counter()
        try:
            # the K-iteration loop only for a plan run with K > 1 (a cold loop costs as much
            # as its segment again: 2.4-2.9 s of CPU each for the seed model's, loaded)
            with_loop = self.with_loop and len(self.units) == 1
            for unit in self.units:
                if self.cancelled:
                    return
                unit.compile(with_loop)
        except Exception as e:      # noqa: BLE001 - the plan keeps its per-op steps
            self.error = e
            log.warning("compiling the segments of %s failed; it keeps running "
                        "op by op: %s: %s", self.what, type(e).__name__, e)
        finally:
            self.done.set()
        spent = time.perf_counter() - t0
        if spent > SLOW_COMPILE_S:
            n = sum(len(u.calls) for u in self.units if u.segment)
            log.info("compiled %d segments (%d kernel calls) of %s in the "
                     "background in %.1f s, so that each run makes one native call per "
                     "segment instead of one Python call per kernel; they are cached on "
                     "disk for later processes", sum(u.segment for u in self.units), n,
                     self.what, spent)

    def poll(self):
        """Activate what is ready; True while pieces are still compiling."""
        finished = self.done.is_set()
        for unit in self.units:
            if unit.ready is not None:
                unit.activate()
        return not finished

    def cancel(self):
        self.cancelled = True

    def wait(self, timeout=None):
        self.done.wait(timeout)
        self.poll()


class _CompileThread:
    """One daemon thread per process compiles segments, one plan after another (numba
    serialises compiles behind its own lock anyway). At interpreter exit the jobs not
    started are dropped and the one running stops after its current piece (well under a
    second), so the process never exits with LLVM in the middle of a compile."""

    def __init__(self):
        self._jobs = queue.Queue()
        self._thread = None
        self._lock = threading.Lock()
        self._open = []          # jobs submitted and not finished
        self._closed = False
        atexit.register(self.close)     # (a no-op when no compile ever started)

    def submit(self, job):
        with self._lock:
            if self._closed:
                job.cancel()
                job.done.set()
                return job
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, daemon=True,
                                                name="numbaflow-compile")
                self._thread.start()
            self._open.append(job)
        self._jobs.put(job)
        return job

    def _serve(self):
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                job.work()
            finally:
                with self._lock:
                    if job in self._open:
                        self._open.remove(job)
                self._jobs.task_done()

    def wait_idle(self):
        self._jobs.join()

    def close(self, timeout=30.0):
        with self._lock:
            self._closed = True
            for job in self._open:
                job.cancel()
            thread = self._thread
        if thread is not None and thread.is_alive():
            self._jobs.put(None)
            thread.join(timeout)


_compile_thread = _CompileThread()


def _fork_between_compiles():
    """A process forked while the compile thread holds numba's compiler lock would inherit
    it held by a thread that does not exist there: its first numba compile would hang
    (a forked DataLoader worker, mpiexec's supervisor fork). So a fork waits for the lock
    (at most the current piece, well under a second) and both sides release it after."""
    import os
    from numba.core.compiler_lock import global_compiler_lock
    lock = getattr(global_compiler_lock, "_lock", None)
    if lock is not None and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=lock.acquire, after_in_parent=lock.release,
                            after_in_child=lock.release)


_fork_between_compiles()


def wait_for_compiles():
    """Block until every background segment compile requested so far is done (benchmarks
    use it to time the steady state; runs never wait)."""
    _compile_thread.wait_idle()


def compile_in_background(thunks, what, with_loop=False):
    """Units for `thunks`, usable at once (op by op), whose segments are compiled on the
    compile thread (a lone unit's `segment_loop` too when `with_loop`): the plan calls
    `poll()` before each run to take them up."""
    return _compile_thread.submit(BackgroundCompile(plan_units(thunks), what, with_loop))
