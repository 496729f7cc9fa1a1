"""enable_auto_fusion on CUDAPlace(0) trains a conv + elementwise tail like the unfused CPU
run (two fused_elementwise ops), and every fused_elementwise row of the op table gives the
CPU kernel's numbers on the simulated GPU; prints `ok`. Run by
tests/graph/test_auto_fusion.py."""
import numpy as np
from op_rows import load_all

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels import run_op
from numbaflow.testing.op_test import make_inputs
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs

def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 2, 3, 3])
        c = static.nn.conv2d(x, 2, 1, act="relu")
        loss = paddle.mean(paddle.nn.functional.sigmoid(c * 2.0 + 0.5))
        paddle.optimizer.SGD(0.5).minimize(loss)
    return main, startup, loss

x = np.random.default_rng(0).standard_normal((2, 2, 3, 3)).astype("float32")
res = []
for place, fuse in ((paddle.CPUPlace(), False), (paddle.CUDAPlace(0), True)):
    paddle.seed(5)
    main, startup, loss = build()
    scope = static.Scope()
    exe = static.Executor(place)
    exe.run(startup, scope=scope)
    prog = main
    if fuse:
        bs = static.BuildStrategy()
        bs.enable_auto_fusion = True
        prog = static.CompiledProgram(main, build_strategy=bs)
    losses = [exe.run(prog, feed={"x": x}, fetch_list=[loss], scope=scope)[0]
              for _ in range(2)]
    res.append((losses, scope.get("conv2d_0.w_0"), scope.get("conv2d_0.b_0")))
    if fuse:
        p, = passed_programs(prog)
        n = sum(op.type == "fused_elementwise" for op in p.global_block().ops)
        assert n == 2, [op.type for op in p.global_block().ops]
(cl, cw, cb), (gl, gw, gb) = res
np.testing.assert_allclose(gl, cl, rtol=1e-5)
np.testing.assert_allclose(gw, cw, rtol=1e-5, atol=1e-7)
np.testing.assert_allclose(gb, cb, rtol=1e-5, atol=1e-7)

# every fused_elementwise row of the op table (heads, tails, broadcasts, bool outputs)
for case in load_all():
    if case.op != "fused_elementwise":
        continue
    for dt in case.dtypes:
        arrays = make_inputs(case, dt)
        cpu = run_op(case.op, arrays, case.attrs)["Out"]
        gpu = run_op(case.op, arrays, case.attrs, device="gpu")["Out"]
        for c, g in zip(cpu, gpu):
            assert c.shape == g.shape and c.dtype == g.dtype, (case.id, c, g)
            np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6, err_msg=case.id)
print("ok")
