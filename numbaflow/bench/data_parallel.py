"""dp/*: data-parallel rows of SPEC section 7, measured in child processes.

dp/grad_sync     under `mpiexec -n 2`: the MLP's gradients (w, b of every layer, float32)
                 summed over both ranks (a) by numbaflow's bucketed path
                 (`LocalGroup(1, world).allreduce_` over a bucket the executor laid out
                 back to back in one pool buffer: one Allreduce, no packing), (b) by
                 one `World.allreduce_sum_` per gradient, (c) by one raw mpi4py
                 `comm.Allreduce(IN_PLACE, flat)` of the same bytes. The three alternate,
                 each call after a barrier; times are rank 0's, as in PERF_ANCHORS W6.
dp/<m>_scaling   weak scaling of the MLP, CNN, GPT, ResNet-20 and GPT d512 training steps of
                 models.py (batch per rank fixed, 1 thread per rank): one plain process vs
                 `mpiexec -n 2`, each running the same `CompiledProgram.with_data_parallel`
                 on one place; the two alternate for 3 rounds and the spread of the
                 efficiency is reported. For the MLP a hand-written numpy step (+ one
                 mpi4py Allreduce of the flat gradient on 2 ranks) in the same children is
                 the baseline of PERF_ANCHORS W7. Steps are timed one by one after a warm-up; the slower rank's counts.

A child prints one `MARK` + JSON line (rank 0); `report(cfg)` runs the children and turns
those lines into rows, like compile/mlp_train.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .baselines import mlp_forward
from .models import mlp_program
from .harness import Case, Row, Skip, Timing, fmt_time

MARK = "NUMBAFLOW_BENCH_DP "
SYNC_TARGET = 1.2           # (a) / (c), SPEC section 7
EFFICIENCY_TARGET = 0.90    # t(1 rank) / t(2 ranks), SPEC section 7
ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def settings(cfg):
    """Sizes and sample counts of both rows; --quick shrinks the MLP and the counts. A full
    run warms up >= 10 steps (plans compile their segments after 8 runs); --quick's 7 runs
    of a child's plan stay op by op: no rank pays a segment compile (the other rows' quick)."""
    if cfg.quick:
        return {"sizes": [64, 64, 64, 10], "batch": cfg.mlp_batch, "sync_reps": 30,
                "warmup": 1, "steps": 2, "timeout": 120, "rounds": 1}
    return {"sizes": [784, 512, 512, 10], "batch": cfg.mlp_batch, "sync_reps": 400,
            "warmup": 30, "steps": 300, "timeout": 600, "rounds": 5}


def grad_shapes(sizes):
    """[(in, out), (out,), ...]: the gradients of a stack of fc layers."""
    shapes = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        shapes += [(i, o), (o,)]
    return shapes


# ---------------------------------------------------------------- children
def grad_sync_worker(sizes, reps, warmup=20):
    """Under mpiexec -n 2: time (a), (b), (c) alternately; rank 0 returns the result."""
    from mpi4py import MPI

    import numbaflow.distributed as dist
    from numbaflow.distributed.collective_group import LocalGroup
    from numbaflow.kernels.parallel.collective import flat_view

    world = dist.world()
    if world is None or world.size != 2:
        raise RuntimeError(f"dp/grad_sync needs mpiexec -n 2, got world {world}")
    shapes = grad_shapes(sizes)
    grads = [np.full(s, world.rank + 1, np.float32) for s in shapes]
    total = sum(g.size for g in grads)
    flat = np.full(total, world.rank + 1, np.float32)
    # the bucket as the executor lays it out: views of one uint8 pool buffer
    pool = np.empty(total * 4, np.uint8)
    bucket, offset = [], 0
    for s in shapes:
        n = int(np.prod(s)) * 4
        bucket.append(pool[offset:offset + n].view(np.float32).reshape(s))
        offset += n
    for b in bucket:
        b[...] = world.rank + 1
    bucket_flat = flat_view(bucket)
    assert bucket_flat is not None
    group = LocalGroup(1, world)
    for g in grads:     # the sums must be right before their times mean anything
        world.allreduce_sum_(g)
    group.allreduce_(0, bucket, 0, bucket_flat)
    world.comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
    ok = all(np.all(g == 3) for g in grads + bucket) and np.all(flat == 3)
    if not ok:
        raise AssertionError("dp/grad_sync: an allreduce gave a wrong sum")
    for a in grads + bucket + [flat]:
        a[...] = 0          # 0 + 0 stays 0: no overflow whatever the repetitions

    def bucketed():
        group.allreduce_(0, bucket, 0, bucket_flat)

    def per_gradient():
        for g in grads:
            world.allreduce_sum_(g)

    def raw():
        world.comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)

    fns = {"bucketed": bucketed, "per_gradient": per_gradient, "raw": raw}
    times = {k: [] for k in fns}
    for i in range(warmup + reps):
        for name, fn in fns.items():
            world.barrier()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if i >= warmup:
                times[name].append(dt)
    if world.rank == 0:
        out = {k: vars(Timing.of(v)) for k, v in times.items()}
        out.update(bytes=int(flat.nbytes), arrays=len(grads), reps=reps)
        return out


class NumpyDPStep:
    """The numpy MLP step of PERF_ANCHORS W7: forward, backward into one flat gradient
    buffer, one in-place Allreduce of it when `comm` is given (R ranks: the local
    gradient is scaled by 1/R so the sum is the global batch's mean), SGD."""

    def __init__(self, params, x, y, lr, comm=None):
        self.comm = comm
        ranks = 1 if comm is None else comm.Get_size()
        self.params = [p.copy() for p in params]   # [w0, b0, w1, b1, ...]
        self.flat = np.zeros(sum(p.size for p in params), np.float32)
        self.grads, i = [], 0
        for p in params:
            self.grads.append(self.flat[i:i + p.size].reshape(p.shape))
            i += p.size
        self.x, self.y = x, y.reshape(-1)
        self.rows = np.arange(len(x))
        self.lr = np.float32(lr)
        self.scale = np.float32(1.0 / (len(x) * ranks))

    def __call__(self):
        p, g, rows, y = self.params, self.grads, self.rows, self.y
        inputs, pre, prob, loss = mlp_forward(p, self.x, rows, y)
        grad = prob
        grad[rows, y] -= 1
        grad *= self.scale
        for layer in range(len(pre) - 1, -1, -1):
            np.matmul(inputs[layer].T, grad, out=g[2 * layer])
            np.sum(grad, axis=0, out=g[2 * layer + 1])
            if layer:
                grad = grad @ p[2 * layer].T
                grad *= pre[layer - 1] > 0
        if self.comm is not None:
            from mpi4py import MPI
            self.comm.Allreduce(MPI.IN_PLACE, self.flat, op=MPI.SUM)
        for w, gw in zip(p, g):
            w -= self.lr * gw
        return loss


def scaling_worker(model, sizes, batch, warmup, steps):
    """One rank of dp/<model>_scaling (plain process: 1 rank; mpiexec -n 2: 2 ranks).

    The MLP alternates numbaflow and numpy steps in blocks of 10 (the CNN and GPT have no
    numpy twin: numbaflow only), each step timed alone; rank 0 returns the slower rank's
    median, min, IQR and count per step of each."""
    import numbaflow as nf
    import numbaflow.distributed as dist
    from . import models
    nf.enable_static()
    world = dist.world()
    rank, size = dist.get_rank(), dist.get_world_size()
    if model == "mlp":
        rng = np.random.default_rng(10 + rank)      # each rank its own shard
        x = rng.standard_normal((batch, sizes[0]), dtype=np.float32)
        y = rng.integers(0, sizes[-1], size=(batch, 1), dtype=np.int64)
        built, feed = mlp_program(nf, sizes), {"x": x, "y": y}
    else:
        built, feed = models.PROGRAMS[model](nf), models.batch(model, seed=10 + rank)
    main, startup, loss = built.main, built.startup, built.loss
    exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
    exe.run(startup, scope=scope)
    compiled = nf.static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=[nf.CPUPlace()])

    def nf_step():
        value = exe.run(compiled, feed=feed, fetch_list=[loss], scope=scope)[0]
        if built.scheduler is not None:
            built.scheduler.step()
        return float(np.asarray(value).ravel()[0])

    steppers = {"numbaflow": nf_step}
    if model == "mlp":
        names = [f"fc_{i}.{k}_0" for i in range(len(sizes) - 1) for k in ("w", "b")]
        params = [np.array(scope.get(n)) for n in names]
        if world is not None:   # numbaflow's first run broadcasts rank 0's; numpy starts alike
            for p in params:
                world.bcast_(p, root=0)
        steppers["numpy"] = NumpyDPStep(params, x, y, 0.1, None if world is None else world.comm)
        for i in range(2):      # the same first losses: both compute the same step
            a, b = nf_step(), float(steppers["numpy"]())
            if not (np.isfinite(a) and abs(a - b) <= 1e-4 * abs(b) + 1e-5):
                raise AssertionError(f"dp/mlp_scaling rank {rank}: step {i} loss numbaflow {a} "
                                     f"vs numpy {b}")
    for _ in range(warmup):
        for fn in steppers.values():
            fn()
    from numbaflow.executor.segments import wait_for_compiles
    wait_for_compiles()     # the segments compile in the background: time the steady state
    for fn in steppers.values():
        fn()
    times = {k: [] for k in steppers}
    block = 10
    for start in range(0, steps, block):
        for name, fn in steppers.items():
            for _ in range(min(block, steps - start)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    last = nf_step()
    if not np.isfinite(last):
        raise AssertionError(f"dp/{model}_scaling rank {rank}: loss {last} after training")
    mine = {k: vars(Timing.of(v)) for k, v in times.items()}
    every = [mine] if world is None else world.allgather_obj(mine)
    if rank == 0:
        slow = {k: max((m[k] for m in every), key=lambda t: t["median"]) for k in mine}
        slow.update(ranks=size, steps=steps, loss=last)
        return slow


# ---------------------------------------------------------------- parent
def mpiexec():
    """The mpich wheel's launcher next to this Python."""
    path = Path(sys.executable).with_name("mpiexec")
    if not path.exists():
        raise Skip(f"no mpiexec next to {sys.executable}")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise Skip("mpi4py is not installed") from None
    return str(path)


def run_child(args, ranks, timeout, threads_one=True):
    """`python -m numbaflow.bench.data_parallel ARGS` (mpiexec -n 2 when ranks == 2);
    returns rank 0's JSON. The children share this process's kernel cache directories."""
    import numbaflow
    root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("CPU_NUM", None)
    if threads_one:
        env.update(ONE_THREAD)
    cmd = [sys.executable, "-m", "numbaflow.bench.data_parallel", json.dumps(args)]
    if ranks > 1:
        cmd = [mpiexec(), "-n", str(ranks)] + cmd
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"dp bench child ({args['row']}, {ranks} ranks) exited with "
                           f"{proc.returncode}: {tail}")
    return json.loads(lines[-1][len(MARK):])


