"""Run under `mpiexec -n 2`: after a first data-parallel step, ONLY rank 1 sets a
parameter in its scope (e.g. it alone loaded a checkpoint). The next run must not hang:
every rank joins the re-broadcast, so all ranks again hold rank 0's parameters and
train identically. Prints `OK resync` on rank 0."""
import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

rank = dist.get_rank()
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 4], "float32")
    loss = paddle.mean(static.nn.fc(x, 3))
    paddle.optimizer.SGD(0.1).minimize(loss)
paddle.seed(7 + rank)
scope = static.Scope()
exe = static.Executor(paddle.CPUPlace())
exe.run(startup, scope=scope)
c = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                    places=[paddle.CPUPlace()])
feed = {"x": np.ones((2, 4), np.float32)}
exe.run(c, feed=feed, fetch_list=[loss], scope=scope)
if rank == 1:
    scope.set("fc_0.w_0", np.full((4, 3), 5.0, np.float32))
exe.run(c, feed=feed, fetch_list=[loss], scope=scope)
ws = dist.world().allgather_obj(scope.get("fc_0.w_0"))
np.testing.assert_array_equal(ws[0], ws[1])
assert not np.allclose(ws[0], 5.0 - 0.1 * 0.5)      # rank 0's value won, not rank 1's
if rank == 0:
    print("OK resync", flush=True)
