"""Not a test: `mpiexec -n 2 python tests/mpi/time_allreduce.py` prints the median
time of one in-place float32 Allreduce of 4 KiB and 4 MiB (and a 4-array bucket)."""
import time

import numpy as np

import numbaflow.distributed as dist

w = dist.world()
for nbytes in (4 << 10, 64 << 10, 1 << 20, 4 << 20):
    a = np.ones(nbytes // 4, np.float32)
    n = 2000 if nbytes <= 64 << 10 else 200
    for _ in range(20):
        w.allreduce_sum_(a)
    times = []
    for _ in range(n):
        w.barrier()
        t = time.perf_counter()
        w.allreduce_sum_(a)
        times.append(time.perf_counter() - t)
    if w.rank == 0:
        print(f"Allreduce {nbytes // 1024:5d} KiB float32: median {np.median(times) * 1e6:8.1f} us,"
              f" min {min(times) * 1e6:8.1f} us ({n} calls)", flush=True)
parts = [np.ones(s, np.float32) for s in (1 << 18, 1 << 18, 1 << 18, 1 << 18)]
buf = np.empty(1 << 20, np.float32)
times = []
for _ in range(100):
    w.barrier()
    t = time.perf_counter()
    w.allreduce_many_(parts, buffer=buf)
    times.append(time.perf_counter() - t)
if w.rank == 0:
    print(f"allreduce_many_ 4 x 1 MiB float32: median {np.median(times) * 1e6:8.1f} us", flush=True)
