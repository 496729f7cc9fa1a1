"""Compiled segments: a run of bound kernels becomes ONE generated @njit function.

A bound CPU kernel is usually `functools.partial(dispatcher, *args)` (a numba kernel
with its buffers and sizes), or `partial(run_calls, (step, ...))` of such steps. A
maximal run of such calls, cut only at host-side work (numpy, Python), is rendered as

    f0 = sys.modules['numbaflow.kernels.linalg'].gemm
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
"""
import functools
import hashlib
import sys

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from ..kernels.codegen import cache
from ..kernels.registry import run_calls

MIN_CALLS = 2          # a single call gains nothing from a segment
MAX_CALLS = 64         # keeps numba's compile time per segment bounded

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
    lines = ["# numbaflow compiled segment (generated)", "import sys",
             "from numba import njit", ""]
    names, params, body = {}, [], []
    for call in calls:
        fn = call.func.py_func
        key = (fn.__module__, fn.__name__)
        if key not in names:
            names[key] = f"f{len(names)}"
            lines.append(f"{names[key]} = sys.modules[{fn.__module__!r}].{fn.__name__}"
                         f"  # source {_fingerprint(fn.__module__)}")
        args = [f"a{len(params) + j}" for j in range(len(call.args))]
        params += args
        body.append(f"{names[key]}({', '.join(args)})")
    sig = ", ".join(params)
    lines += ["", "", "@njit(nogil=True, cache=True)", f"def segment({sig}):"]
    lines += [f"    {b}" for b in body]
    lines += ["", "", "@njit(nogil=True, cache=True)",
              f"def segment_loop(k{', ' if sig else ''}{sig}):", "    for _ in range(k):"]
    lines += [f"        {b}" for b in body]
    return "\n".join(lines) + "\n"


class Unit:
    """What the plan calls: one step as it is, or a Segment of compiled steps.

    `where[k]` = (op index, step index within that op's flattened kernel) of call k, so
    a unit can be refreshed when an op is rebound (a new fed array) without compiling
    anything: the new steps have the same kernels, only their arrays changed."""

    def __init__(self, calls, where):
        self.where = tuple(where)
        self.ops = tuple(dict.fromkeys(i for i, _ in self.where))
        self.segment = len(calls) >= MIN_CALLS
        self._loop = None
        if self.segment:
            mod = cache.load_source(segment_source(calls), label="segment")
            self._compiled, self._loop = mod.segment, mod.segment_loop
        self._set(calls)

    def _set(self, calls):
        self.calls = tuple(calls)
        if self.segment:
            self.args = tuple(a for c in self.calls for a in c.args)
            self.run = functools.partial(self._compiled, *self.args)
        else:
            self.run = self.calls[0]

    def loop(self, k):
        """Run k times (in compiled code for a segment)."""
        if self._loop is not None:
            self._loop(k, *self.args)
        else:
            for _ in range(k):
                self.run()

    def refresh(self, steps_of):
        """Take the new steps of rebound ops ({op index: flattened steps}); returns False
        when their structure changed (then the plan recompiles its units)."""
        new = []
        for call, (i, k) in zip(self.calls, self.where):
            if i not in steps_of:
                new.append(call)
                continue
            steps = steps_of[i]
            if k >= len(steps):
                return False
            step = steps[k]
            if self.segment and (not isinstance(step, functools.partial)
                                 or step.func is not call.func
                                 or len(step.args) != len(call.args)):
                return False
            new.append(step)
        self._set(new)
        return True


def compile_units(thunks):
    """Group the plan's bound kernels into Units, in order: consecutive compilable steps
    (of one op or across ops) become one compiled segment; anything else (numpy, Python,
    host work) runs as it is and cuts the segment."""
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
