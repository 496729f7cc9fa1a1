"""Run under `mpiexec -n 2 python tests/mpi/dp_equivalence.py D STRATEGY`: data-parallel
training over 2 ranks x D local places equals one device on the concatenated batch.
STRATEGY "iterator" is allreduce with the three batches fed as one run of
num_iteration_per_run = 3 over an iterator (a K-run transaction once deadlocked there).

Every rank builds the same MLP but initialises it with its own seed: the first run
broadcasts rank 0's parameters. Each rank feeds its shard of each global batch (uneven
shards: 7 rows on 2 ranks). Rank 0 then trains a single-device copy, from rank 0's
initial parameters, on the whole batches and compares. Prints `OK ...` on rank 0."""
import sys

import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

places, strategy = int(sys.argv[1]), sys.argv[2]
bucket_mb = float(sys.argv[3]) if len(sys.argv) > 3 else None
rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2, size

main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 6], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.fc(x, 8, activation="relu")
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 3), y)
    paddle.optimizer.Adam(0.01).minimize(loss)

paddle.seed(100 + rank)
scope = static.Scope()
exe = static.Executor(paddle.CPUPlace())
exe.run(startup, scope=scope)
initial = {n: scope.get(n) for n in scope.local_var_names()}   # rank 0's are the reference

bs = static.BuildStrategy()
if strategy == "reduce":
    bs.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
if bucket_mb is not None:          # small buckets: several overlapped MPI calls per step
    bs.fuse_grad_size_in_MB = bucket_mb
es = static.ExecutionStrategy()
es.num_iteration_per_run = 3 if strategy == "iterator" else 1
compiled = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
    loss_name=loss.name, exec_strategy=es, places=[paddle.CPUPlace()] * places)
rng = np.random.default_rng(0)                 # the same global batches on every rank
batches = [{"x": rng.standard_normal((2 * places * 2 + 3, 6)).astype(np.float32),
            "y": rng.integers(0, 3, (2 * places * 2 + 3, 1)).astype(np.int64)}
           for _ in range(3)]
shards = [{k: np.array_split(v, size)[rank] for k, v in b.items()} for b in batches]
if strategy == "iterator":
    exe.run(compiled, feed=iter(shards), fetch_list=[loss], scope=scope)
for shard in shards if strategy != "iterator" else []:
    exe.run(compiled, feed=shard, fetch_list=[loss], scope=scope)
got = {p.name: scope.get(p.name) for p in main.all_parameters()}
everyone = dist.world().allgather_obj(got)
for n in got:                                  # every rank holds the same parameters
    np.testing.assert_array_equal(everyone[0][n], everyone[1][n])

if rank == 0:
    ref = static.Scope()
    for n, a in initial.items():
        ref.set(n, a)
    for b in batches:
        exe.run(main, feed=b, fetch_list=[loss], scope=ref)
    for n in got:
        np.testing.assert_allclose(got[n], ref.get(n), rtol=1e-5, atol=1e-7, err_msg=n)
    print(f"OK 2 ranks x {places} places ({strategy}) == 1 device", flush=True)
