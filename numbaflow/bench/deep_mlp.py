"""compile/deep_mlp_{16,64,256}: what a deep program costs before it runs at full speed.

An MLP of `layers` fc layers of width 32 (relu between, softmax cross-entropy, SGD, batch
32: ~8 ops per layer) trains 50 steps in a fresh process, cold (empty kernel caches) and
warm (the caches the cold process left). Reported per op count: the time of the first 50
steps, the slowest single step after the first (a compile must never stall training),
and the steady-state step (segments compiled: `wait_for_compiles`) against the same step
written in numpy, timed side by side in the warm process.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from .harness import Case, Row, Timing, fmt_time

MARK = "NUMBAFLOW_BENCH_DEEP "
STEPS = 50
WIDTH, BATCH = 32, 32
TARGETS = {16: (10.0, 2.0), 64: (10.0, 2.0), 256: (30.0, 2.0)}   # first 50 s, slowest s
WARM_64_TARGET = 0.5
STEADY_TARGET = 0.9           # x numpy by hand

CHILD = ("import sys\n"
         "from numbaflow.bench.deep_mlp import child\n"
         "child(int(sys.argv[1]), sys.argv[2] == '1')\n")


def child(layers, steady):
    """In the fresh process: 50 steps, each timed; with `steady`, then the steady-state
    step against numpy. Prints one JSON line."""
    import numpy as np

    import numbaflow as nf
    from . import models
    from .baselines import NumpyMLPStep
    sizes = (WIDTH,) * layers + (10,)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    y = rng.integers(0, 10, (BATCH, 1)).astype(np.int64)
    t0 = time.perf_counter()
    built = models.mlp_program(nf, sizes)
    main, startup, loss = built.main, built.startup, built.loss
    exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
    exe.run(startup, scope=scope)
    build = time.perf_counter() - t0
    ops = len(main.global_block().ops)
    params = [np.array(scope.get(f"fc_{i}.{k}_0")) for i in range(layers) for k in "wb"]
    feed = {"x": x, "y": y}
    step_times = []
    for _ in range(STEPS):
        t = time.perf_counter()
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        step_times.append(time.perf_counter() - t)
    out = {"layers": layers, "ops": ops, "build": build, "first50": sum(step_times),
           "first": step_times[0], "slowest_after_first": max(step_times[1:])}
    if steady:
        from ..executor.segments import wait_for_compiles
        wait_for_compiles()
        ref = NumpyMLPStep(params, x, y, 0.1)
        nf_step = lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)  # noqa: E731
        for _ in range(20):
            nf_step()
            ref()
        samples = {"numbaflow": [], "numpy": []}
        for _ in range(15):
            for name, fn in (("numbaflow", nf_step), ("numpy", ref)):
                t = time.perf_counter()
                for _ in range(20):
                    fn()
                samples[name].append((time.perf_counter() - t) / 20)
        out["steady"] = {k: statistics.median(v) for k, v in samples.items()}
    print(MARK + json.dumps(out), flush=True)


def run_child(layers, cache_dir, steady, timeout=1800):
    import numbaflow
    root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
    env = dict(os.environ, NUMBAFLOW_CACHE_DIR=os.path.join(cache_dir, "kernels"),
               NUMBA_CACHE_DIR=os.path.join(cache_dir, "numba"),
               PYTHONPATH=os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")]
                                                    if p]))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(layers), "1" if steady else "0"],
                          env=env, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"deep MLP bench child ({layers} layers) exited with "
                           f"{proc.returncode}: {tail}")
    return json.loads(lines[-1][len(MARK):])


def report(name, layers):
    with tempfile.TemporaryDirectory(prefix="numbaflow-bench-deep-") as d:
        cold = run_child(layers, d, steady=False)
        warm = run_child(layers, d, steady=True)
    first_target, slow_target = TARGETS.get(layers, (None, 2.0))
    checks = {f"slowest step after the first <= {slow_target:g} s":
              cold["slowest_after_first"] <= slow_target}
    if first_target:
        checks[f"cold first {STEPS} steps <= {first_target:g} s"] = \
            cold["first50"] <= first_target
    if layers == 64:
        checks[f"warm first {STEPS} steps <= {WARM_64_TARGET:g} s"] = \
            warm["first50"] <= WARM_64_TARGET
    facts = (f"cold first {STEPS} steps {fmt_time(cold['first50'])}, warm "
             f"{fmt_time(warm['first50'])}; slowest step after the first: cold "
             f"{fmt_time(cold['slowest_after_first'])}, warm "
             f"{fmt_time(warm['slowest_after_first'])}; cold first step "
             f"{fmt_time(cold['first'])}, {cold['ops']} ops")
    rows = [Row(name + "/first50", f"{cold['ops']} ops, first {STEPS} steps", "warm cache",
                "cold cache", warm["first50"] / cold["first50"],
                Timing(warm["first50"], warm["first50"]),
                Timing(cold["first50"], cold["first50"]), facts, checks)]
    s = warm["steady"]
    ratio = s["numbaflow"] / s["numpy"]
    rows.append(Row(name + "/steady", f"{cold['ops']} ops, steady-state step", "numbaflow",
                    "numpy", ratio, Timing(s["numbaflow"], s["numbaflow"]),
                    Timing(s["numpy"], s["numpy"]), "",
                    {f"ratio <= {STEADY_TARGET:g}x": ratio <= STEADY_TARGET}))
    return rows


def deep_mlp_cases():
    """compile/deep_mlp_{16,64,256} (with --quick each runs a 4-layer MLP: a smoke test)."""
    out = []
    for layers in (16, 64, 256):
        name = f"compile/deep_mlp_{layers}"
        out.append(Case(name, f"{layers}-layer MLP width {WIDTH}, batch {BATCH}, SGD", None,
                        report=lambda cfg, n=name, k=layers: report(n, 4 if cfg.quick else k),
                        cold=True))
    return out
