"""What a 2-rank data-parallel MLP step spends outside its kernels (issue 13's profile).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        mpiexec -n 2 python -m numbaflow.bench.dp_overheads

(one thread per rank, as dp/mlp_scaling: two ranks with two BLAS threads each on 2 cores
only measure the oversubscription; without mpiexec it gives the 1-rank step)

Rank 0 prints, per step of the MLP 784-512-512-10 (batch 128 per rank, SGD, one place per
rank): the step, the per-run agreement collective (global batch + re-sync flag: one
2-element Allreduce), the hop to the group's communication thread (submit + result of a
no-op), and one Allreduce of the gradient bytes (2.68 MB), each the median of 200.
"""
import statistics
import time

import numpy as np


def _median_us(fn, n=200):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main():
    import numbaflow as nf
    import numbaflow.distributed as dist
    from numbaflow.distributed.collective_group import LocalGroup
    from .models import mlp_program
    world = dist.world()
    rank = dist.get_rank()
    rng = np.random.default_rng(rank)
    feed = {"x": rng.standard_normal((128, 784), dtype=np.float32),
            "y": rng.integers(0, 10, (128, 1)).astype(np.int64)}
    built = mlp_program(nf)
    main, startup, loss = built.main, built.startup, built.loss
    exe, scope = nf.static.Executor(), nf.static.Scope()
    exe.run(startup, scope=scope)
    compiled = nf.static.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=[nf.CPUPlace()])

    def step():
        exe.run(compiled, feed=feed, fetch_list=[loss], scope=scope)
    for _ in range(30):
        step()
    from numbaflow.executor.segments import wait_for_compiles
    wait_for_compiles()
    out = {"step": _median_us(step)}
    if world is not None:
        agreed = np.zeros(2, np.int64)
        out["agreement allreduce"] = _median_us(lambda: world.allreduce_sum_(agreed))
        grads = np.zeros(669706, np.float32)
        out["gradient allreduce (2.68 MB)"] = _median_us(lambda: world.allreduce_sum_(grads))
        group = LocalGroup(1, world)
        out["communication-thread hop"] = _median_us(lambda: group.submit_mpi(int).result())
    every = [out] if world is None else world.allgather_obj(out)
    if rank == 0:
        for key in out:
            print(f"{key:32s} " + "  ".join(f"rank {r}: {o[key]:9.1f} us"
                                             for r, o in enumerate(every)))


if __name__ == "__main__":
    main()
