"""Control flow on the GPU path under the CUDA simulator: a model with a `cond` (both
branches taken over the steps) and a `while_loop` whose gradient is taken trains on
CUDAPlace(0) as on the CPU (losses, loop results, parameters); prints `ok`. Run by
tests/gpu/test_gpu_sim_control_flow.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name

def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3], "float32")
        h = static.nn.fc(x, 4)
        y = static.nn.cond(paddle.mean(x) > 0, lambda: h * 2.0, lambda: paddle.exp(h * 0.5))
        z, n = static.nn.while_loop(lambda z, n: n < 3,
                                    lambda z, n: [paddle.tanh(z) * 0.9 + 0.5, n + 1],
                                    [y, paddle.full([1], 0, "int64")])
        loss = paddle.mean(z * z)
        paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss, z, n

results = {}
for place in (paddle.CPUPlace(), paddle.CUDAPlace(0)):
    paddle.seed(1)
    main, startup, loss, z, n = build()
    scope = static.Scope()
    exe = static.Executor(place)
    exe.run(startup, scope=scope)
    outs = []
    for v in (1.0, -1.0, 0.5):
        xv = np.full((2, 3), v, "float32") + np.arange(6, dtype="float32").reshape(2, 3) * 0.1
        outs.append(exe.run(main, feed={"x": xv}, fetch_list=[loss, z, n], scope=scope))
    results[type(place).__name__] = (outs, scope.get("fc_0.w_0"))
(co, cw), (go, gw) = results["CPUPlace"], results["CUDAPlace"]
for a, b in zip(co, go):
    for p, q in zip(a, b):
        np.testing.assert_allclose(q, p, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(gw, cw, rtol=1e-5, atol=1e-7)
print("ok")