_QUICK_JOB = {}     # --quick: one mpiexec job measures dp/grad_sync and dp/mlp_scaling's 2 ranks


def _sync_args(s):
    return {"row": "grad_sync", "sizes": s["sizes"], "reps": s["sync_reps"]}


def _quick_job(cfg):
    """{"grad_sync": ..., "scaling": ...} of one `mpiexec -n 2` for both quick dp rows: a
    job's two ranks cost ~5 s of CPU to start (numba, numbaflow, MPI), more than its work."""
    s = settings(cfg)
    key = json.dumps(s)
    if key not in _QUICK_JOB:
        _QUICK_JOB[key] = run_child({"row": "both", "grad_sync": _sync_args(s),
                                     "scaling": _scaling_args("mlp", s)}, 2, s["timeout"])
    return _QUICK_JOB[key]


def grad_sync_report(name, cfg):
    """Rows (a) vs (c) and (b) vs (a)."""
    s = settings(cfg)
    r = _quick_job(cfg)["grad_sync"] if cfg.quick else run_child(_sync_args(s), 2, s["timeout"])
    a, b, c = (Timing(**r[k]) for k in ("bucketed", "per_gradient", "raw"))
    ratio = a.median / c.median
    size = f"{r['arrays']} gradients, {r['bytes'] / 1e6:.2f} MB f32, {r['reps']} reps each"
    return [Row(name, "", "bucketed LocalGroup.allreduce_", "mpi4py Allreduce flat", ratio, a, c,
                f"{size}; rank 0, barrier before each call",
                {f"ratio <= {SYNC_TARGET:g}x": ratio <= SYNC_TARGET}),
            Row(name, "", f"per-gradient allreduce_sum_ x{r['arrays']}",
                "bucketed LocalGroup.allreduce_", b.median / a.median, b, a,
                f"bucketing gain {b.median / a.median:.2f}x (anchor 3.8x: 100 x 4 KiB)")]


