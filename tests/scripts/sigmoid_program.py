"""sigmoid(x) * 3 + x run once by the Executor on ones; asserts the numbers against numpy
and prints ok. Run twice by tests/kernels/test_kernel_cache.py: the second time every
cached kernel file has been replaced by a planted one, which must never run."""
import numpy as np

import numbaflow as paddle
import numbaflow.static as static

main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    x = static.data('x', [None, 3])
    y = paddle.nn.functional.sigmoid(x) * 3.0 + x
out, = static.Executor().run(main, feed={'x': np.ones((2, 3), np.float32)}, fetch_list=[y])
assert np.allclose(out, 3 / (1 + np.exp(-1.0)) + 1), out
print('ok')
