"""The GPU compile gate: compile every GPU kernel numbaflow launches, for a real GPU,
without one.

    python -m numbaflow.gpu_check --cc 9.0 [--cc 8.0] [--counts] [--ptxas]

1. *Trace*: run the GPU kernel factories of every registered op (the op table's rows,
   their gradients, larger shapes that reach the big tiles) and whole training programs
   on `CUDAPlace(0)`, with numba-cuda's device layer replaced by host arrays and every
   kernel launch recorded instead of run: (kernel, argument types) at the real block and
   tile sizes (the simulator runs smaller ones). Nothing executes, so real-size shapes
   cost nothing; an op registered later is traced through its op-table row.
2. *Compile*: each recorded signature with `numba.cuda.compile_ptx` (NVVM from the
   numba-cuda[cu12] wheels) for each compute capability, and with `--ptxas` also
   assembled to SASS by ptxas (what the driver would do at load time).

Prints `compiled N signatures of M kernels, K failed` and exits 1 when K > 0.
`--counts` prints the instruction counts of the hot loops (BENCHMARKS.md's GPU section).
"""
import argparse
import os
import re
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

from .gpu_compile import SAME_LOWERING_FROM, assemble, compile_ptx, compile_ptxs, ptxas_path  # noqa: F401
from .gpu_counts import hot_loop_report
from .gpu_trace import (TracedArray, TraceState, compute_capability,  # noqa: F401
                                traced_device)


# ---------------------------------------------------------------- what gets traced
def _rows_dir():
    """tests/ of a source checkout (the op table's rows), or None when installed."""
    d = Path(__file__).resolve().parents[1] / "tests"
    return d if (d / "op_rows" / "__init__.py").exists() else None


def extra_cases():
    """(op, inputs, attrs) beyond the op table: several tiles and blocks, the big GEMM
    tiles, the SPEC GPU row's shapes and the MLP's products (nothing runs: size is free)."""
    rng = np.random.default_rng(0)
    u = lambda *s: rng.uniform(-1, 1, s).astype(np.float32)  # noqa: E731
    cases = [
        ("matmul_v2", {"X": u(2, 10, 17), "Y": u(17, 9)}, {}),
        ("matmul_v2", {"X": u(17, 10), "Y": u(2, 9, 17)}, {"trans_x": True, "trans_y": True}),
        ("matmul_v2", {"X": u(1024, 512), "Y": u(512, 1024)}, {}),
        ("matmul_v2", {"X": u(512, 1024), "Y": u(1024, 512)}, {"trans_x": True, "trans_y": True}),
        ("mul", {"X": u(9, 3, 6), "Y": u(18, 10)}, {}),
        ("mul", {"X": u(128, 784), "Y": u(784, 512)}, {}),
        ("mul", {"X": u(128, 512), "Y": u(512, 10)}, {}),
        ("reduce_sum", {"X": u(2, 100)}, {"dim": [1]}),
        ("reduce_mean", {"X": u(3, 5, 40)}, {"dim": [0, 1]}),
        ("softmax", {"X": u(2, 70)}, {}),
        ("transpose2", {"X": u(3, 1, 4, 5)}, {"axis": [3, 1, 0, 2]}),
        ("elementwise_add", {"X": u(4096, 4096), "Y": u(4096)}, {}),
        ("relu", {"X": u(4096, 4096)}, {}),
    ]
    i = lambda *s: rng.integers(1, 100, s).astype(np.int32)  # noqa: E731
    ints = [   # integer arithmetic (exact, a zero divisor recorded): the typed templates
        ("elementwise_div", {"X": i(64, 33), "Y": i(64, 33)}, {}),
        ("elementwise_div", {"X": i(64, 33), "Y": i(33)}, {}),
        ("elementwise_div", {"X": i(3, 4, 5), "Y": i(3, 1, 5)}, {}),
        ("elementwise_mod", {"X": i(3, 4, 5), "Y": i(3, 1, 5)}, {}),
        ("scale", {"X": i(64, 33)}, {"scale": 3.0, "bias": 1.0}),
        ("reduce_sum", {"X": i(2, 100)}, {"dim": [1]}),
        ("reduce_mean", {"X": i(3, 5, 40)}, {"dim": [0, 2]}),
    ]
    ints += [(op, {k: v.astype(np.int64) for k, v in a.items()}, at) for op, a, at in ints]
    return cases + ints + [(op, {k: v.astype(np.float64) for k, v in a.items()}, at)
                           for op, a, at in cases[:2]]


