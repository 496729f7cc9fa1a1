"""A relu program's first run with numba's cache-file writes failing (ENOSPC) and no compile
helper process (it would compile the kernels unpatched, and this process only load them):
the numbers are right and one warning names numba's compiled-code cache; prints `ok`.
Run by tests/faults/test_fault_disks.py."""
import errno, warnings
import numpy as np
from numba.core import caching
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.executor import precompile
precompile.MIN_COLD = float("inf")
tried = []

def full(self, name, data):
    tried.append(name)
    raise OSError(errno.ENOSPC, "No space left on device", name)
caching.IndexDataCacheFile._save_data = full
paddle.enable_static()
x = static.data("x", [None, 3], "float32")
y = paddle.nn.functional.relu(x * 3.0 + 0.5)
a = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("default")
    got, = static.Executor(paddle.CPUPlace()).run(feed={"x": a}, fetch_list=[y])
np.testing.assert_allclose(got, np.maximum(a * 3.0 + 0.5, 0), rtol=1e-6)
assert tried, "the run compiled nothing new: the test does not test"
assert any("numba's compiled-code cache" in str(w.message) for w in caught), caught
print("ok")
