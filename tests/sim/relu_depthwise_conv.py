"""fuse_relu_depthwise_conv on CUDAPlace(0) (relu folded into the depthwise conv) trains
like the unfused program on the CPU: losses and parameters; prints `ok`. Run by
tests/graph/test_fuse_relu_dwconv.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.nn.functional_conv import static_conv2d
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs

main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 2, 4, 4], "float32")
    h = static_conv2d(x, 2, 3, padding=1, act="relu")
    out = static_conv2d(h, 2, 3, padding=1, groups=2)
    loss = paddle.mean(out * out)
    paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
init = static.Scope()
static.Executor(paddle.CPUPlace()).run(startup, scope=init)
rng = np.random.default_rng(0)
feeds = [rng.standard_normal((2, 2, 4, 4)).astype("float32") for _ in range(2)]
results = []
for place, fused in ((paddle.CPUPlace(), False), (paddle.CUDAPlace(0), True)):
    scope = static.Scope()
    for v in main.list_vars():
        if v.persistable and init.get(v.name) is not None:
            scope.set(v.name, init.get(v.name).copy())
    bs = static.BuildStrategy()
    bs.fuse_relu_depthwise_conv = fused
    prog = static.CompiledProgram(main, build_strategy=bs)
    exe = static.Executor(place)
    losses = [exe.run(prog, feed={"x": f}, fetch_list=[loss], scope=scope)[0] for f in feeds]
    if fused:
        p, = passed_programs(prog)
        assert "relu" not in [o.type for o in p.global_block().ops]
    results.append((losses, {p.name: scope.get(p.name) for p in main.all_parameters()}))
(la, pa), (lb, pb) = results
np.testing.assert_allclose(lb, la, rtol=1e-5)
for k in pa:
    np.testing.assert_allclose(pb[k], pa[k], rtol=1e-5, atol=1e-7, err_msg=k)
print("ok")
