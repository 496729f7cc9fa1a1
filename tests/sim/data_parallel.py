"""Two CUDA places equal one CPU device on the whole batch; prints `OK gpu data parallel`.
Run by tests/gpu/test_data_parallel_gpu_sim.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name

def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 4])
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 5, activation="relu")
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 3), y)
        paddle.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss

rng = np.random.default_rng(0)
batches = [(rng.standard_normal((5, 4)).astype("float32"),
            rng.integers(0, 3, (5, 1)).astype("int64")) for _ in range(2)]
paddle.seed(1)
main, startup, loss = build()
cpu = static.Executor(paddle.CPUPlace())
s_ref = static.Scope()
cpu.run(startup, scope=s_ref)
s_gpu = static.Scope()
for n in s_ref.local_var_names():
    s_gpu.set(n, s_ref.get(n))
gpu = static.Executor(paddle.CUDAPlace(0))
bs = static.BuildStrategy()
bs.remove_unnecessary_lock = False
c = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
    loss_name=loss.name, places=[paddle.CUDAPlace(0)] * 2)
for x, y in batches:
    lg, = gpu.run(c, feed={"x": x, "y": y}, fetch_list=[loss], scope=s_gpu)
    lc, = cpu.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=s_ref)
    assert lg.shape == (2,)
    np.testing.assert_allclose(np.dot(lg, [3, 2]) / 5, lc, rtol=1e-5)
for n in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"):
    np.testing.assert_allclose(s_gpu.get(n), s_ref.get(n), rtol=1e-5, atol=1e-6)
print("OK gpu data parallel")
