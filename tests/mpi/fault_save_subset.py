"""Run under `mpiexec -n 2 python tests/mpi/fault_save_subset.py MODE DIR`: Adam under
ReduceStrategy.Reduce on 2 ranks, then `static.save` on rank 0 only. Rank 1 instead:
  step  - runs another training step: rank 0's save raises RuntimeError (nothing was
          started), rank 0 catches it, joins that step, and both ranks save together;
  exit  - exits (sys.exit(0)): rank 0's save raises RuntimeError naming rank 1.
Prints `RAISED <message>` and `OK <mode>` on rank 0."""
import os
import sys

import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

mode, out_dir = sys.argv[1], sys.argv[2]
rank, size = dist.get_rank(), dist.get_world_size()
paddle.seed(5)
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 6], "float32")
    y = static.data("y", [None, 1], "int64")
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(static.nn.fc(x, 8), 3), y)
    paddle.optimizer.Adam(0.01).minimize(loss)
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
bs = static.BuildStrategy()
bs.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
c = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
    loss_name=loss.name, places=[paddle.CPUPlace()])
rng = np.random.default_rng(2)
feed = {"x": rng.standard_normal((4, 6)).astype(np.float32),
        "y": rng.integers(0, 3, (4, 1)).astype(np.int64)}


def step():
    exe.run(c, feed={k: np.array_split(v, size)[rank] for k, v in feed.items()},
            fetch_list=[loss])


step()
path = os.path.join(out_dir, f"rank{rank}")
if rank == 1:
    if mode == "exit":
        sys.exit(0)
    step()                                   # rank 0 is in static.save meanwhile
    static.save(main, path)
else:
    try:
        static.save(main, path)
        raise AssertionError("static.save on rank 0 alone did not raise")
    except RuntimeError as e:
        print(f"RAISED {e}", flush=True)
    if mode == "exit":
        print("OK exit", flush=True)
        sys.exit(0)
    step()                                   # the step rank 1 is waiting in
    static.save(main, path)
dist.barrier()
# both checkpoints hold the same, complete state
with static.scope_guard(static.Scope()):
    static.load(main, os.path.join(out_dir, "rank0"))
    mine = {n: static.global_scope().get(n) for n in static.global_scope().local_var_names()}
with static.scope_guard(static.Scope()):
    static.load(main, os.path.join(out_dir, "rank1"))
    other = static.global_scope()
    for n, a in mine.items():
        np.testing.assert_array_equal(a, other.get(n), err_msg=n)
assert any("moment" in n for n in mine), sorted(mine)
if rank == 0:
    print(f"OK {mode}", flush=True)
