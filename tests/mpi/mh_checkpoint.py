"""Run under two-host mpiexec (tests/distributed/test_multihost.py) as
`python tests/mpi/mh_checkpoint.py DIR`, where DIR is a host-local disk (each host sees
its own, empty on the other): the documented way to checkpoint without a shared file
system. Both ranks train (AllReduce: every rank holds the same parameters), rank 0 alone
saves to DIR. Rank 1's load of DIR fails with the loader's error naming the path (the
files are on the other host), which it reports and goes on; rank 0 loads, and the next
data-parallel run re-broadcasts rank 0's parameters, so both ranks resume from the
checkpoint: their parameters then equal a single-device run from the checkpoint on the
concatenated batch. Prints `LOAD <rank> ...` lines and `OK checkpoint` on rank 0."""
import os
import sys

import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

path = os.path.join(sys.argv[1], "ckpt")
rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2, size
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 6], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.fc(x, 8, activation="relu")
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 3), y)
    paddle.optimizer.SGD(0.1).minimize(loss)
paddle.seed(5 + rank)
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
c = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                    places=[paddle.CPUPlace()])
rng = np.random.default_rng(0)                  # the same global batches on every rank
batches = [{"x": rng.standard_normal((6, 6)).astype(np.float32),
            "y": rng.integers(0, 3, (6, 1)).astype(np.int64)} for _ in range(6)]


def step(b):
    exe.run(c, feed={k: np.array_split(v, size)[rank] for k, v in b.items()}, fetch_list=[loss])


params = [p.name for p in main.all_parameters()]
for b in batches[:3]:
    step(b)
if rank == 0:
    static.save(main, path)
    saved = {n: static.global_scope().get(n) for n in params}
dist.barrier()
for b in batches[3:5]:                          # move on: the checkpoint is now behind
    step(b)
try:
    static.load(main, path, exe)
    print(f"LOAD {rank} ok", flush=True)
except (OSError, ValueError) as e:
    print(f"LOAD {rank} {type(e).__name__}: {e}", flush=True)
    assert rank == 1 and path in str(e), (rank, e)
step(batches[5])                                # re-broadcasts rank 0's loaded parameters
got = {n: static.global_scope().get(n) for n in params}
everyone = dist.world().allgather_obj(got)
for n in params:
    np.testing.assert_array_equal(everyone[0][n], everyone[1][n], err_msg=n)
if rank == 0:
    ref = static.Scope()
    for n in static.global_scope().local_var_names():
        ref.set(n, static.global_scope().get(n))
    for n in params:
        ref.set(n, saved[n])
    exe.run(main, feed=batches[5], fetch_list=[loss], scope=ref)
    for n in params:
        np.testing.assert_allclose(got[n], ref.get(n), rtol=1e-5, atol=1e-7, err_msg=n)
    print("OK checkpoint", flush=True)