def _programs():
    """Training programs whose plans bring the fused kernels (optimizers, add+act)."""
    import numbaflow as paddle
    import numbaflow.static as static
    from numbaflow.utils import unique_name

    def mlp(opt):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), unique_name.guard():
            x = static.data("x", [None, 784])
            y = static.data("y", [None, 1], "int64")
            h = static.nn.fc(x, 512, activation="relu")
            h = static.nn.fc(h, 512, activation="relu")
            loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 10), y)
            opt.minimize(loss)
        return main, startup, {"x": np.zeros((128, 784), np.float32),
                               "y": np.zeros((128, 1), np.int64)}, loss

    def cnn():
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), unique_name.guard():
            x = static.data("x", [None, 1, 6, 6])
            y = static.data("y", [None, 1], "int64")
            h = static.nn.conv2d(x, num_filters=3, filter_size=3, padding=1)
            h = static.nn.batch_norm(h, act="relu")
            h = paddle.nn.functional.max_pool2d(h, kernel_size=2, stride=2)
            loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 4), y)
            paddle.optimizer.SGD(0.1).minimize(loss)
        return main, startup, {"x": np.zeros((2, 1, 6, 6), np.float32),
                               "y": np.zeros((2, 1), np.int64)}, loss

    yield "mlp+momentum", lambda: mlp(paddle.optimizer.Momentum(0.1, 0.9))
    yield "mlp+adam", lambda: mlp(paddle.optimizer.Adam(1e-3))
    yield "cnn+sgd", cnn


def trace_launches(rows_dir=None):
    """Record every kernel launch of the traced work. Returns (launches, problems,
    untraced ops): launches [(dispatcher, argtypes)], problems ["what: error"]."""
    from .kernels import all_op_types, get_op_def, run_op
    from .kernels.registry import COLLECTIVE, GPU_ON_HOST, GPU_REFUSES, RANDOM
    from .testing.op_test import grad_inputs
    launches, problems, traced = [], [], set()
    rng = np.random.default_rng(0)

    def attempt(label, fn):
        try:
            return fn()
        except Exception as e:      # a factory that fails here fails on a GPU too
            problems.append(f"{label}: {type(e).__name__}: {str(e)[-300:]}")
            return None

    types = set(all_op_types())
    with traced_device(launches):
        if rows_dir is not None:
            sys.path.insert(0, str(rows_dir))
            try:
                from op_rows import load_all
                from .testing.op_test import make_inputs
                cases = load_all()
            finally:
                sys.path.remove(str(rows_dir))
            for case in cases:
                opdef = get_op_def(case.op)
                if opdef.gpu is None or opdef.has(COLLECTIVE):
                    continue
                gt = case.op + "_grad"
                gdef = get_op_def(gt) if gt in types and get_op_def(gt).gpu is not None else None
                for dtype in case.dtypes:
                    arrays = make_inputs(case, dtype)
                    # a fused op also in its NUMBAFLOW_CHECK_NAN_INF variant (another kernel)
                    for check in ("0", "1") if case.op == "fused_elementwise" else ("0",):
                        with mock.patch.dict(os.environ, NUMBAFLOW_CHECK_NAN_INF=check):
                            out = attempt(f"{case.id}-{dtype}", lambda: run_op(
                                case.op, arrays, case.attrs, device="gpu"))
                    traced.add(case.op)
                    gins = out is not None and gdef and grad_inputs(gdef, arrays, out, rng)
                    if gins:
                        attempt(f"{case.id}-{dtype} (grad)",
                                lambda: run_op(gt, gins, case.attrs, device="gpu"))
                        traced.add(gt)
        for op, arrays, attrs in extra_cases():
            out = attempt(f"extra {op}", lambda: run_op(op, arrays, attrs, device="gpu"))
            gt = op + "_grad"
            if out is not None and gt in types:
                gins = grad_inputs(get_op_def(gt), arrays, out, rng)
                if gins:
                    attempt(f"extra {gt}", lambda: run_op(gt, gins, attrs, device="gpu"))
        for op in sorted(types):
            d = get_op_def(op)
            if d.has(RANDOM) and d.gpu is not None and not d.inputs:
                attempt(op, lambda: run_op(op, {}, {"shape": [3, 4], "seed": 7,
                                                    "dtype": "float32"}, device="gpu"))
                traced.add(op)
        attempt("programs", lambda: _trace_programs())
    untraced = sorted(t for t in types if get_op_def(t).gpu is not None and t not in traced
                      and not any(get_op_def(t).has(k) for k in (COLLECTIVE, GPU_REFUSES,
                                                                 GPU_ON_HOST))
                      ) if rows_dir is not None else []
    return launches, problems, untraced


def _trace_programs():
    import numbaflow as paddle
    import numbaflow.static as static
    from .kernels.tensor import creation
    with creation.fresh_seed_counter():     # the caller's random stream is left as it was
        for name, build in _programs():
            main, startup, feed, loss = build()
            scope = static.Scope()
            exe = static.Executor(paddle.CUDAPlace(0))
            exe.run(startup, scope=scope)
            for _ in range(2):
                exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def signatures(launches):
    """{dispatcher: [argtypes, ...]} without repeats, in first-launch order."""
    out = {}
    for k, sig in launches:
        sigs = out.setdefault(k, [])
        if sig not in sigs:
            sigs.append(sig)
    return out


def kernel_name(k):
    f = k.py_func
    return f"{f.__module__}.{f.__qualname__}"


# ---------------------------------------------------------------- compiling
REGISTERS_PER_BLOCK = 65536     # sm_80 and sm_90


