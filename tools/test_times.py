"""Count and time the test subsets, and (with --write) put the table into docs/testing.md
(the Tests section). One command regenerates its numbers:

    python tools/test_times.py --write          # runs the whole suite once (CI's command)
    python tools/test_times.py --counts-only    # counts only (collection: seconds), no times

How: each subset's tests are collected (``pytest --collect-only -m <marker expression>``),
then the whole suite runs ONCE as CI runs it (fresh kernel caches, so compiles count), with
a JUnit XML report; a subset's time is the sum of its tests' own durations in that run, and
"all" is the run's wall time. The machine's load average is printed beside: on a shared
machine the times are upper bounds.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "testing.md")
BEGIN, END = "<!-- test-times: begin (python tools/test_times.py --write) -->", \
    "<!-- test-times: end -->"

# (label, marker expression or None for all, the command the page shows)
SUBSETS = [
    ("core: everything in-process", "not slow", 'python -m pytest -q -m "not slow" tests'),
    ("GPU kernels under numba's CUDA simulator", "gpu", "python -m pytest -q -m gpu tests"),
    ("MPI: 2-rank jobs under the venv's `mpiexec`", "mpi", "python -m pytest -q -m mpi tests"),
    ("all (what CI runs)", None, "python -m pytest -q tests"),
]


def _pytest(args, env, timeout):
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def collect(expr, env):
    """The node ids a marker expression selects."""
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "tests"]
    r = _pytest(args + (["-m", expr] if expr else []), env, 600)
    if r.returncode not in (0, 5):
        raise RuntimeError(f"collection failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return {line.strip() for line in r.stdout.splitlines() if "::" in line}


def durations(xml_path):
    """{node id: seconds} from a JUnit XML report."""
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        # classname: tests.test_x or tests.test_x.TestClass (no class in our suite mostly)
        path = "/".join(p for p in parts if not p[:1].isupper()) + ".py"
        klass = "::".join(p for p in parts if p[:1].isupper())
        node = f"{path}::{klass + '::' if klass else ''}{case.get('name')}"
        out[node] = float(case.get("time", 0.0))
    return out


def _fmt(seconds):
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes, s = divmod(round(seconds), 60)
    return f"{minutes} min {s:02d} s" if minutes < 10 else f"{seconds / 60:.1f} min"


def table(rows):
    lines = ["| subset | command | time (2 cores) |", "|---|---|---|"]
    for label, command, count, seconds in rows:
        when = _fmt(seconds) if seconds is not None else "not measured"
        lines.append(f"| {label} | `{command}` | {when} ({count} tests) |")
    lines.append("| one op's rows (forward, gradient, in-place) | "
                 "`python -m pytest -q tests/kernels/test_op_table.py -k relu` | seconds |")
    return "\n".join(lines)


def write_page(text):
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    if BEGIN not in page or END not in page:
        raise SystemExit(f"docs/testing.md has no {BEGIN} ... {END} block in its Tests section")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + "\n" + text + "\n" + END + tail)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="update the table in docs/testing.md")
    p.add_argument("--counts-only", action="store_true", help="collect only: no times")
    args = p.parse_args(argv)
    env = dict(os.environ)
    selected = {label: collect(expr, env) for label, expr, _ in SUBSETS}
    times = {label: None for label, _, _ in SUBSETS}
    load = [os.getloadavg()[0]]
    if not args.counts_only:
        with tempfile.TemporaryDirectory() as tmp:
            # cold caches, as CI (.ci/run) starts
            env.update(NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                       NUMBAFLOW_CACHE_DIR=os.path.join(tmp, "kernels"))
            xml = os.path.join(tmp, "report.xml")
            t0 = time.perf_counter()
            r = _pytest(["-q", "-p", "no:cacheprovider", f"--junitxml={xml}", "tests"], env,
                        4 * 3600)
            wall = time.perf_counter() - t0
            load.append(os.getloadavg()[0])
            lines = r.stdout.splitlines()
            # the failures by name (the report is gone with the temp dir), then the summary
            print("\n".join(x for x in lines if x.startswith(("FAILED", "ERROR")))
                  + "\n" + (lines[-1] if lines else r.stderr[-2000:]))
            took = durations(xml)
        for label, expr, _ in SUBSETS:
            times[label] = wall if expr is None else sum(took.get(n, 0.0)
                                                         for n in selected[label])
    rows = [(label, command, len(selected[label]), times[label])
            for label, _, command in SUBSETS]
    text = table(rows)
    stamp = datetime.date.today().isoformat()
    loads = " -> ".join(f"{x:.1f}" for x in load)
    note = (f"\nCounts from collection, {stamp}." if args.counts_only else
            f"\nMeasured {stamp} with `python tools/test_times.py --write` on {os.cpu_count()} "
            f"cores, load average {loads} (before -> after the run): one run of the whole suite "
            f"on cold kernel caches, as CI runs it; a subset's time is the sum of its tests' "
            f"durations in that run (pytest's start-up and collection excluded), \"all\" is the "
            f"run's wall time. On a busy machine these are upper bounds.")
    print(text + "\n" + note)
    if args.write:
        if args.counts_only:
            # keep the measured times, update the counts
            with open(PAGE, encoding="utf-8") as f:
                old = f.read().split(BEGIN, 1)[1].split(END, 1)[0]
            for label, _, count, _ in rows:
                old = re.sub(rf"(\| {re.escape(label)} \|.*\()\d+( tests\) \|)",
                             rf"\g<1>{count}\g<2>", old)
            text = old.strip("\n")
        else:
            text = text + "\n" + textwrap.fill(note.strip(), 115)
        write_page(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
