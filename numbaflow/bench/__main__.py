"""`numbaflow-bench`: kernel micro-benchmarks and model steps against their baselines.

    numbaflow-bench --quick                 # smoke test (about 30 s of CPU on warm caches)
    numbaflow-bench --only models/ --peer-python jax=~/jax/bin/python --peer-python \\
        torch=~/torch/bin/python --peer-python paddle=~/paddle/bin/python
    numbaflow-bench --json run.json         # also save the record
    numbaflow-bench --load run.json --write-md BENCHMARKS.md    # regenerate the tables
    numbaflow-bench --load new.json --compare old.json          # exit 1 on a regression

Every ratio is numbaflow's time divided by the baseline's, both measured side by side in
this one run (below 1.00x numbaflow is faster); each side's median, min, IQR and sample
count are shown. compile/* rows compile into empty caches in fresh processes (minutes): they
run only when asked for (--cold, or named with --only).
"""
import argparse
import json
import os
import sys
import traceback

from . import report
from .harness import Row, Skip, measure, plans_stay_cold, rows_for
from .progress import ProgressLines

EXIT_FAILED, EXIT_USAGE, EXIT_MISSED, EXIT_REGRESSED = 1, 2, 3, 4


def _positive_int(flag):
    """An argparse type: an int >= 1 (0 would time empty arrays; < 0 fails after the run)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number >= 1, got {text!r}")
        return value
    return parse


def parse_args(argv=None):
    """Parse the command line (``argv=None`` reads ``sys.argv``)."""
    p = argparse.ArgumentParser(prog="numbaflow-bench", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="small sizes, few samples, no verdicts: a smoke test")
    p.add_argument("--only", metavar="NAME", action="append",
                   help="run the case named NAME, or else the cases whose name contains NAME "
                        "(repeatable)")
    p.add_argument("--cold", action="store_true",
                   help="also run the cold-cache compile/* cases (fresh processes, minutes)")
    p.add_argument("--list", action="store_true", help="list the case names and exit")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.add_argument("--size", type=_positive_int("--size"),
                   help="elementwise arrays are SIZE x SIZE (default 2048)")
    p.add_argument("--repeat", type=_positive_int("--repeat"),
                   help="samples per candidate (default 15, quick 3)")
    p.add_argument("--peer-python", metavar="NAME=PYTHON", action="append", default=[],
                   help="models/*: run peer NAME (jax, torch, paddle) with this interpreter "
                        "(its own venv); repeatable")
    p.add_argument("--peer-file", metavar="FILE",
                   help='models/*: a JSON file {"jax": "/path/python", ...} (same as '
                        "--peer-python; the command line wins)")
    p.add_argument("--threads", type=int,
                   help="models/*: the threads of each worker, numbaflow's and the peers' "
                        "(default: this machine's thread budget)")
    p.add_argument("--json", metavar="FILE", help="also write the run's record to FILE")
    p.add_argument("--load", metavar="FILE",
                   help="do not measure: report the record in FILE (from --json)")
    p.add_argument("--compare", metavar="OLD",
                   help=f"compare with the record OLD; exit {EXIT_REGRESSED} when a "
                        "numbaflow time grew by more than --threshold")
    p.add_argument("--threshold", type=float, default=0.10,
                   help="--compare: the slowdown that counts as a regression (default 0.10)")
    p.add_argument("--check", action="store_true",
                   help=f"exit {EXIT_MISSED} when a row misses its target")
    p.add_argument("--write-md", metavar="FILE",
                   help="replace the generated section of FILE (BENCHMARKS.md) with this run")
    return p.parse_args(argv)


def peer_pythons(args):
    """{framework: interpreter} from --peer-file and --peer-python (which wins)."""
    out = {}
    if args.peer_file:
        with open(args.peer_file, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict):
            raise ValueError(f"--peer-file {args.peer_file}: expected a JSON object "
                             f'{{"jax": "/path/to/python", ...}}, got {type(data).__name__}')
        out.update(data)
    for item in args.peer_python:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--peer-python {item!r}: expected NAME=PYTHON, e.g. "
                             "jax=/opt/jax/bin/python")
        out[name] = path
    from .model_rows import PEER_FRAMEWORKS
    for name, path in out.items():
        if name not in PEER_FRAMEWORKS:
            raise ValueError(f"peer {name!r}: expected one of {', '.join(PEER_FRAMEWORKS)}")
        path = os.path.expanduser(path)
        if not os.access(path, os.X_OK):
            raise ValueError(f"peer {name}: {path} is not an executable interpreter; give "
                             f"the python of the venv where {name} is installed")
        out[name] = path
    return out


def _config(args):
    from ..executor import threads
    from .cases import Config, quick_config
    cfg = quick_config() if args.quick else Config()
    if args.size:
        cfg.size = args.size
    if args.repeat:
        cfg.repeat = args.repeat
    cfg.peer_python = peer_pythons(args)
    cfg.threads = args.threads or threads.budget()
    return cfg


def run_case(case, cfg):
    """Build, check and time one case; return its report rows and whether it failed."""
    with plans_stay_cold(cfg.quick):
        return _run_case(case, cfg)


def _run_case(case, cfg):
    what = case.what.format(**vars(cfg))
    try:
        if case.report is not None:     # the case measures itself (fresh processes)
            rows = case.report(cfg)
            for row in rows:
                row.what = what
            return rows, any(r.failed for r in rows)
        candidates = case.build(cfg)
    except Skip as e:
        return [Row(case.name, what, note=f"skipped: {e}")], False
    except Exception as e:  # a broken case is reported and fails the run, the rest still run
        traceback.print_exc(file=sys.stderr)
        message = str(e).splitlines()[0] if str(e) else ""
        return [Row(case.name, what, note=f"ERROR {type(e).__name__}: {message}"[:160])], True
    timings = measure(candidates, cfg.repeat, cfg.min_time, hot=not cfg.quick)
    rows = rows_for(case, candidates, timings)
    for row in rows:
        row.what = what
    return rows, False


def select(cases, only, cold):
    """The cases to run: those matching --only (all without it): a NAME that is a case's whole
    name selects that case, any other NAME every case containing it; cold-cache cases only
    when --cold or when --only names them."""
    if only:
        whole = {c.name for c in cases}
        return [c for c in cases if any(s == c.name if s in whole else s in c.name for s in only)
                and (cold or not c.cold or any(s.startswith("compile") or s == c.name
                                               for s in only))]
    return [c for c in cases if cold or not c.cold]


# numpy's matmul and numba's np.dot (scipy's BLAS) use two OpenBLAS builds, each with
# its own worker threads, which spin for ~0.1 s after a call. Measured interleaved in one
# process on 2 cores, each contender's spinning workers then halve the other's speed
# (MLP step: numpy 6.3 ms instead of 2.9). A short spin makes each contender measure
# as it does alone; it must be set before numpy loads OpenBLAS, hence the re-exec.
BLAS_ENV = {"OPENBLAS_THREAD_TIMEOUT": "4"}


def _reexec_with_blas_env(argv):
    """From the command line (argv None), run again in a child with BLAS_ENV set."""
    missing = {k: v for k, v in BLAS_ENV.items() if k not in os.environ}
    if argv is not None or not missing or os.environ.get("NUMBAFLOW_BENCH_CHILD"):
        return None
    env = dict(os.environ, NUMBAFLOW_BENCH_CHILD="1", **missing)
    import subprocess
    return subprocess.call([sys.executable, "-m", "numbaflow.bench", *sys.argv[1:]], env=env)


def _measure(args):
    """(rows, machine, quick, failed) of a fresh run, or None after --list."""
    from .cases import all_cases
    cases = select(all_cases(), args.only, args.cold)
    if args.list:
        print("\n".join(c.name for c in cases))
        return None
    if not cases:
        raise LookupError(f"no case matches {args.only}; try --list (compile/* need --cold)")
    cfg = _config(args)
    machine = report.machine_facts()
    print("\n".join(report.header(machine, cfg.quick)), flush=True)
    rows, failed = [], False
    with ProgressLines(sys.stderr) as progress:     # warnings never inside a progress line
        for case in cases:
            with progress.case(case.name):
                case_rows, case_failed = run_case(case, cfg)
            rows += case_rows
            failed |= case_failed
    machine["load_after"] = list(os.getloadavg())
    return rows, machine, cfg.quick, failed


def main(argv=None):
    """Run (or --load) the cases, print the table; the exit status says what went wrong:
    1 a case failed, 2 usage, 3 a target missed (--check), 4 a regression (--compare)."""
    rc = _reexec_with_blas_env(argv)
    if rc is not None:
        return rc
    args = parse_args(argv)
    try:
        if args.check and args.quick:
            raise ValueError("--check judges targets, which --quick's small sizes and few "
                             "samples cannot back; drop --quick")
        if args.load:
            rows, machine, quick = report.load(args.load)
            failed = any(r.failed for r in rows)
            print("\n".join(report.header(machine, quick)))
        else:
            measured = _measure(args)
            if measured is None:
                return 0
            rows, machine, quick, failed = measured
        old = report.load(args.compare)[0] if args.compare else None
        if args.check and quick:
            raise ValueError(f"--check: {args.load} is a --quick record, whose small sizes "
                             "and few samples cannot back a verdict; load a full run")
    except (ValueError, LookupError, OSError) as e:
        print(f"numbaflow-bench: {e}", file=sys.stderr)
        return EXIT_USAGE
    print("ratio = numbaflow / baseline, median of side-by-side samples (below 1.00x "
          "numbaflow is faster); IQR in % of the median")
    print(report.format_markdown(rows, quick) if args.markdown else
          report.format_text(rows, quick))
    if machine.get("load_after") and not args.load:
        print(f"load average after the run: {' '.join(f'{x:.2f}' for x in machine['load_after'])}"
              + (f"\n{report.load_warning(machine)}" if report.load_warning(machine) else ""))
    if args.json:
        report.dump(args.json, rows, machine, quick)
    if args.write_md:
        report.write_md(args.write_md, rows, machine, quick)
    if failed:
        return EXIT_FAILED
    if old is not None:
        pairs, regressed = report.compare(rows, old, args.threshold)
        print(f"\nagainst {args.compare} (regression: numbaflow slower by more than "
              f"{args.threshold:.0%}):")
        print(report.format_compare(pairs, args.threshold))
        if regressed:
            return EXIT_REGRESSED
    if args.check and any(not ok for r in rows for ok in r.checks.values()):
        return EXIT_MISSED
    return 0


if __name__ == "__main__":
    sys.exit(main())
