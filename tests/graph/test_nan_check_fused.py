"""NUMBAFLOW_CHECK_NAN_INF inside auto-fused kernels (issue 17, item 6).

`1 / (1 + exp(100 x))` makes an Inf in exp that the division turns back into 0: the
fused kernel's outputs are finite, so checking outputs alone (as before) let it pass. The
reference is the unfused program under the same flag: it names the op `exp`.
"""

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from simulator import run_sim

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


@pytest.mark.slow
@pytest.mark.gpu
def test_fused_gpu_kernel_checks_each_sub_op():
    """The same on a (simulated) GPU: the generated CUDA kernel checks every fused op's
    result, records the first failing one in the device's error record, and the run
    raises FloatingPointError naming it, as the unfused program does."""
    r = run_sim("nan_check_fused", timeout=900, env={"NUMBAFLOW_CHECK_NAN_INF": "1"})
    assert "OK" in r.stdout, r.stdout[-2000:]
