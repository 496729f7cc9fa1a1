"""Run under `mpiexec -n 2 python abort.py <mode>`: rank 1 raises while rank 0 waits
in a collective; the job must end with a non-zero status instead of hanging.

modes: barrier, allreduce, thread (rank 1's exception is in a worker thread),
early (rank 1 raises before MPI was ever used; rank 0 waits in a barrier)."""
import sys
import threading
import time

import numpy as np

import numbaflow.distributed as dist
from numbaflow.distributed.mpi import env_rank

mode = sys.argv[1]
rank = env_rank()
if mode == "early" and rank == 1:
    raise RuntimeError("rank 1 failed before MPI started")
w = dist.world()
assert w.rank == rank
dist.barrier()
if rank == 1:
    time.sleep(0.5)      # rank 0 is waiting in its collective by now
    if mode == "thread":
        t = threading.Thread(target=lambda: 1 / 0, name="worker-1")
        t.start()
        t.join()
        time.sleep(30)   # the thread's failure must end the job, not this sleep
    raise RuntimeError(f"rank 1 failed ({mode})")
if mode == "allreduce":
    w.allreduce_sum_(np.ones(1000, np.float32))
else:
    dist.barrier()
print("rank 0 was not aborted", flush=True)
