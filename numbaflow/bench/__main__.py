"""`numbaflow-bench`: kernel micro-benchmarks and model steps against their baselines.

    numbaflow-bench                    # every case
    numbaflow-bench --only model/      # cases whose name contains "model/"
    numbaflow-bench --quick --markdown # small sizes, few samples, a markdown table

Every ratio is numbaflow's median time divided by the baseline's, both measured side by
side in this one run (below 1.00x numbaflow is faster). Times are per call or per step;
compile/* rows time fresh processes (warm kernel cache vs cold).
"""
import argparse
import os
import platform
import sys
import traceback

from . import peers
from .harness import Row, Skip, format_table, measure, rows_for


def parse_args(argv=None):
    """Parse the command line (``argv=None`` reads ``sys.argv``)."""
    p = argparse.ArgumentParser(prog="numbaflow-bench", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes and few samples (smoke test)")
    p.add_argument("--only", metavar="NAME", action="append",
                   help="run the cases whose name contains NAME (repeatable)")
    p.add_argument("--list", action="store_true", help="list the case names and exit")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.add_argument("--size", type=int, help="elementwise arrays are SIZE x SIZE (default 2048)")
    p.add_argument("--repeat", type=int, help="samples per candidate (default 15, quick 3)")
    p.add_argument("--no-peers", action="store_true", help="leave out torch / jax / paddle")
    return p.parse_args(argv)


def _config(args):
    from .cases import Config, quick_config
    cfg = quick_config() if args.quick else Config()
    if args.size:
        cfg.size = args.size
    if args.repeat:
        cfg.repeat = args.repeat
    cfg.peers = not args.no_peers
    return cfg


def _versions():
    import numba
    import numpy
    try:
        from importlib.metadata import version
        nf = version("numbaflow")
    except Exception:  # running from a source tree that is not installed
        nf = "source tree"
    return (f"numbaflow {nf}, numpy {numpy.__version__}, numba {numba.__version__} "
            f"({numba.config.NUMBA_NUM_THREADS} threads), python {platform.python_version()}, "
            f"{os.cpu_count()} cpus")


def run_case(case, cfg):
    """Build, check and time one case; return its report rows and whether it failed."""
    what = case.what.format(**vars(cfg))
    try:
        if case.report is not None:     # the case measures itself (fresh processes)
            rows = case.report(cfg)
            for row in rows:
                row.what = what
            return rows, False
        candidates = case.build(cfg)
    except Skip as e:
        return [Row(case.name, what, note=f"skipped: {e}")], False
    except Exception as e:  # a broken case is reported and fails the run, the rest still run
        traceback.print_exc(file=sys.stderr)
        message = str(e).splitlines()[0] if str(e) else ""
        return [Row(case.name, what, note=f"ERROR {type(e).__name__}: {message}"[:100])], True
    timings = measure(candidates, cfg.repeat, cfg.min_time)
    rows = rows_for(case, candidates, timings)
    for row in rows:
        row.what = what
    return rows, False


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


def main(argv=None):
    """Run the selected cases and print the table; non-zero if any case failed."""
    rc = _reexec_with_blas_env(argv)
    if rc is not None:
        return rc
    args = parse_args(argv)
    from .cases import all_cases
    cases = [c for c in all_cases() if not args.only or any(s in c.name for s in args.only)]
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0
    if not cases:
        print(f"numbaflow-bench: no case matches {args.only}; try --list", file=sys.stderr)
        return 2
    cfg = _config(args)
    print(f"numbaflow-bench: {_versions()}{'; quick' if cfg.quick else ''}")
    missing = [p for p in peers.PEERS if not peers.installed(p)]
    if cfg.peers and missing:
        print(f"peers skipped (not installed): {', '.join(missing)}")
    rows, failed = [], False
    for case in cases:
        print(f"  running {case.name} ...", file=sys.stderr, flush=True)
        case_rows, case_failed = run_case(case, cfg)
        rows += case_rows
        failed |= case_failed
    print("ratio = numbaflow median / baseline median (below 1.00x: numbaflow is faster)")
    print(format_table(rows, markdown=args.markdown))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
