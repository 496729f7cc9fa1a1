"""NUMBAFLOW_CHECK_NAN_INF=1 on the simulated GPU: the generated fused CUDA kernel checks every
fused op's result and the run raises FloatingPointError naming the first failing one, as
the unfused program does; the kernels without checks are other kernels. Prints `OK`. Run
by tests/graph/test_nan_check_fused.py."""
import numpy as np
import numbaflow as paddle
import numbaflow.static as static
from numbaflow.kernels import scalar as S
from numbaflow.kernels.codegen import cuda as C

X = np.array([[100.0, 0.0, -1.0], [2.0, 50.0, -300.0]], np.float32)   # exp(100 * 100) = inf
exe = static.Executor(paddle.CUDAPlace(0))
failures = []

def build(fuse, body):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [2, 3], "float32")
        out = body(x)
    prog = main
    if fuse:
        bs = static.BuildStrategy()
        bs.enable_auto_fusion = True
        prog = static.CompiledProgram(main, build_strategy=bs)
    return prog, out

def error(fuse, body, feed=X):
    prog, out = build(fuse, body)
    try:
        exe.run(prog, feed={"x": feed}, fetch_list=[out])
    except FloatingPointError as e:
        return str(e)
    return None

sigm = lambda x: 1.0 / (1.0 + paddle.exp(x * 100.0))
log_exp = lambda x: paddle.nn.functional.relu(paddle.exp(paddle.log(x) * 1000.0) * 0.0 - 1.0)
for name, body, op in (("sigmoid", sigm, "exp"), ("log_exp", log_exp, "log")):
    unfused, fused = error(False, body), error(True, body)
    if unfused is None or f"op {op} " not in unfused:
        failures.append(f"{name} unfused: {unfused}")
    if fused is None or f"op {op} " not in fused or "fused_elementwise" not in fused:
        failures.append(f"{name} fused: {fused}")
# finite data passes the checked kernel, and the record does not stick
small = np.clip(X, -0.1, 0.1)
prog, out = build(True, sigm)
got, = exe.run(prog, feed={"x": small}, fetch_list=[out])
if not np.allclose(got, 1.0 / (1.0 + np.exp(small * 100.0)), rtol=1e-5):
    failures.append(f"finite: {got}")
# the check costs nothing with the flag off: the kernels without checks are others
x = S.Sym("in", value=0)
t = S.exp(x)
for src in (C.kernel_source([1.0 / (1.0 + t)], 1, 1, "float32", ("float32",)),
            C.fast_kernel_source([1.0 / (1.0 + t)], ("f",), "float32", ("float32",))):
    if "isfinite" in src or "err" in src:
        failures.append("an unchecked kernel checks: " + src)
for src in (C.kernel_source([1.0 / (1.0 + t)], 1, 1, "float32", ("float32",), (t,)),
            C.fast_kernel_source([1.0 / (1.0 + t)], ("f",), "float32", ("float32",), (t,))):
    if "isfinite" not in src or "_nan_flag(err, 1)" not in src:
        failures.append("a checked kernel does not check: " + src)
print("\n".join(failures) or "OK")
raise SystemExit(1 if failures else 0)
