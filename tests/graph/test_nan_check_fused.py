"""NUMBAFLOW_CHECK_NAN_INF inside auto-fused kernels (issue 17, item 6).

`1 / (1 + exp(100 x))` makes an Inf in exp that the division turns back into 0: the
fused kernel's outputs are finite, so checking outputs alone (as before) let it pass. The
reference is the unfused program under the same flag: it names the op `exp`.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static

X = np.array([[100.0, 0.0, -1.0], [2.0, 50.0, -300.0]], np.float32)   # exp(100 * 100) = inf


def build(fuse):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [2, 3], "float32")
        out = 1.0 / (1.0 + paddle.exp(x * 100.0))
    prog = main
    if fuse:
        bs = static.BuildStrategy()
        bs.enable_auto_fusion = True
        prog = static.CompiledProgram(main, build_strategy=bs)
    return prog, out


def run(fuse):
    prog, out = build(fuse)
    return static.Executor(paddle.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[out])[0]


def error_of(fuse):
    with pytest.raises(FloatingPointError) as e:
        run(fuse)
    return str(e.value)


def test_fused_kernel_checks_each_sub_op(monkeypatch):
    # without the flag both runs agree and are finite (the Inf is only inside)
    monkeypatch.delenv("NUMBAFLOW_CHECK_NAN_INF", raising=False)
    plain, fused = run(False), run(True)
    np.testing.assert_allclose(fused, plain, rtol=1e-6)
    assert np.isfinite(fused).all()
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(plain, 1.0 / (1.0 + np.exp(X * 100.0)), rtol=1e-6)

    monkeypatch.setenv("NUMBAFLOW_CHECK_NAN_INF", "1")
    unfused_msg, fused_msg = error_of(False), error_of(True)
    assert "op exp " in unfused_msg                  # the reference: the unfused run names exp
    assert "fused_elementwise" in fused_msg and "op exp " in fused_msg, fused_msg

    # finite data passes the checked kernel and gives the unchecked numbers
    prog, out = build(True)
    small = np.clip(X, -0.1, 0.1)
    got, = static.Executor(paddle.CPUPlace()).run(prog, feed={"x": small}, fetch_list=[out])
    np.testing.assert_allclose(got, 1.0 / (1.0 + np.exp(small * 100.0)), rtol=1e-5)


def test_first_failing_sub_op_is_named(monkeypatch):
    """log(x) gives NaN for x < 0 before exp overflows: program order decides, as unfused."""
    monkeypatch.setenv("NUMBAFLOW_CHECK_NAN_INF", "1")
    msgs = []
    for fuse in (False, True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [2, 3], "float32")
            y = paddle.exp(paddle.log(x) * 1000.0)
            out = paddle.nn.functional.relu(y * 0.0 - 1.0)
        prog = main
        if fuse:
            bs = static.BuildStrategy()
            bs.enable_auto_fusion = True
            prog = static.CompiledProgram(main, build_strategy=bs)
        with pytest.raises(FloatingPointError) as e:
            static.Executor(paddle.CPUPlace()).run(prog, feed={"x": X}, fetch_list=[out])
        msgs.append(str(e.value))
    assert "op log " in msgs[0]
    assert "op log " in msgs[1] and "fused_elementwise" in msgs[1], msgs[1]


GPU_SCRIPT = textwrap.dedent("""
    import numpy as np
    import numbaflow as paddle
    import numbaflow.static as static
    from numbaflow.kernels import scalar as S
    from numbaflow.kernels.codegen import cuda as C

    X = np.array(%r, np.float32)
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
    print("\\n".join(failures) or "OK")
    raise SystemExit(1 if failures else 0)
""" % X.tolist())


@pytest.mark.slow
@pytest.mark.gpu
def test_fused_gpu_kernel_checks_each_sub_op(tmp_path):
    """The same on a (simulated) GPU: the generated CUDA kernel checks every fused op's
    result, records the first failing one in the device's error record, and the run
    raises FloatingPointError naming it, as the unfused program does."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NUMBAFLOW_CHECK_NAN_INF="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", GPU_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "OK" in r.stdout, r.stdout[-2000:]
