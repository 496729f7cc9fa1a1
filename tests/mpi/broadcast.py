"""Run under `mpiexec -n 2`: every rank initialises a small fc program with its own
seed; broadcast_parameters makes every rank hold rank 0's values (also for a scope
that lacks them). Prints `OK <check>` on rank 0."""
import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

rank = dist.get_rank()
w = dist.world()

main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 4], "float32")
    h = static.nn.fc(x, 5, activation="relu")
    loss = paddle.mean(static.nn.fc(h, 1))
    paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)

paddle.seed(rank + 1)
scope = static.Scope()
exe = static.Executor(paddle.CPUPlace())
exe.run(startup, scope=scope)
params = sorted(p.name for p in main.all_parameters())
assert params == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"], params
mine = {n: scope.get(n) for n in params}
before = w.allgather_obj(mine)
assert not np.array_equal(before[0]["fc_0.w_0"], before[1]["fc_0.w_0"]), "seeds gave equal weights"

held_arrays = {n: scope.array(n) for n in scope.local_var_names()}
sent = dist.broadcast_parameters(main, scope)
assert sent == sorted(sent) and set(params) <= set(sent), sent
assert all(scope.array(n) is a for n, a in held_arrays.items()), "arrays replaced, not in place"
after = w.allgather_obj({n: scope.get(n) for n in sent})
for n in sent:
    np.testing.assert_array_equal(after[1][n], after[0][n])
    np.testing.assert_array_equal(after[0][n], before[0][n] if n in params else after[0][n])
if rank == 0:
    print("OK broadcast_parameters", flush=True)

# the broadcast parameters train identically: one step gives the same loss on both ranks
feed = {"x": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)}
l0, = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
losses = w.allgather_obj(float(l0))
assert losses[0] == losses[1], losses
if rank == 0:
    print("OK same step", flush=True)

# rank 1 starts with an empty scope: the variables are created there
scope2 = static.Scope()
if rank == 0:
    exe.run(startup, scope=scope2)
sent = dist.broadcast_parameters(static.CompiledProgram(main), scope2)
got = w.allgather_obj({n: scope2.get(n) for n in sent})
assert set(params) <= set(got[1])
for n in sent:
    np.testing.assert_array_equal(got[1][n], got[0][n])
if rank == 0:
    print("OK created on other ranks", flush=True)
