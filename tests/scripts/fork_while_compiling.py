"""A 24-layer MLP trained until its segments compile in the background, then three forks
that each compile a numba function; prints `forked children compiled`. Run by
tests/executor/test_segments.py."""
import os, sys
import numpy as np
import numbaflow as paddle, numbaflow.static as static
from numbaflow.executor.plan import HOT_RUNS
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    h = static.data("x", [None, 8], "float32")
    for _ in range(24):
        h = static.nn.fc(h, 8, activation="sigmoid")
    loss = paddle.mean(h)
    paddle.optimizer.SGD(0.01).minimize(loss)
exe = static.Executor(); exe.run(startup)
for _ in range(HOT_RUNS + 1):
    exe.run(main, feed={"x": np.ones((4, 8), np.float32)}, fetch_list=[loss])
for _ in range(3):               # forks while the compile thread works
    pid = os.fork()
    if pid == 0:
        from numba import njit
        @njit
        def f(x):
            return x + 1
        os._exit(0 if f(1) == 2 else 1)
    _, status = os.waitpid(pid, 0)
    assert status == 0, status
print("forked children compiled", flush=True)
