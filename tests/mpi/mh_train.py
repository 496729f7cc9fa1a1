"""Run under two-host mpiexec (tests/distributed/test_multihost.py): `python tests/mpi/mh_train.py`
trains a small MLP data-parallel over the 2 ranks until it is stopped (at most 10**6
steps), printing `PID <rank> <pid>` first and `STEP <rank> <n>` after every 5th step, so
that the test can cut the network or kill a rank while the job is inside its steps."""
import os

import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2, size
print(f"PID {rank} {os.getpid()}", flush=True)
paddle.seed(1)
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 16], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.fc(x, 32, activation="relu")
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 4), y)
    paddle.optimizer.SGD(0.01).minimize(loss)
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
c = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                    places=[paddle.CPUPlace()])
rng = np.random.default_rng(rank)
feed = {"x": rng.standard_normal((8, 16)).astype(np.float32),
        "y": rng.integers(0, 4, (8, 1)).astype(np.int64)}
for step in range(1, 10 ** 6):
    exe.run(c, feed=feed, fetch_list=[loss])
    if step % 5 == 0:
        print(f"STEP {rank} {step}", flush=True)
