"""The fused optimizer kernels on the simulated GPU equal the CPU kernels (4 fused ops x 2
dtypes x 2 launch budgets); prints `checked N`. Run by tests/graph/test_fuse_optimizer.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels import run_op
from numbaflow.kernels.optim import multi_update
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs

rng = np.random.default_rng(0)
shapes = [(3, 4), (5,), (1,), (0,), (2, 3), (7,)]
u = lambda s: rng.uniform(-1, 1, s)
ins = {"Param": [u(s) for s in shapes], "Grad": [u(s) for s in shapes],
       "LearningRate": [np.array([0.1 * (i + 1)], "float32") for i in range(6)],
       "Velocity": [u(s) for s in shapes], "Moment1": [u(s) for s in shapes],
       "Moment2": [np.abs(u(s)) for s in shapes],
       "Beta1Pow": [np.array([0.9 ** (i + 1)]) for i in range(6)],
       "Beta2Pow": [np.array([0.999 ** (i + 1)]) for i in range(6)]}
slots = {"fused_sgd": ("Param", "Grad", "LearningRate"),
         "fused_momentum": ("Param", "Grad", "Velocity", "LearningRate"),
         "fused_adam": ("Param", "Grad", "LearningRate", "Moment1", "Moment2",
                        "Beta1Pow", "Beta2Pow"),
         "fused_adamw": ("Param", "Grad", "LearningRate", "Moment1", "Moment2",
                         "Beta1Pow", "Beta2Pow")}
checked = 0
for budget in (multi_update.CUDA_PARAM_BYTES, 56 * 10 * 2):   # one launch; 3 launches
    multi_update.CUDA_PARAM_BYTES = budget
    for op, names in slots.items():
        for dt in ("float32", "float64"):
            args = {k: [a.astype(dt) if k != "LearningRate" else a for a in ins[k]]
                    for k in names}
            attrs = {"use_nesterov": True} if op == "fused_momentum" else {}
            cpu = run_op(op, args, attrs)
            gpu = run_op(op, args, attrs, device="gpu")
            for k in cpu:
                for i, (a, b) in enumerate(zip(cpu[k], gpu[k])):
                    assert a.dtype == b.dtype and a.shape == b.shape, (op, k, i)
                    np.testing.assert_allclose(b, a, rtol=1e-6, err_msg=f"{op} {k}[{i}]")
            checked += 1
assert multi_update.max_params_per_launch(10) == 2

# training steps on CUDAPlace, with the pass and without it, equal the CPU run without
# it: parameters, moments and beta powers (advanced by the adam ops themselves)
def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 4])
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 3, activation="tanh")
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 2), y)
        paddle.optimizer.Adam(0.1).minimize(loss)
    return main, startup, loss
feed = {"x": rng.standard_normal((4, 4)).astype("float32"),
        "y": rng.integers(0, 2, (4, 1))}
out = {}
for place, fuse in ((paddle.CPUPlace(), False), (paddle.CUDAPlace(0), False),
                    (paddle.CUDAPlace(0), True)):
    paddle.seed(1)
    main, startup, loss = build()
    prog = main
    if fuse:
        bs = static.BuildStrategy()
        bs.fuse_all_optimizer_ops = True
        prog = static.CompiledProgram(main, build_strategy=bs)
    scope, exe = static.Scope(), static.Executor(place)
    exe.run(startup, scope=scope)
    losses = [exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)[0]
              for _ in range(2)]
    out[fuse, type(place).__name__] = (losses, {v.name: scope.get(v.name)
                                                for v in main.list_vars() if v.persistable})
(passed,) = passed_programs(prog)
assert "fused_adam" in [op.type for op in passed.global_block().ops]
cl, cp = out[False, "CPUPlace"]
b2 = np.float32(0.999)
assert cp["fc_0.w_0_beta2_pow_acc_0"].tolist() == [b2 * b2 * b2]     # 2 steps from b2
for gl, gp in (out[False, "CUDAPlace"], out[True, "CUDAPlace"]):
    np.testing.assert_allclose(gl, cl, rtol=1e-5)
    assert gp.keys() == cp.keys() and len(cp) > 10
    for n in cp:
        np.testing.assert_allclose(gp[n], cp[n], rtol=1e-5, atol=1e-7, err_msg=n)
print("checked", checked)
