"""Timing and reporting for `numbaflow-bench`.

A *case* builds a few candidates that do the same work (numbaflow first, then its
baselines) and checks that their results agree. The candidates are then timed side by
side: warmed up, calibrated so one sample lasts about `min_time`, and sampled in turn
(A, B, C, A, B, C, ...) so that drift in machine load hits all of them alike.
A case that cannot be repeated in one process (compile time in fresh processes) has a
`report(cfg)` that measures and returns its rows itself.
"""
import statistics
import time
from dataclasses import dataclass, field


class Skip(Exception):
    """Raised by a case, or a candidate factory, when something it needs is not installed."""


@dataclass
class Candidate:
    """One contender: `fn()` does `iterations` units of the work measured."""
    label: str
    fn: object
    iterations: int = 1
    note: str = ""          # what the reader must know about this contender (in its rows)


@dataclass
class Timing:
    """Seconds per iteration."""
    median: float
    min: float


@dataclass
class Case:
    """A benchmark: `build(cfg)` returns [numbaflow candidate, baseline, baseline...]."""
    name: str
    what: str
    build: object
    # Baseline label prefix -> largest acceptable ratio (SPEC section 7 targets).
    targets: dict = field(default_factory=dict)
    # Largest acceptable absolute time per iteration of the subject, in seconds.
    max_time: float = None
    # report(cfg) -> [Row]: a case that does its own measuring instead of build(cfg)
    report: object = None


@dataclass
class Row:
    """One line of the report: the subject against one baseline, or a skip / error note."""
    case: str
    what: str
    subject: str = ""
    baseline: str = ""
    ratio: float = float("nan")
    t_subject: Timing = None
    t_baseline: Timing = None
    note: str = ""


def measure(candidates, repeat, min_time, warmup=2):
    """Time the candidates side by side; return {label: Timing}. The warm-up makes every
    plan hot and waits for its background segment compile, so the steady state is timed."""
    from ..executor.plan import HOT_RUNS
    from ..executor.segments import wait_for_compiles
    for c in candidates:
        for _ in range(max(warmup, HOT_RUNS + 1)):
            c.fn()
    wait_for_compiles()
    for c in candidates:
        c.fn()          # takes up the compiled segments
    numbers = {}
    for c in candidates:  # calls per sample, so that one sample lasts about min_time
        t0 = time.perf_counter()
        c.fn()
        once = max(time.perf_counter() - t0, 1e-7)
        numbers[c.label] = max(1, int(min_time / once))
    samples = {c.label: [] for c in candidates}
    for _ in range(repeat):
        for c in candidates:
            fn, n = c.fn, numbers[c.label]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[c.label].append((time.perf_counter() - t0) / (n * c.iterations))
    return {k: Timing(statistics.median(v), min(v)) for k, v in samples.items()}


def rows_for(case, candidates, timings):
    """Report lines for one measured case: numbaflow (the first candidate) vs each other."""
    subject, out = candidates[0], []
    ts = timings[subject.label]
    for i, base in enumerate(candidates[1:]):
        tb = timings[base.label]
        row = Row(case.name, case.what, subject.label, base.label, ts.median / tb.median, ts, tb)
        notes = []
        for prefix, limit in case.targets.items():
            if base.label.startswith(prefix):
                notes.append(f"target <= {limit:g}x: {'met' if row.ratio <= limit else 'MISSED'}")
        if case.max_time is not None:
            ok = ts.median <= case.max_time
            notes.append(f"target <= {fmt_time(case.max_time)}/iter: {'met' if ok else 'MISSED'}")
        # the subject's note once, on its first row; each baseline's on its own row
        notes += [n for n in (subject.note if i == 0 else "", base.note) if n]
        row.note = "; ".join(notes)
        out.append(row)
    return out


def fmt_time(seconds):
    """Human units: 12.3 us, 4.56 ms, 1.23 s."""
    if seconds is None or seconds != seconds:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


HEADER = ["case", "workload", "numbaflow", "vs", "ratio", "numbaflow median (min)",
          "baseline median (min)", "note"]


def _cells(row):
    def both(t):
        return "-" if t is None else f"{fmt_time(t.median)} ({fmt_time(t.min)})"

    ratio = "-" if row.ratio != row.ratio else f"{row.ratio:.2f}x"
    return [row.case, row.what, row.subject, row.baseline, ratio,
            both(row.t_subject), both(row.t_baseline), row.note]


def format_table(rows, markdown=False):
    """The report as aligned text, or as a markdown table."""
    cells = [HEADER] + [_cells(r) for r in rows]
    if markdown:
        lines = ["| " + " | ".join(c) + " |" for c in cells]
        lines.insert(1, "|" + "---|" * len(HEADER))
        return "\n".join(lines)
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(HEADER))).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
