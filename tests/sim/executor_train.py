"""Training on CUDAPlace(0) equals training on the CPU; prints `ok`. Run by
tests/gpu/test_gpu_executor.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name

def build(opt):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 6])
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 5, activation="tanh")
        logits = static.nn.fc(h, 3)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        opt.minimize(loss)
    return main, startup, loss

rng = np.random.default_rng(0)
batches = [(rng.standard_normal((4, 6)).astype("float32"),
            rng.integers(0, 3, (4, 1)).astype("int64")) for _ in range(2)]
results = {}
for place in (paddle.CPUPlace(), paddle.CUDAPlace(0)):
    paddle.seed(1)
    main, startup, loss = build(paddle.optimizer.Momentum(0.1, 0.9))
    scope = static.Scope()
    exe = static.Executor(place)
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0]
              for x, y in batches]
    results[type(place).__name__] = (losses, {n: scope.get(n) for n in
                                              ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0")})
(cl, cp), (gl, gp) = results["CPUPlace"], results["CUDAPlace"]
np.testing.assert_allclose(gl, cl, rtol=1e-5)
for n in cp:
    np.testing.assert_allclose(gp[n], cp[n], rtol=1e-5, atol=1e-7, err_msg=n)

# the GPU scope: set on the host, run on the device, read back on the host, then a
# CPU executor on the same scope sees the device's latest values
paddle.seed(2)
main, startup, loss = build(paddle.optimizer.SGD(0.5))
scope = static.Scope()
gexe, cexe = static.Executor(paddle.CUDAPlace(0)), static.Executor(paddle.CPUPlace())
gexe.run(startup, scope=scope)
scope.set("fc_1.b_0", np.array([1.0, 2.0, 3.0], "float32"))
x, y = batches[0]
gexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
after_gpu = scope.get("fc_1.b_0")
assert not np.allclose(after_gpu, [1.0, 2.0, 3.0])
ref = static.Scope()
for n in scope.local_var_names():
    ref.set(n, scope.get(n))
cexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
cexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=ref)
for n in ("fc_0.w_0", "fc_1.b_0"):
    np.testing.assert_allclose(scope.get(n), ref.get(n), rtol=1e-6, err_msg=n)
# and the GPU executor picks up what the CPU run wrote
g1, = gexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
c1, = cexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=ref)
np.testing.assert_allclose(g1, c1, rtol=1e-5)
print("ok")
