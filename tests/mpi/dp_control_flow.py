"""Run under `mpiexec -n 2 python tests/mpi/dp_control_flow.py`: data-parallel training of
a model with a `cond` and a `while_loop` (its gradient taken) over 2 ranks equals one
device on the concatenated batch. Every rank initialises with its own seed (the first run
broadcasts rank 0's parameters) and feeds its half of each global batch; rank 0 then
trains a single-device copy and compares. Prints `OK ...` on rank 0."""
import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2, size

main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 3], "float32")
    h = static.nn.fc(x, 4)
    w = main.global_block().var("fc_0.w_0")
    # a condition every rank decides alike (a parameter's), not a batch statistic
    y = static.nn.cond(paddle.mean(w) > -100.0, lambda: h * 2.0, lambda: paddle.exp(h))
    z, _ = static.nn.while_loop(lambda z, n: n < 3,
                                lambda z, n: [paddle.tanh(z) * 0.9 + 0.5, n + 1],
                                [y, paddle.full([1], 0, "int64")])
    loss = paddle.mean(z * z)
    paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)

paddle.seed(100 + rank)
scope = static.Scope()
exe = static.Executor(paddle.CPUPlace())
exe.run(startup, scope=scope)
initial = {n: scope.get(n) for n in scope.local_var_names()}
compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
rng = np.random.default_rng(0)                 # the same global batches on every rank
batches = [{"x": rng.standard_normal((8, 3)).astype(np.float32)} for _ in range(3)]
for b in batches:
    exe.run(compiled, feed={"x": np.array_split(b["x"], size)[rank]}, fetch_list=[loss],
            scope=scope)
got = {p.name: scope.get(p.name) for p in main.all_parameters()}
everyone = dist.world().allgather_obj(got)
for n in got:
    np.testing.assert_array_equal(everyone[0][n], everyone[1][n])
if rank == 0:
    ref = static.Scope()
    for n, a in initial.items():
        ref.set(n, a)
    for b in batches:
        exe.run(main, feed=b, fetch_list=[loss], scope=ref)
    for n in got:
        np.testing.assert_allclose(got[n], ref.get(n), rtol=1e-5, atol=1e-7, err_msg=n)
    print("OK 2 ranks with cond + while_loop == 1 device", flush=True)
