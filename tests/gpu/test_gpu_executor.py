"""Whole programs on CUDAPlace(0) under numba's CUDA simulator (in a subprocess): training
steps equal the CPU run; parameters stay on the device between runs and the Scope hands
out host copies; mixing CPU and GPU executors on one scope stays consistent."""
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import numpy as np
    import numbaflow as paddle
    import numbaflow.static as static
    from numbaflow.utils import unique_name

    def build(opt):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), unique_name.guard():
            x = static.data("x", [None, 6])
            y = static.data("y", [None, 1], "int64")
            h = static.nn.fc(x, 5, activation="tanh")
            logits = static.nn.fc(h, 3)
            loss = paddle.nn.functional.cross_entropy(logits, y)
            opt.minimize(loss)
        return main, startup, loss

    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((4, 6)).astype("float32"),
                rng.integers(0, 3, (4, 1)).astype("int64")) for _ in range(2)]
    results = {}
    for place in (paddle.CPUPlace(), paddle.CUDAPlace(0)):
        paddle.seed(1)
        main, startup, loss = build(paddle.optimizer.Momentum(0.1, 0.9))
        scope = static.Scope()
        exe = static.Executor(place)
        exe.run(startup, scope=scope)
        losses = [exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0]
                  for x, y in batches]
        results[type(place).__name__] = (losses, {n: scope.get(n) for n in
                                                  ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0")})
    (cl, cp), (gl, gp) = results["CPUPlace"], results["CUDAPlace"]
    np.testing.assert_allclose(gl, cl, rtol=1e-5)
    for n in cp:
        np.testing.assert_allclose(gp[n], cp[n], rtol=1e-5, atol=1e-7, err_msg=n)

    # the GPU scope: set on the host, run on the device, read back on the host, then a
    # CPU executor on the same scope sees the device's latest values
    paddle.seed(2)
    main, startup, loss = build(paddle.optimizer.SGD(0.5))
    scope = static.Scope()
    gexe, cexe = static.Executor(paddle.CUDAPlace(0)), static.Executor(paddle.CPUPlace())
    gexe.run(startup, scope=scope)
    scope.set("fc_1.b_0", np.array([1.0, 2.0, 3.0], "float32"))
    x, y = batches[0]
    gexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    after_gpu = scope.get("fc_1.b_0")
    assert not np.allclose(after_gpu, [1.0, 2.0, 3.0])
    ref = static.Scope()
    for n in scope.local_var_names():
        ref.set(n, scope.get(n))
    cexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    cexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=ref)
    for n in ("fc_0.w_0", "fc_1.b_0"):
        np.testing.assert_allclose(scope.get(n), ref.get(n), rtol=1e-6, err_msg=n)
    # and the GPU executor picks up what the CPU run wrote
    g1, = gexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    c1, = cexe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=ref)
    np.testing.assert_allclose(g1, c1, rtol=1e-5)
    print("ok")
""")

CNN_SCRIPT = textwrap.dedent("""
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
""")


@pytest.mark.gpu
@pytest.mark.slow
def test_cnn_two_steps_on_simulated_cuda_place_match_cpu(tmp_path):
    """Issue 3: conv + batch_norm + relu + pool + fc, 2 steps on CUDAPlace(0) == CPU."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", CNN_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-3000:] + r.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.slow
def test_training_on_simulated_cuda_place_matches_cpu(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-3000:] + r.stderr[-3000:]


BAD_LABEL_SCRIPT = textwrap.dedent("""
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
""")


@pytest.mark.slow
@pytest.mark.gpu
def test_bad_label_on_simulated_cuda_place_raises_like_cpu_and_keeps_parameters(tmp_path):
    """Issue 9: the kernel records the bad label on the device, the executor raises the
    CPU path's ValueError after the run and restores every persistable."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", BAD_LABEL_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-3000:] + r.stderr[-3000:]
