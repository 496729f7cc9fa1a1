"""Timing and reporting for `numbaflow-bench`.

A *case* builds a few candidates that do the same work (numbaflow first, then its
baselines) and checks that their results agree. The candidates are then timed side by
side: warmed up, calibrated so one sample lasts about `min_time`, and sampled in turn
(A, B, C, A, B, C, ...) so that drift in machine load hits all of them alike.
A case that cannot be repeated in one process (compile time in fresh processes) has a
`report(cfg)` that measures and returns its rows itself.
"""
import contextlib
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
    """Seconds per iteration: the median and minimum of `n` samples and their interquartile
    range (q3 - q1; nan when only the median is known, e.g. one fresh process)."""
    median: float
    min: float
    iqr: float = float("nan")
    n: int = 1

    @classmethod
    def of(cls, samples):
        """The statistics of a list of per-iteration times."""
        s = sorted(samples)
        if not s:
            raise ValueError("Timing.of needs at least one sample, got none")
        q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3
        return cls(statistics.median(s), s[0], q[2] - q[0], len(s))

    @property
    def spread(self):
        """IQR / median (nan when unknown)."""
        return self.iqr / self.median if self.median else float("nan")


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
    # compiles into empty kernel caches in fresh processes (minutes): run only on request
    cold: bool = False


@dataclass
class Row:
    """One line of the report: the subject against one baseline, or a skip / error note.

    checks: what a target asks of this row -> whether it was met ("ratio <= 1.3x": True);
    the report prints the verdicts only when the run can back them (not with --quick), and
    `--check` fails the run when one is False."""
    case: str
    what: str
    subject: str = ""
    baseline: str = ""
    ratio: float = float("nan")
    t_subject: Timing = None
    t_baseline: Timing = None
    note: str = ""
    checks: dict = field(default_factory=dict)

    @property
    def failed(self):
        """True for a row that reports an error (a broken case, peers that disagree)."""
        return self.note.startswith("ERROR")


def measure(candidates, repeat, min_time, warmup=2, hot=True):
    """Time the candidates side by side; return {label: Timing}. The warm-up makes every
    plan hot and waits for its background segment compile, so the steady state is timed;
    `hot=False` (--quick, inside `plans_stay_cold`) times the op-by-op path."""
    from ..executor import plan
    from ..executor.segments import wait_for_compiles
    for c in candidates:
        for _ in range(max(warmup, plan.HOT_RUNS + 1) if hot else warmup):
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
    return {k: Timing.of(v) for k, v in samples.items()}


@contextlib.contextmanager
def plans_stay_cold(cold=True):
    """--quick: no plan turns hot (its HOT_RUNS out of reach), so no row compiles the segments
    of a steady state it does not time (~0.1 s of CPU per kernel call, cold). A run of K > 1
    iterations (seed_step_x100, a while_loop) still compiles its loop at once."""
    from ..executor import plan
    saved = plan.HOT_RUNS
    plan.HOT_RUNS = 1 << 30 if cold else saved
    try:
        yield
    finally:
        plan.HOT_RUNS = saved


def rows_for(case, candidates, timings):
    """Report lines for one measured case: numbaflow (the first candidate) vs each other."""
    subject, out = candidates[0], []
    ts = timings[subject.label]
    for i, base in enumerate(candidates[1:]):
        tb = timings[base.label]
        row = Row(case.name, case.what, subject.label, base.label, ts.median / tb.median, ts, tb)
        for prefix, limit in case.targets.items():
            if base.label.startswith(prefix):
                row.checks[f"ratio <= {limit:g}x"] = row.ratio <= limit
        if case.max_time is not None:
            row.checks[f"numbaflow <= {fmt_time(case.max_time)}/iter"] = \
                ts.median <= case.max_time
        # the subject's note once, on its first row; each baseline's on its own row
        row.note = "; ".join(n for n in (subject.note if i == 0 else "", base.note) if n)
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
