"""Where the run path meets the profiler (numbaflow.profiler), in the lowest layer so the
executor and the data loader can look here without importing the profiler.

`recorder` is None unless a Profiler is in a RECORD window: then it is the `Recorder`
the timed spans go into. The executor reads it once per run (not per op): a plan picks
its timed, op-by-op path when it is set, and its usual path (compiled segments
included) otherwise, so a run with no profiler pays one attribute read.

`open_profilers` counts the started profilers (timer_only included): a DataLoader
iterator created while one is open times its batches (`watched`); one created with
none open is the plain iterator.

>>> from numbaflow.utils import profiling_hook
>>> profiling_hook.recorder is None
True
"""
import threading
import time

recorder = None          # the Recorder of the profiler recording now, or None
open_profilers = 0       # profilers started and not stopped
data_ns = 0              # nanoseconds spent waiting for DataLoader batches (while one is open)

_names = {}              # native thread id -> thread name (for the trace's metadata)


class Recorder:
    """The spans of one RECORD window: (name, category, start ns, end ns, thread id,
    args) tuples, appended from any thread (list.append is atomic)."""

    def __init__(self):
        self.events = []
        self.start_ns = time.perf_counter_ns()
        self.end_ns = None

    def add(self, name, cat, start_ns, end_ns, args=None):
        tid = threading.get_native_id()
        if tid not in _names:
            _names[tid] = threading.current_thread().name
        self.events.append((name, cat, start_ns, end_ns, tid, args))

    @staticmethod
    def thread_names():
        return dict(_names)


def watched(batches):
    """`batches` as they are when no profiler is open; else an iterator that times each
    `next` (the time a step waited for its data) into `data_ns` and, while recording,
    into the trace as a "dataloader" span."""
    if not open_profilers:
        return batches
    return _timed(iter(batches))


def _timed(it):
    global data_ns
    try:
        while True:
            t0 = time.perf_counter_ns()
            try:
                item = next(it)
            except StopIteration:
                return
            t1 = time.perf_counter_ns()
            data_ns += t1 - t0
            rec = recorder
            if rec is not None:
                rec.add("DataLoader.next", "dataloader", t0, t1)
            yield item
    finally:        # closing this closes the loader's iterator (stops its prefetch thread)
        close = getattr(it, "close", None)
        if close is not None:
            close()
