"""Run under `mpiexec -n 2`: the ranks build different programs (hidden width 8 vs 9).
The first data-parallel run must raise a ValueError naming the difference on EVERY rank
(no rank may wait forever in a collective). Rank 0 prints `OK mismatch on ranks [0, 1]`."""
import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name

rank = dist.get_rank()
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 4], "float32")
    loss = paddle.mean(static.nn.fc(x, 8 + rank))
    paddle.optimizer.SGD(0.1).minimize(loss)
scope = static.Scope()
exe = static.Executor(paddle.CPUPlace())
exe.run(startup, scope=scope)
compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                           places=[paddle.CPUPlace()])
try:
    exe.run(compiled, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[loss], scope=scope)
except ValueError as e:
    assert "differs between ranks" in str(e), e
else:
    raise AssertionError("mismatching programs ran")
ok = dist.world().allgather_obj(rank)      # both ranks got here: print once, from rank 0
if rank == 0:
    print(f"OK mismatch on ranks {ok}", flush=True)
