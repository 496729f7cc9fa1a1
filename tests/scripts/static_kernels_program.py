"""An fc layer, uniform_random and dropout (numbaflow's own `cache=True` kernels, not
generated ones) run once; prints whether the output has its shape. Run by
tests/faults/test_fault_disks.py on a full NUMBA_CACHE_DIR."""
import numpy as np

import numbaflow as paddle
import numbaflow.static as static

paddle.seed(1)
x = static.data('x', [None, 3], 'float32')
y = static.nn.fc(x, 2)
z = paddle.nn.functional.dropout(paddle.uniform([4, 2]) + y, 0.5)
exe = static.Executor(paddle.CPUPlace())
exe.run(static.default_startup_program())
got, = exe.run(feed={'x': np.ones((4, 3), 'float32')}, fetch_list=[z])
print(got.shape == (4, 2))
