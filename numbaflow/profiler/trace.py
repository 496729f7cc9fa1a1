"""A RECORD window's spans as a Chrome / Perfetto trace (the Trace Event Format's JSON:
https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).

Every span is a complete event ("ph": "X") with `ts` and `dur` in microseconds from the
window's start, on its process (`pid`, the OS process id) and thread (`tid`, the OS
thread id); "M" metadata events name the process and each thread. Open the file at
https://ui.perfetto.dev or chrome://tracing.

>>> from numbaflow.utils.profiling_hook import Recorder
>>> rec = Recorder()
>>> rec.add('matmul_v2', 'operator', rec.start_ns + 1000, rec.start_ns + 3500)
>>> [e['ph'] for e in chrome_trace(rec)['traceEvents']]
['M', 'M', 'X']
>>> chrome_trace(rec)['traceEvents'][-1]['dur']
2.5
"""
import json
import os


def _us(ns):
    return round(ns / 1000.0, 3)


def chrome_trace(rec):
    """The trace of Recorder `rec` as a dict ({"traceEvents": [...], ...})."""
    pid = os.getpid()
    names = rec.thread_names()
    tids = sorted({e[4] for e in rec.events})
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
               "args": {"name": f"numbaflow (pid {pid})"}}]
    events += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                "args": {"name": names.get(tid, f"thread {tid}")}} for tid in tids]
    # parents first where two spans start together (a viewer nests by order)
    for name, cat, t0, t1, tid, args in sorted(rec.events, key=lambda e: (e[2], -e[3])):
        ts, end = _us(t0 - rec.start_ns), _us(t1 - rec.start_ns)
        event = {"name": name, "cat": cat, "ph": "X", "ts": ts,
                 "dur": round(end - ts, 3), "pid": pid, "tid": tid}
        if args:
            event["args"] = args
        events.append(event)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"producer": "numbaflow.profiler"}}


def write_chrome_trace(rec, path):
    """Write the trace of `rec` to `path` (JSON); returns the path."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(rec), f)
    return path
