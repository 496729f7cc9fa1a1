"""Not a test: `mpiexec -n 2 python tests/mpi/time_polled_allreduce.py [REPS]` prints the
median time of one in-place float32 sum of the MLP's gradients (784-512-512-10, 2.68 MB)
and of 4 KiB, three ways, interleaved: World.allreduce_sum_ (Iallreduce polled by the
fault watch), a blocking mpi4py Allreduce, and Iallreduce + Wait (the same algorithm
as the polled one, blocking)."""
import sys
import time

import numpy as np
from mpi4py import MPI

import numbaflow.distributed as dist

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
w = dist.world()
mlp = sum(i * o + o for i, o in ((784, 512), (512, 512), (512, 10)))
for n in (1024, mlp):
    a = np.zeros(n, np.float32)
    ways = {
        "polled (World.allreduce_sum_)": lambda: w.allreduce_sum_(a),
        "blocking Allreduce": lambda: w.comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM),
        "Iallreduce + Wait": lambda: w.comm.Iallreduce(MPI.IN_PLACE, a, op=MPI.SUM).Wait(),
    }
    times = {k: [] for k in ways}
    for i in range(20 + reps):
        for k, fn in ways.items():
            w.comm.Barrier()
            t = time.perf_counter()
            fn()
            if i >= 20:
                times[k].append(time.perf_counter() - t)
    if w.rank == 0:
        for k, v in times.items():
            print(f"{n * 4 / 1e6:6.3f} MB {k:32s} median {np.median(v) * 1e6:8.1f} us, "
                  f"min {min(v) * 1e6:8.1f} us", flush=True)
