"""Run under `mpiexec -n 2`: rank/size, barrier, the World collectives and init(comm).
Prints one `OK <check>` line per check on rank 0; any failure raises (and aborts the job)."""
import sys

import numpy as np

import numbaflow.distributed as dist

assert "mpi4py" not in sys.modules, "importing numbaflow.distributed must not start MPI"
assert not dist.is_initialized()
w = dist.world()
assert dist.is_initialized()
rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2 and rank in (0, 1) and (w.rank, w.size) == (rank, size), (rank, size, w)
ranks = w.allgather_obj(rank)
assert ranks == [0, 1], ranks
dist.barrier()


def say(what):
    if rank == 0:
        print("OK", what, flush=True)


say("rank_size")

# allreduce_sum_: each rank's input differs; the result is the sum of every rank's input.
for dtype in (np.float32, np.float64, np.int64):
    def inputs(r, dtype=dtype):
        return (np.arange(12).reshape(3, 4) * (r + 1) + r * 0.25).astype(dtype)
    a = inputs(rank)
    got = w.allreduce_sum_(a)
    assert got is a
    np.testing.assert_array_equal(a, inputs(0) + inputs(1))
    assert a.dtype == dtype
    say(f"allreduce_sum_ {np.dtype(dtype).name}")

# 0-d and empty arrays
s = np.array(rank + 1.5, np.float32)
w.allreduce_sum_(s)
assert float(s) == 1.5 + 2.5
w.allreduce_sum_(np.zeros((0, 3), np.float32))
say("allreduce_sum_ 0-d and empty")

# the same inputs give bitwise the same sums on every call and on every rank
rng = np.random.default_rng(rank)
x = rng.standard_normal(300_000).astype(np.float32)
sums = []
for _ in range(3):
    y = x.copy()
    w.allreduce_sum_(y)
    sums.append(y)
assert all(np.array_equal(sums[0], s) for s in sums)
every = w.allgather_obj(sums[0].tobytes())
assert every[0] == every[1]
say("allreduce_sum_ reproducible")

# allreduce_many_: three shapes in one call, with and without a caller buffer
def many(r):
    return [np.full((2, 3), r + 1.0, np.float32),
            np.arange(5, dtype=np.float32) * (r + 1),
            np.array([[r - 4.0]], np.float32)]
for buffer in (None, np.empty(40, np.float32)):
    arrs = many(rank)
    ids = [id(a) for a in arrs]
    w.allreduce_many_(arrs, buffer=buffer)
    assert [id(a) for a in arrs] == ids
    for got, a0, a1 in zip(arrs, many(0), many(1)):
        np.testing.assert_array_equal(got, a0 + a1)
        assert got.shape == a0.shape
say("allreduce_many_")

# errors are raised before any communication, identically on both ranks
for bad, kind in ((np.zeros((4, 4), np.float32)[:, ::2], ValueError),
                  (np.zeros(3, np.float16), TypeError)):
    try:
        w.allreduce_sum_(bad)
    except kind:
        pass
    else:
        raise AssertionError(f"{bad.dtype} {bad.strides} accepted")
try:
    w.allreduce_many_([np.zeros(3, np.float32), np.zeros(3, np.float32)],
                      buffer=np.empty(5, np.float32))
except ValueError as e:
    assert "at least 6" in str(e), e
else:
    raise AssertionError("short buffer accepted")
say("argument errors")

# bcast_
b = np.full((3, 2), float(rank + 7), np.float64)
assert w.bcast_(b) is b
np.testing.assert_array_equal(b, np.full((3, 2), 7.0))
b = np.full(4, rank, np.int64)
w.bcast_(b, root=1)
np.testing.assert_array_equal(b, np.ones(4, np.int64))
say("bcast_")

assert w.sum_int(rank + 3) == 7
say("sum_int")

w.check_same("the program", "same")
try:
    w.check_same("the batch dtype", "float32" if rank == 0 else "float64")
except ValueError as e:
    assert "rank 1: 'float64'" in str(e), e
else:
    raise AssertionError("check_same accepted different values")
say("check_same")

# init(sub-communicator): one process per group -> single-process behaviour
from mpi4py import MPI  # noqa: E402

assert dist.init(MPI.COMM_WORLD.Split(color=rank, key=0)) is None
assert dist.world() is None and dist.get_world_size() == 1 and dist.get_rank() == 0
dist.barrier()
assert dist.is_initialized()
# init(dup of world): two processes again
w2 = dist.init(MPI.COMM_WORLD.Dup())
assert w2 is dist.world() and w2.size == 2 and w2.rank == rank and w2.comm != MPI.COMM_WORLD
assert dist.init() .comm == MPI.COMM_WORLD
try:
    dist.init(MPI.COMM_NULL)
except ValueError:
    pass
else:
    raise AssertionError("COMM_NULL accepted")
say("init")