def _scaling_args(model, s):
    """A scaling child's JSON argument."""
    # the GPT's step takes ~17x the MLP's: fewer of them (still >= 10 steps after the 8
    # runs that compile a plan's segments); the CNN's ~1 s of steps per child, as the MLP's
    # (30 steps, 0.15 s, let one hiccup of the machine move a round by 10%)
    # issue 27's real sizes take 0.6 s (ResNet-20) and 3 s (GPT d512) a step at 1 thread:
    # a few steps after the 9 runs that compile the segments, in 3 rounds
    steps = {"mlp": (s["warmup"], s["steps"]), "cnn": (s["warmup"], s["steps"] * 2 // 3),
             "gpt": (12, 30), "resnet20": (10, 8), "gpt_medium": (9, 4)}
    warmup, n = steps[model]
    return {"row": "scaling", "model": model, "sizes": s["sizes"], "batch": s["batch"],
            "warmup": warmup, "steps": n}


def scaling_report(name, model, cfg):
    """Rows: numbaflow 2 ranks vs 1 rank (and for the MLP numpy + 1 Allreduce, 2 ranks vs 1);
    ratio = t2 / t1 per step, the efficiency t1 / t2 in the note. The 1-rank and 2-rank
    children alternate for `rounds` rounds (the spread of the efficiency over rounds is
    reported: on 2 cores two ranks leave no slack for background work); times are the
    median round's."""
    if cfg.quick and model != "mlp":
        raise Skip("--quick runs dp/mlp_scaling only (drop --quick for the CNN and GPT)")
    s = settings(cfg)
    args = _scaling_args(model, s)
    big = model in ("resnet20", "gpt_medium")
    timeout = s["timeout"] * (4 if big else 1)
    if cfg.quick:   # one round; its 2 ranks ran in dp/grad_sync's job
        rounds = [(run_child(args, 1, timeout), _quick_job(cfg)["scaling"])]
    else:
        rounds = [(run_child(args, 1, timeout), run_child(args, 2, timeout))
                  for _ in range(min(s["rounds"], 3) if big else s["rounds"])]
    rows = []
    for key in rounds[0][0]:
        if key not in ("numbaflow", "numpy"):
            continue
        effs = sorted((one[key]["median"] / two[key]["median"], i)
                      for i, (one, two) in enumerate(rounds))
        eff, mid = effs[len(effs) // 2]
        one, two = rounds[mid]
        t1, t2 = Timing(**one[key]), Timing(**two[key])
        if key == "numbaflow":
            subject, base, checks = "2 ranks (mpiexec)", "1 rank", \
                {f"efficiency >= {EFFICIENCY_TARGET:g}": eff >= EFFICIENCY_TARGET}
        else:
            subject, base, checks = "numpy+1 Allreduce, 2 ranks", "numpy, 1 rank", {}
        spread = ", ".join(f"{e:.3g}" for e, _ in effs)
        rows.append(Row(name, "", subject, base, t2.median / t1.median, t2, t1,
                        f"efficiency t1/t2 = {eff:.3g} (rounds: {spread}); per step "
                        f"1 rank {fmt_time(t1.median)}, 2 ranks {fmt_time(t2.median)} "
                        f"(slower rank), {args['steps']} steps after {args['warmup']}"
                        + ("; anchor 0.81" if key == "numpy" else ""), checks))
    return rows


def dp_cases():
    """dp/grad_sync and dp/{mlp,cnn,gpt,resnet20,gpt_medium}_scaling (measured in mpiexec
    children)."""
    what_sync = "MLP gradients (w, b of 3 fc, f32) summed over 2 ranks"
    cases = [Case("dp/grad_sync", what_sync, None,
                  report=lambda cfg: grad_sync_report("dp/grad_sync", cfg))]
    for model, what in (("mlp", "MLP step, batch {mlp_batch}/rank"),
                        ("cnn", "CNN step, batch 64/rank"), ("gpt", "GPT step, batch 32/rank"),
                        ("resnet20", "ResNet-20 step, batch 64/rank"),
                        ("gpt_medium", "GPT d512 step, batch 8/rank")):
        name = f"dp/{model}_scaling"
        cases.append(Case(name, what + ", 1 thread/rank, 2 ranks vs 1", None,
                          report=lambda cfg, n=name, m=model: scaling_report(n, m, cfg)))
    return cases


def main(argv):
    """Child entry point: one JSON argument naming the row and its settings."""
    args = json.loads(argv[0])
    rows = {"grad_sync": lambda a: grad_sync_worker(a["sizes"], a["reps"]),
            "scaling": lambda a: scaling_worker(a["model"], a["sizes"], a["batch"],
                                                a["warmup"], a["steps"])}
    if args["row"] == "both":       # --quick: both rows in one job, one after the other
        out = {row: rows[row](args[row]) for row in rows}
        out = None if None in out.values() else out
    elif args["row"] in rows:
        out = rows[args["row"]](args)
    else:
        raise ValueError(f"unknown dp bench row {args['row']!r}; expected grad_sync, "
                         f"scaling or both")
    if out is not None:     # rank 0
        print(MARK + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
