"""Tensor arrays on the GPU path under the CUDA simulator: a while_loop writes each step's
state into a tensor array (array_write), then array_length and array_read of it after the
loop, and a loss on the read elements trains by SGD (the arrays' gradient ops too); on
CUDAPlace(0) every fetch (the array itself, its length, the reads, the losses) and the
trained parameter equal the CPU's. Prints `ok`. Run by tests/gpu/test_gpu_sim_tensor_array.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name


def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [2, 3], "float32")
        w = static.create_parameter([3, 3], "float32")
        steps = paddle.tensor.create_array("float32")
        paddle.tensor.array_write(x * 0.5, paddle.full([1], 0, "int64"), steps)

        def body(i, h):
            h = paddle.tanh(paddle.matmul(h, w) + x)
            paddle.tensor.array_write(h, i, steps)
            return [i + 1, h]
        static.nn.while_loop(lambda i, h: i < 4, body, [paddle.full([1], 1, "int64"), x])
        n = paddle.tensor.array_length(steps)
        last = paddle.tensor.array_read(steps, n - 1)
        stacked = paddle.stack([paddle.tensor.array_read(steps, t) for t in range(4)])
        loss = paddle.mean(stacked * stacked) + paddle.mean(last)
        paddle.optimizer.SGD(0.1).minimize(loss)
    return main, startup, steps, n, last, loss, w


results = {}
for place in (paddle.CPUPlace(), paddle.CUDAPlace(0)):
    paddle.seed(3)
    main, startup, steps, n, last, loss, w = build()
    scope = static.Scope()
    exe = static.Executor(place)
    exe.run(startup, scope=scope)
    outs = []
    for k in range(3):
        xv = np.arange(6, dtype="float32").reshape(2, 3) * 0.1 - 0.2 * k
        outs.append(exe.run(main, feed={"x": xv}, fetch_list=[steps, n, last, loss],
                            scope=scope))
    results[type(place).__name__] = (outs, scope.get(w.name))
(co, cw), (go, gw) = results["CPUPlace"], results["CUDAPlace"]
for a, b in zip(co, go):
    assert len(a[0]) == len(b[0]) == 4 and int(b[1][0]) == 4
    for p, q in zip(a[0] + a[1:], b[0] + b[1:]):
        np.testing.assert_allclose(q, p, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(gw, cw, rtol=1e-5, atol=1e-7)
assert co[-1][3] < co[0][3]     # it trains
print("ok")
