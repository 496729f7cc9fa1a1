"""Run under `mpiexec -n 2 python tests/mpi/dp_reduce_save.py DIR`: Adam under
ReduceStrategy.Reduce on 2 ranks keeps each parameter's moments on its owner's rank;
`static.save`, called on every rank, gathers them first, so each rank's checkpoint holds
the complete optimizer state of one-device training. Prints `OK reduce save` on rank 0."""
import os
import sys

import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.compiler.compiled_program import replicas
from numbaflow.utils import unique_name

out_dir = sys.argv[1]
rank, size = dist.get_rank(), dist.get_world_size()
paddle.seed(5)
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 6], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.fc(x, 8, activation="relu")
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 3), y)
    paddle.optimizer.Adam(0.01).minimize(loss)
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
scope = static.global_scope()
initial = {n: scope.get(n) for n in scope.local_var_names()}
bs = static.BuildStrategy()
bs.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
c = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
    loss_name=loss.name, places=[paddle.CPUPlace()])
rng = np.random.default_rng(2)
batches = [{"x": rng.standard_normal((9, 6)).astype(np.float32),
            "y": rng.integers(0, 3, (9, 1)).astype(np.int64)} for _ in range(3)]
for b in batches:
    exe.run(c, feed={k: np.array_split(v, size)[rank] for k, v in b.items()}, fetch_list=[loss])
mine, = replicas(c)
owned_elsewhere = [p.name for p in main.all_parameters() if p.name not in mine.updates]
assert owned_elsewhere and mine.updates, mine.updates
path = os.path.join(out_dir, f"rank{rank}")
static.save(main, path)                      # every rank: a collective gather first

ref = static.Scope()
for n, a in initial.items():
    ref.set(n, a)
for b in batches:
    exe.run(main, feed=b, fetch_list=[loss], scope=ref)
with static.scope_guard(static.Scope()):
    static.load(main, path)
    saved = static.global_scope()
    moments = [n for n in saved.local_var_names() if "moment" in n]
    assert any(n.startswith(owned_elsewhere[0]) for n in moments), moments
    for n in saved.local_var_names():
        np.testing.assert_allclose(saved.get(n), ref.get(n), rtol=1e-5, atol=1e-7, err_msg=n)
dist.barrier()
if rank == 0:
    print("OK reduce save", flush=True)
