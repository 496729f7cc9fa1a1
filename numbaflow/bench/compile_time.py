"""compile/mlp_train: the time a fresh process needs to get its first training step.

Each measurement is a new Python process (`python -c`) that imports numbaflow, builds the
training program and runs the startup program and the first main step, timing the last
three with perf_counter (the import is reported apart). The child's kernel caches are
its own temporary directories: NUMBAFLOW_CACHE_DIR (generated kernels) and
NUMBA_CACHE_DIR (numba's machine code of every `cache=True` kernel, the fixed ones in
numbaflow/kernels included). The first process finds them empty (cold: every kernel
compiles); the next ones reuse them (warm: what a user's second run costs).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import steps
from .config import Config
from .harness import Case, Row, Timing, fmt_time

WARM_TARGET = 0.6    # seconds, SPEC section 7
MARK = "NUMBAFLOW_BENCH_COMPILE "

# `import numbaflow` is timed before anything else of numbaflow is imported
CHILD = ("import sys, time\n"
         "t0 = time.perf_counter()\n"
         "import numbaflow\n"
         "t_import = time.perf_counter() - t0\n"
         "from numbaflow.bench.compile_time import child\n"
         "child(sys.argv[1], t_import)\n")


def child(model, t_import):
    """In the fresh process: build `model`'s training program, run startup and one step,
    print the times as one JSON line."""
    import numpy as np

    import numbaflow as nf
    build, batch = {"mlp": (steps.mlp_program, steps.mlp_batch),
                    "seed": (steps.seed_program, steps.seed_batch)}[model]
    feed = batch(Config())[2]
    t0 = time.perf_counter()
    main, startup, loss = build(nf)
    t1 = time.perf_counter()
    exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
    exe.run(startup, scope=scope)
    t2 = time.perf_counter()
    value, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    t3 = time.perf_counter()
    if not np.isfinite(np.asarray(value)).all():
        raise AssertionError(f"compile bench: the first {model} step gave loss {value}")
    print(MARK + json.dumps({"import": t_import, "build": t1 - t0, "startup": t2 - t1,
                             "first_step": t3 - t2, "total": t3 - t0}), flush=True)


def run_child(model, cache_dir, timeout=600):
    """One fresh process with its kernel caches under `cache_dir`; returns its times."""
    import numbaflow
    root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
    env = dict(os.environ, NUMBAFLOW_CACHE_DIR=os.path.join(cache_dir, "kernels"),
               NUMBA_CACHE_DIR=os.path.join(cache_dir, "numba"),
               PYTHONPATH=os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")]
                                                    if p]))
    proc = subprocess.run([sys.executable, "-c", CHILD, model], env=env, capture_output=True,
                          text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"compile bench child ({model}) exited with {proc.returncode}: {tail}")
    return json.loads(lines[-1][len(MARK):])


def measure_compile(model, warm_runs):
    """(cold times, [warm times...]): one process with empty caches, then `warm_runs`
    processes with the caches it left."""
    with tempfile.TemporaryDirectory(prefix="numbaflow-bench-compile-") as d:
        cold = run_child(model, d)
        warm = [run_child(model, d) for _ in range(warm_runs)]
    return cold, warm


def report(name, cfg):
    """The compile row: warm (median of the warm processes) vs cold."""
    model = cfg.compile_model
    cold, warm = measure_compile(model, max(1, cfg.compile_warm_runs))
    totals = [w["total"] for w in warm]
    t_warm = Timing(statistics.median(totals), min(totals))
    mid = sorted(warm, key=lambda w: w["total"])[len(warm) // 2]
    note = (f"warm = startup "
            f"{fmt_time(mid['startup'])} + first step {fmt_time(mid['first_step'])}; "
            f"cold first step {fmt_time(cold['first_step'])}; "
            f"import numbaflow {fmt_time(statistics.median(w['import'] for w in warm))} "
            f"warm / {fmt_time(cold['import'])} cold, not counted")
    return [Row(name, "", "warm cache", "cold cache",
                t_warm.median / cold["total"], t_warm, Timing(cold["total"], cold["total"]),
                note, {f"warm <= {WARM_TARGET:g} s": t_warm.median <= WARM_TARGET})]


def compile_case():
    """compile/mlp_train. The model is cfg.compile_model: the MLP, or with --quick the seed
    model (a cold compile costs per kernel, so a smaller MLP would not be quicker)."""
    name = "compile/mlp_train"
    return Case(name, "{compile_model} training, new process: build + startup + 1st step",
                None, report=lambda cfg: report(name, cfg), cold=True)
