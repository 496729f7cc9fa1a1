"""Run under `mpiexec -n 2 python tests/mpi/dp_sync_bn.py D`: a conv + batch_norm + relu
+ fc net trained with sync_batch_norm on 2 ranks x D places equals one device on the
whole batch (parameters and running statistics); prints `OK sync_bn ...` on rank 0."""
import sys

import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

places = int(sys.argv[1])
rank, size = dist.get_rank(), dist.get_world_size()
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 2, 5, 5], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.batch_norm(static.nn.conv2d(x, 4, 3, padding=1), act="relu", momentum=0.8)
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 3), y)
    paddle.optimizer.SGD(0.2).minimize(loss)
paddle.seed(3)
scope = static.Scope()
exe = static.Executor(paddle.CPUPlace())
exe.run(startup, scope=scope)
initial = {n: scope.get(n) for n in scope.local_var_names()}
bs = static.BuildStrategy()
bs.sync_batch_norm = True
c = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
    loss_name=loss.name, places=[paddle.CPUPlace()] * places)
rng = np.random.default_rng(1)
n = 2 * places * 2 + 1
batches = [{"x": (rng.standard_normal((n, 2, 5, 5)) * 2 + 1).astype(np.float32),
            "y": rng.integers(0, 3, (n, 1)).astype(np.int64)} for _ in range(3)]
for b in batches:
    exe.run(c, feed={k: np.array_split(v, size)[rank] for k, v in b.items()},
            fetch_list=[loss], scope=scope)
names = [v.name for v in main.global_block().vars.values()
         if v.persistable and v.name in initial and "learning_rate" not in v.name]
got = {k: scope.get(k) for k in names}
if rank == 0:
    ref = static.Scope()
    for k, a in initial.items():
        ref.set(k, a)
    for b in batches:
        exe.run(main, feed=b, fetch_list=[loss], scope=ref)
    for k in names:
        np.testing.assert_allclose(got[k], ref.get(k), rtol=1e-5, atol=1e-6, err_msg=k)
    assert "batch_norm_0.w_1" in names and "batch_norm_0.w_2" in names  # running mean, var
    print(f"OK sync_bn 2 ranks x {places} places == 1 device", flush=True)
