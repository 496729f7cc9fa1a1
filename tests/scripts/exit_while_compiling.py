"""A 24-layer MLP trained until its segments compile in the background, then the process
ends mid-compile; prints `exiting`. Run by tests/executor/test_segments.py: the exit must be
clean (status 0, no LLVM assertion) and prompt."""
import numpy as np
import numbaflow as paddle, numbaflow.static as static
from numbaflow.executor.plan import HOT_RUNS
from numbaflow.executor.executor import cached_plans
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    h = static.data("x", [None, 8], "float32")
    for _ in range(24):
        h = static.nn.fc(h, 8, activation="tanh")
    loss = paddle.mean(h)
    paddle.optimizer.SGD(0.01).minimize(loss)
exe = static.Executor(); exe.run(startup)
for _ in range(HOT_RUNS + 1):
    exe.run(main, feed={"x": np.ones((4, 8), np.float32)}, fetch_list=[loss])
plan = cached_plans(exe)[-1]
assert plan.compiling is not None and not plan.compiling.done.is_set()
print("exiting", flush=True)
