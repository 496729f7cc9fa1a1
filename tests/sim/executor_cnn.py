"""Issue 3: conv + batch_norm + relu + pool + fc, 2 steps on CUDAPlace(0) equal the CPU;
prints `ok`. Run by tests/gpu/test_gpu_executor.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name

def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 1, 6, 6])
        y = static.data("y", [None, 1], "int64")
        h = static.nn.conv2d(x, num_filters=3, filter_size=3, padding=1)
        h = static.nn.batch_norm(h, act="relu")
        h = paddle.nn.functional.max_pool2d(h, kernel_size=2, stride=2)
        logits = static.nn.fc(h, 4)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        paddle.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss

rng = np.random.default_rng(0)
x = rng.standard_normal((2, 1, 6, 6)).astype("float32")
y = np.array([[1], [3]], "int64")
out = {}
for place in (paddle.CPUPlace(), paddle.CUDAPlace(0)):
    paddle.seed(3)
    main, startup, loss = build()
    scope = static.Scope()
    exe = static.Executor(place)
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0]
              for _ in range(2)]
    out[type(place).__name__] = (losses, {n: scope.get(n) for n in scope.local_var_names()})
(cl, cs), (gl, gs) = out["CPUPlace"], out["CUDAPlace"]
np.testing.assert_allclose(gl, cl, rtol=1e-5)
assert set(cs) == set(gs)
for n in cs:    # parameters, batch-norm running statistics, learning rate
    np.testing.assert_allclose(gs[n], cs[n], rtol=1e-5, atol=1e-7, err_msg=n)
print("ok")
