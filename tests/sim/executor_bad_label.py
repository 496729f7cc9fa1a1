"""Issue 9: a bad label on CUDAPlace(0): the kernel records it on the device, the executor
raises the CPU path's ValueError after the run and restores every persistable; prints
`ok`. Run by tests/gpu/test_gpu_executor.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import unique_name

def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 6])
        y = static.data("y", [None, 1], "int64")
        logits = static.nn.fc(static.nn.fc(x, 5, activation="relu"), 3)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        paddle.optimizer.Adam(0.1).minimize(loss)
    return main, startup, loss

rng = np.random.default_rng(0)
x = rng.standard_normal((4, 6)).astype("float32")
good = np.array([[0], [2], [1], [1]], "int64")
bad = good.copy()
bad[2, 0] = 3
msgs, losses = {}, {}
for place in (paddle.CPUPlace(), paddle.CUDAPlace(0)):
    paddle.seed(1)
    main, startup, loss = build()
    scope = static.Scope()
    exe = static.Executor(place)
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": x, "y": good}, fetch_list=[loss], scope=scope)
    before = {n: scope.get(n) for n in scope.local_var_names()}
    try:
        exe.run(main, feed={"x": x, "y": bad}, fetch_list=[loss], scope=scope)
        raise SystemExit(f"{place}: no error for label 3 of 3 classes")
    except ValueError as e:
        msgs[type(place).__name__] = str(e)
    for n, v in before.items():     # parameters, Adam moments and beta powers
        after = scope.get(n)
        assert np.array_equal(after, v) and np.isfinite(after).all(), n
    losses[type(place).__name__] = exe.run(main, feed={"x": x, "y": good},
                                           fetch_list=[loss], scope=scope)[0]
print(msgs["CUDAPlace"])
assert msgs["CUDAPlace"] == msgs["CPUPlace"], msgs
assert "label 3 (row 2) is outside [0, 3)" in msgs["CPUPlace"]
np.testing.assert_allclose(losses["CUDAPlace"], losses["CPUPlace"], rtol=1e-5)
print("ok")
