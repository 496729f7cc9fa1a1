"""relu(x * 3 + argv[1]) run once by the Executor on a fixed input; prints where numba keeps
the kernels' code (the kernel cache's `numba_path`), then whether the numbers are right.
Run by tests/faults/test_fault_disks.py against unusable and full cache directories."""
import sys

import numpy as np

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels.codegen import cache

b = float(sys.argv[1])
x = static.data('x', [None, 3], 'float32')
y = paddle.nn.functional.relu(x * 3.0 + b)
a = np.arange(-6, 6, dtype='float32').reshape(4, 3)
got, = static.Executor(paddle.CPUPlace()).run(feed={'x': a}, fetch_list=[y])
print(cache.info()['numba_path'])
print(np.allclose(got, np.maximum(a * 3 + b, 0)))