def _block_registers(regs, threads):
    """Registers a block takes: allocated per warp, in units of 256."""
    per_warp = -(-regs * 32 // 256) * 256
    return per_warp * -(-threads // 32)


def _compile_one(task):
    """The failure lines of one (kernel, argtypes, ccs, use_ptxas) task."""
    k, sig, ccs, use_ptxas = task
    where = f"{kernel_name(k)}{tuple(str(t) for t in sig)}"
    try:
        ptxs = compile_ptxs(k, sig, ccs)
    except Exception as e:
        return [f"{where} {', '.join(f'sm_{a}{b}' for a, b in ccs)}: {_short(e)}"]
    failures = []
    for cc, ptx in zip(ccs, ptxs) if use_ptxas else ():
        try:
            regs = re.search(r"Used (\d+) registers", assemble(ptx, cc, verbose=True))
            threads = getattr(k, "nf_block_threads", 0)
            if regs and _block_registers(int(regs.group(1)), threads) > REGISTERS_PER_BLOCK:
                raise RuntimeError(f"{regs.group(1)} registers per thread x {threads} threads "
                                   f"exceed the {REGISTERS_PER_BLOCK} registers of a block: "
                                   f"the launch would fail")
        except Exception as e:
            failures.append(f"{where} sm_{cc[0]}{cc[1]}: {_short(e)}")
    return failures


def _short(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {' '.join(msg[-3:])[-400:]}"


_TASKS = []     # the forked workers' task list (inherited, not pickled)


def _compile_task(i):
    return _compile_one(_TASKS[i])


def compile_all(sigs, ccs, use_ptxas=False, log=print, jobs=1):
    """Compile every signature for every cc (in `jobs` forked processes); returns the
    failures ["kernel(argtypes) sm_XY: error"]."""
    tasks = [(k, sig, [tuple(c) for c in ccs], use_ptxas) for k, v in sigs.items() for sig in v]
    if jobs > 1 and len(tasks) > 1:
        import multiprocessing
        _TASKS[:] = tasks
        try:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                results = pool.map(_compile_task, range(len(tasks)), chunksize=4)
        finally:
            _TASKS.clear()
    else:
        results = [_compile_one(t) for t in tasks]
    failures = [f for r in results for f in r]
    for f in failures:
        log("FAILED " + f)
    return failures


# ---------------------------------------------------------------- CLI
def _cc(text):
    m = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"--cc wants MAJOR.MINOR such as 9.0, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m numbaflow.gpu_check", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cc", type=_cc, action="append",
                   help="compute capability to compile for (repeatable; default 9.0)")
    p.add_argument("--ptxas", action="store_true",
                   help="also assemble every kernel to SASS with ptxas and check that its "
                        "registers fit the largest block it is launched with")
    p.add_argument("--counts", action="store_true",
                   help="print the hot loops' instruction counts")
    p.add_argument("-j", "--jobs", type=int, default=min(4, os.cpu_count() or 1),
                   help="compile in this many processes (default: up to 4 CPUs)")
    p.add_argument("--rows", type=Path, default=None,
                   help="tests/ directory holding op_rows (default: this checkout's)")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    ccs = a.cc or [(9, 0)]
    from .config import cuda_simulator
    from .utils.cuda_check import toolkit_problem
    if cuda_simulator():
        p.error("the gate compiles for a real GPU: unset NUMBA_ENABLE_CUDASIM")
    problem = toolkit_problem()
    if problem:
        print(f"cannot compile CUDA kernels here: {problem}", file=sys.stderr)
        return 2
    t0 = time.time()
    rows = a.rows or _rows_dir()
    if rows is None:
        print("note: no op table found (tests/op_rows); tracing the built-in cases only")
    launches, problems, untraced = trace_launches(rows)
    sigs = signatures(launches)
    n_sig = sum(len(v) for v in sigs.values())
    print(f"traced {len(launches)} launches: {n_sig} signatures of {len(sigs)} kernels "
          f"({time.time() - t0:.0f} s)")
    for msg in problems:
        print("TRACE FAILED " + msg)
    for op in untraced:
        print(f"NOT TRACED {op}: registered with a GPU kernel but no op-table row reached it")
    if a.verbose:
        for k, v in sigs.items():
            for s in v:
                print(f"  {kernel_name(k)}{tuple(str(t) for t in s)}")
    failures = compile_all(sigs, ccs, a.ptxas, jobs=max(1, a.jobs))
    k_failed = len(failures) + len(problems) + len(untraced)
    ccs_s = ", ".join(f"sm_{c[0]}{c[1]}" for c in ccs)
    print(f"targets {ccs_s}{' (PTX and SASS)' if a.ptxas else ' (PTX)'}, "
          f"{time.time() - t0:.0f} s")
    print(f"compiled {n_sig} signatures of {len(sigs)} kernels, {k_failed} failed")
    if a.counts:
        print(f"hot loops (sm_{ccs[0][0]}{ccs[0][1]} PTX):")
        hot_loop_report(ccs[0])
    return 1 if k_failed else 0


if __name__ == "__main__":
    sys.exit(main())
