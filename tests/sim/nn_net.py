"""A small CNN (conv, batch norm, depthwise conv, max and avg pooling, dropout, embedding)
trained three steps on CUDAPlace(0) matches the CPU run: losses, parameters and the running
statistics; prints `trained N`. Run by tests/gpu/test_gpu_sim_nn.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.nn import functional as F
from numbaflow.nn import functional_conv as FC
from numbaflow.nn import functional_nn as NN
from numbaflow.nn import functional_pool as POOL
from numbaflow.utils import unique_name

def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 2, 6, 6])
        ids = static.data("ids", [None, 3], "int64")
        y = static.data("y", [None, 1], "int64")
        h = NN.static_batch_norm(FC.static_conv2d(x, 3, 3, padding=1), act="relu")
        h = FC.static_conv2d(h, 3, 3, padding=1, groups=3)          # depthwise
        h = POOL.fluid_pool2d(h, 2, "max", 2)
        h = F.dropout(POOL.fluid_pool2d(h, 2, "avg", 1, ceil_mode=True), 0.3)
        e = NN.static_embedding(ids, [5, 4])
        feat = paddle.concat([paddle.reshape(h, [-1, 12]), paddle.reshape(e, [-1, 12])],
                             axis=1)
        loss = F.cross_entropy(static.nn.fc(feat, 3), y)
        paddle.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss

rng = np.random.default_rng(0)
batches = [(rng.standard_normal((4, 2, 6, 6)).astype("float32"),
            rng.integers(0, 5, (4, 3)), rng.integers(0, 3, (4, 1))) for _ in range(3)]
res = {}
for place in (paddle.CPUPlace(), paddle.CUDAPlace(0)):
    paddle.seed(1)
    main, startup, loss = build()
    scope = static.Scope()
    exe = static.Executor(place)
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed={"x": x, "ids": i, "y": y}, fetch_list=[loss],
                      scope=scope)[0] for x, i, y in batches]
    params = {n: scope.get(n) for n in main.global_block().vars
              if main.global_block().vars[n].persistable}
    res[type(place).__name__] = (losses, params)
(cl, cp), (gl, gp) = res["CPUPlace"], res["CUDAPlace"]
np.testing.assert_allclose(gl, cl, rtol=1e-5)
assert {"batch_norm_0.w_1", "batch_norm_0.w_2", "embedding_0.w_0",
         "depthwise_conv2d_0.w_0"} <= set(cp), sorted(cp)
for n in cp:
    np.testing.assert_allclose(gp[n], cp[n], rtol=1e-5, atol=1e-6, err_msg=n)
print("trained", len(cp))
