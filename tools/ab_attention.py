"""A/B of the fuse_flash_attention pass on the bench GPTs: the default pipeline with the
pass (A) against the same with its flag off (B; fuse_softmax_mask still fuses the softmax
chain), same weights and feed, losses checked equal first.

    python tools/ab_attention.py                       # gpt, 1 thread (CPU time) + 2 (wall)
    python tools/ab_attention.py --model gpt_medium --rounds 6
    python tools/ab_attention.py --memory              # gpt_medium at batch 16: peak bytes
                                                       # of each plan and peak RSS (a fresh
                                                       # process per side)

Timing is bench/fusion.py's `paired`: warm-up until the segments compiled, then interleaved
rounds, the order alternating; 1 thread reads time.thread_time(), 2 threads the wall clock.
Prints the median ratio A / B per thread count.
"""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def _contender(nf, model, flag, batch_size=None, weights=None):
    from numbaflow.bench import models
    built = models.PROGRAMS[model](nf)
    bs = nf.static.BuildStrategy()
    bs.fuse_flash_attention = flag
    compiled = nf.static.CompiledProgram(built.main, build_strategy=bs)
    exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
    exe.run(built.startup, scope=scope)
    names = models.parameters(built)
    weights = weights or {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    for n in names:
        scope.find_var(n).get_tensor().set(weights[n].copy(), nf.CPUPlace())
    feed = models.batch(model, batch_size=batch_size)

    def step():
        loss, = exe.run(compiled, feed=feed, fetch_list=[built.loss], scope=scope)
        return float(np.asarray(loss).ravel()[0])
    return step, weights, compiled


def timing(model, rounds, threads):
    import numbaflow as nf
    from numbaflow.bench.fusion import paired
    nf.enable_static()
    a, w, compiled = _contender(nf, model, True)
    b, _, _ = _contender(nf, model, False, weights=w)
    la, lb = [a() for _ in range(2)], [b() for _ in range(2)]
    np.testing.assert_allclose(la, lb, rtol=1e-4)
    assert any(p.name == "fuse_flash_attention" and p.changed for p in compiled.passes)
    clock = time.thread_time if threads == 1 else time.perf_counter
    sa, sb = paired(a, b, rounds, 0.25, clock)
    ratio = statistics.median(x / y for x, y in zip(sa, sb))
    print(f"{model} {threads} thread(s): A {statistics.median(sa) * 1e3:.2f} ms, "
          f"B {statistics.median(sb) * 1e3:.2f} ms per step, A/B {ratio:.3f}", flush=True)


def memory_side(flag):
    """One side's plan peak bytes and this process's peak RSS (gpt_medium, batch 16)."""
    import numbaflow as nf
    nf.enable_static()
    step, _, compiled = _contender(nf, "gpt_medium", flag, batch_size=16)
    step()
    step()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"peak_bytes": compiled.memory_stats()["peak_bytes"], "rss": rss}))


def _child(threads, *args):
    """Run this script with `args` in a fresh process whose thread knobs are `threads`."""
    import os
    from numbaflow.executor.threads import worker_env
    return subprocess.run([sys.executable, __file__, *map(str, args)], text=True, check=True,
                          env=worker_env(os.environ, threads), stdout=subprocess.PIPE).stdout


def memory():
    got = {}
    for flag in (True, False):
        out = _child(1, "--memory-side", int(flag))
        got[flag] = json.loads(out.strip().splitlines()[-1])
    for key in ("peak_bytes", "rss"):
        print(f"gpt_medium b16 {key}: A {got[True][key] / 2**20:.0f} MiB, "
              f"B {got[False][key] / 2**20:.0f} MiB")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt", choices=("gpt", "gpt_medium"))
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--memory-side", type=int, choices=(0, 1))
    ap.add_argument("--timing-side", type=int)
    args = ap.parse_args()
    if args.memory_side is not None:
        memory_side(bool(args.memory_side))
    elif args.timing_side is not None:
        timing(args.model, args.rounds, args.timing_side)
    elif args.memory:
        memory()
    else:
        for t in args.threads:
            print(_child(t, "--model", args.model, "--rounds", args.rounds, "--timing-side", t)
                  .strip().splitlines()[-1], flush=True)
