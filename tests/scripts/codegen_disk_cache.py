"""A sigmoid-and-add program run once against NUMBAFLOW_CACHE_DIR; prints the generated
CPU kernels' numba cache hits and misses. Run twice by tests/kernels/test_codegen.py: the
second process must load every kernel from disk."""
import numpy as np
import numbaflow as paddle, numbaflow.static as static
from numbaflow.kernels.codegen import cpu
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup):
    x = static.data("x", [None, 5])
    y = paddle.nn.functional.sigmoid(x) * 3.0 + x
exe = static.Executor()
out, = exe.run(main, feed={"x": np.ones((2, 5), np.float32)}, fetch_list=[y])
assert np.allclose(out, 3 / (1 + np.exp(-1.0)) + 1)
hits = sum(sum(k.stats.cache_hits.values()) for k in cpu.compiled_kernels.values())
misses = sum(sum(k.stats.cache_misses.values()) for k in cpu.compiled_kernels.values())
print(hits, misses)
