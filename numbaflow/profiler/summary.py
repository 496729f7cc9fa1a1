"""The tables `Profiler.summary` prints: an overview of the recorded steps, then the
operators by type and one by one (calls, total, average, min, max, share of the step
time), the user's ranges, the data loading and, apart, the first runs (which compile).

>>> from numbaflow.utils.profiling_hook import Recorder
>>> rec = Recorder()
>>> s = rec.start_ns
>>> rec.add('ProfileStep#0', 'ProfileStep', s, s + 10_000_000)
>>> rec.add('matmul_v2', 'operator', s, s + 6_000_000, {'op_type': 'matmul_v2', 'op': 'matmul_v2#0'})
>>> print(summary_text(rec, op_detail=False).splitlines()[-3])
matmul_v2                                   1        6.000        6.000        6.000        6.000    60.00
"""
from collections import defaultdict

UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
SORT_KEYS = {"total": 0, "avg": 1, "max": 2, "min": 3}
WIDTH = 107
NAME = 40        # the name column (an op's label: type#index -> first output)


class Stat:
    """Calls, total, min and max of a set of spans (nanoseconds)."""
    __slots__ = ("calls", "total", "min", "max")

    def __init__(self):
        self.calls, self.total, self.min, self.max = 0, 0, None, 0

    def add(self, ns):
        self.calls += 1
        self.total += ns
        self.min = ns if self.min is None else min(self.min, ns)
        self.max = max(self.max, ns)

    def key(self, which):
        return (self.total, self.total / max(self.calls, 1), self.max, self.min or 0)[which]


def statistics(rec):
    """{table name: {row name: Stat}} of Recorder `rec`."""
    tables = defaultdict(lambda: defaultdict(Stat))
    for name, cat, t0, t1, _, args in rec.events:
        d = t1 - t0
        if cat in ("operator", "collective"):
            tables["type"][name].add(d)
            tables["op"][args["op"]].add(d)
        elif cat == "compile":
            tables["compile"][name].add(d)
        elif cat == "ProfileStep":
            tables["step"]["steps"].add(d)
        elif cat == "dataloader":
            tables["data"]["DataLoader.next"].add(d)
        elif cat == "PythonUserDefined":
            tables["user"][name].add(d)
        elif cat in ("executor", "segment"):
            tables[cat][cat].add(d)
    return tables


def _table(title, rows, unit, step_ns, sort, limit=None):
    scale = UNITS[unit]
    head = f"{'Name':<{NAME}}{'Calls':>6}{'Total':>13}{'Avg':>13}{'Min':>13}{'Max':>13}{'Ratio(%)':>9}"
    lines = ["", f"{title} (time unit: {unit})".center(WIDTH, "-"), head, "-" * WIDTH]
    ordered = sorted(rows.items(), key=lambda kv: -kv[1].key(sort))
    for name, s in ordered[:limit]:
        share = 100.0 * s.total / step_ns if step_ns else 0.0
        label = name if len(name) < NAME else name[:NAME - 4] + "..."
        lines.append(f"{label:<{NAME}}{s.calls:>6}{s.total / scale:>13.3f}"
                     f"{s.total / s.calls / scale:>13.3f}{s.min / scale:>13.3f}"
                     f"{s.max / scale:>13.3f}{share:>9.2f}")
    if limit is not None and len(ordered) > limit:
        lines.append(f"... {len(ordered) - limit} more (op_detail lists the first {limit})")
    return lines


def summary_text(rec, sort=0, op_detail=True, time_unit="ms", views=None, limit=50):
    """The summary of Recorder `rec` as text (see Profiler.summary)."""
    if time_unit not in UNITS:
        raise ValueError(f"summary: time_unit must be one of {sorted(UNITS)}, got {time_unit!r}")
    t = statistics(rec)
    scale = UNITS[time_unit]
    steps = t["step"].get("steps")
    step_ns = steps.total if steps else 0
    ops = sum(s.total for s in t["type"].values())
    want = (lambda v: True) if views is None else (lambda v: v in views)
    lines = []
    if want("overview"):
        lines += ["", f"Overview Summary (time unit: {time_unit})".center(WIDTH, "-")]
        n = steps.calls if steps else 0
        lines.append(f"steps recorded: {n}   step time: total {step_ns / scale:.3f}, "
                     f"average {step_ns / max(n, 1) / scale:.3f}")
        for label, table in (("operators (timed one by one)", "type"),
                             ("data loading (DataLoader.next)", "data"),
                             ("user ranges (RecordEvent)", "user"),
                             ("first runs (compile included)", "compile")):
            total = sum(s.total for s in t[table].values())
            share = f" ({100.0 * total / step_ns:.1f}% of the steps)" if step_ns else ""
            lines.append(f"  {label:<32}{total / scale:>12.3f}{share}")
        if step_ns:
            lines.append(f"  {'other (Python, feeds, fetches)':<32}"
                         f"{max(step_ns - ops - sum(s.total for s in t['data'].values()), 0) / scale:>12.3f}")
    if want("operator"):
        lines += _table("Operator Summary (by type)", t["type"], time_unit, step_ns, sort)
        if op_detail:
            lines += _table("Operator Detail (each op of each program)", t["op"], time_unit,
                            step_ns, sort, limit)
    if want("udf") and t["user"]:
        lines += _table("UserDefined Summary", t["user"], time_unit, step_ns, sort)
    if want("compile") and t["compile"]:
        lines += _table("First runs: kernels compile here (not in the tables above)",
                        t["compile"], time_unit, step_ns, sort)
    return "\n".join(lines)
