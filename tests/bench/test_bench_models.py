"""models/*: the contenders, the peer-agreement check (a peer whose losses differ is not
timed), the worker protocol, and the thread budget every worker gets."""
import json
import math
import os
import stat
import sys

import numpy as np
import pytest

from numbaflow.bench import model_rows, models
from numbaflow.bench.cases import quick_config
from numbaflow.executor import threads


def test_agree_uses_a_relative_tolerance():
    ref = [2.5, 2.0, 1.5]
    assert model_rows.agree(ref, [2.5 * (1 + 5e-5), 2.0, 1.5]) is None
    why = model_rows.agree(ref, [2.5, 2.0 * (1 + 3e-4), 1.5])
    assert "step 1" in why and "rtol 0.0001" in why
    assert model_rows.agree(ref, [2.5, 2.0]) == "a different number of losses"


def test_paired_ratio_is_the_median_of_per_round_ratios():
    # round 2 is disturbed for both: the pairs cancel it, the medians of each side would not
    subject, peer = [1.0, 1.0, 5.0, 1.0], [2.0, 2.0, 10.0, 2.0]
    assert model_rows.paired_ratio(subject, peer) == 0.5


def test_contenders_full_and_quick():
    peers = {"jax": "/j/python", "torch": "/t/python", "paddle": "/p/python"}
    full = [(c.label, c.framework, c.threads) for c in model_rows.contenders(peers, 2, False)]
    assert full == [("numbaflow 2t", "numbaflow", 2), ("numbaflow 1t", "numbaflow", 1),
                    ("numbaflow 2t, one core busy", "numbaflow", 2),
                    ("jax.jit 2t", "jax", 2), ("torch eager 2t", "torch", 2),
                    ("torch.compile 2t", "torch.compile", 2),
                    ("paddle static 1t", "paddle", 1), ("paddle static 2t", "paddle", 2)]
    quick = [c.label for c in model_rows.contenders(peers, 2, True)]
    assert quick == ["numbaflow 2t", "jax.jit 2t", "torch eager 2t", "paddle static 2t"]
    with pytest.raises(ValueError, match="unknown peer 'mxnet'"):
        model_rows.contenders({"mxnet": "/m"}, 2, False)


def test_thread_budget_follows_omp_num_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert threads.budget() == 1 and threads.share(2) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert threads.budget() == min(threads.usable_cores(), _numba_max())
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert threads.share(2, total=4) == 2 and threads.share(8, total=4) == 1


def _numba_max():
    import numba
    return numba.config.NUMBA_NUM_THREADS


def test_worker_env_sets_every_pool_and_no_spinning():
    env = threads.worker_env({"PATH": "/bin", "OMP_NUM_THREADS": "8"}, 1)
    for k in threads.THREAD_VARS:
        assert env[k] == "1", k
    assert env["OMP_WAIT_POLICY"] == "PASSIVE" and env["KMP_BLOCKTIME"] == "0"
    assert "intra_op_parallelism_threads=1" in env["XLA_FLAGS"] and env["PATH"] == "/bin"
    assert "XLA_FLAGS" not in threads.worker_env({}, 2)


def test_limit_blas_sets_the_loaded_blas():
    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_info
    try:
        assert threads.limit_blas(1) == 1
        counts = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
        assert counts == {1}, counts
    finally:
        threads.limit_blas(threads.budget())


@pytest.mark.parametrize("name", ["cnn", "gpt", "mlp", "conv", "resnet20", "gpt_medium"])
def test_models_build_with_named_parameters_and_batches(name):
    import numbaflow as nf
    nf.enable_static()
    built = models.PROGRAMS[name](nf)
    names = models.parameters(built)
    assert len(names) == len(set(names))
    feed = models.batch(name)
    assert set(feed) <= {v.name for v in built.main.global_block().vars.values()}
    if name == "cnn":
        assert {"conv0.w", "bn1.mean", "bn1.var", "fc2.b"} <= set(names)
        assert feed["image"].shape == (64, 1, 28, 28)
    elif name == "gpt":
        assert {"tok_emb", "pos_emb", "h1.proj.w", "ln_f.b", "head.w"} <= set(names)
        assert set(feed) == {"tokens", "target"} and built.scheduler is not None
        mask = models.causal_mask(4)
        assert mask[0, 1] == models.MASK_VALUE and mask[1, 0] == 0 and mask[2, 2] == 0
    elif name == "resnet20":   # 19 3x3 convolutions, 2 projections, the fc
        ops = [op.type for op in built.main.global_block().ops]
        assert ops.count("conv2d") == 21 and ops.count("batch_norm") == 21
        assert {"stem.w", "s2b2.c2.bn.var", "s1b0.proj.w", "fc.w"} <= set(names)
        assert feed["image"].shape == (64, 3, 32, 32)
    elif name == "gpt_medium":
        assert {"h3.proj.w", "head.w"} <= set(names) and feed["tokens"].shape == (8, 256)
    with pytest.raises(ValueError, match="unknown model"):
        models.batch("resnet")


def test_mlp_model_first_losses_equal_numpy_by_hand():
    import numbaflow as nf
    from numbaflow.bench.baselines import NumpyMLPStep
    nf.enable_static()
    built = models.mlp_program(nf)
    exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
    exe.run(built.startup, scope=scope)
    params = [np.array(scope.get(n)) for n in models.parameters(built)]
    feed = models.batch("mlp", batch_size=16)
    ref = NumpyMLPStep(params, feed["x"], feed["y"], models.MLP["lr"])
    for _ in range(3):
        got = float(np.asarray(exe.run(built.main, feed=feed, fetch_list=[built.loss],
                                       scope=scope)[0]).ravel()[0])
        assert got == pytest.approx(float(ref()), rel=1e-4)


def _conv_valid(x, w, b):
    """Cross-correlation of NCHW x with OIHW w (no padding), plus the bias: numpy by hand."""
    k = w.shape[-1]
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", win, w) + b[None, :, None, None]


def test_conv_model_first_losses_equal_numpy_by_hand():
    # models/conv (the CNN's convolutions alone): loss = mean(conv1(pool(conv0(x)))^2)
    import numbaflow as nf
    nf.enable_static()
    built = models.conv_program(nf)
    exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
    exe.run(built.startup, scope=scope)
    p = {n: np.array(scope.get(n), np.float64) for n in models.parameters(built)}
    feed = models.batch("conv", batch_size=4)
    assert set(feed) == {"image"}
    x = np.pad(feed["image"].astype(np.float64), ((0, 0), (0, 0), (2, 2), (2, 2)))
    h = _conv_valid(x, p["conv0.w"], p["conv0.b"])
    n, c, hh, ww = h.shape
    h = h.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
    h = _conv_valid(h, p["conv1.w"], p["conv1.b"])
    assert h.shape == (4, 16, 10, 10)
    got = exe.run(built.main, feed=feed, fetch_list=[built.loss], scope=scope)[0]
    assert float(np.asarray(got).ravel()[0]) == pytest.approx(float(np.mean(h * h)), rel=1e-5)


FAKE_PEER = """
import json, sys
for line in sys.stdin:
    cmd = json.loads(line)["cmd"]
    if cmd == "quit":
        break
    out = {"losses": [100.0, 99.0, 98.0]} if cmd == "losses" else \
        {"seconds": 0.001, "median_step": 0.001}
    sys.stdout.write("@@ " + json.dumps(dict(out, rss_mb=1.0)) + "\\n")
    sys.stdout.flush()
"""


def _fake_python(tmp_path):
    script = tmp_path / "fake_peer.py"
    script.write_text(FAKE_PEER)
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return str(python)


@pytest.mark.slow
def test_a_peer_with_other_losses_is_reported_not_timed(tmp_path):
    import numbaflow
    cfg = quick_config()
    cfg.quick, cfg.repeat, cfg.min_time, cfg.threads = False, 2, 0.005, 2
    cfg.peer_python = {"jax": _fake_python(tmp_path)}
    root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
    rows = model_rows.measure_model("mlp", cfg, root)
    busy = [r for r in rows if r.subject.endswith("one core busy")]
    assert len(busy) == 1 and busy[0].baseline == "numbaflow 1t", busy
    assert busy[0].checks.keys() == {"ratio <= 2x"}     # against the quiet 1-thread step
    by_peer = {r.baseline: r for r in rows if r not in busy}
    assert set(by_peer) == {"numbaflow 1t", "jax.jit 2t"}, [(r.baseline, r.note) for r in rows]
    bad = by_peer["jax.jit 2t"]
    assert bad.failed and "losses differ from numbaflow's" in bad.note and bad.t_baseline is None
    ok = by_peer["numbaflow 1t"]      # numbaflow at 1 thread agrees with itself at 2
    assert not ok.failed and math.isfinite(ok.ratio) and ok.ratio > 0
    assert ok.t_subject.n == 2 and ok.t_baseline.n == 2 and "peak RSS" in ok.note
    assert ok.checks.keys() == {"ratio <= 1x"}
    json.dumps(ok.checks)


def test_worker_protocol_reports_errors_as_json(tmp_path):
    import io

    from numbaflow.bench import worker
    out = io.StringIO()
    worker.serve("numbaflow", stdin=io.StringIO('{"cmd": "bogus"}\n{"cmd": "quit"}\n'),
                 stdout=out)
    answer = json.loads(out.getvalue().split("@@ ", 1)[1])
    assert answer == {"error": "ValueError: unknown command 'bogus'"}
    worker.write_arrays(str(tmp_path), {"a": np.arange(6, dtype=np.float32).reshape(2, 3)})
    back = worker.read_numpy(str(tmp_path))["a"]
    assert back.dtype == np.float32 and back.shape == (2, 3) and back[1, 2] == 5


def test_scheduler_workers_run_the_blas_at_one_thread():
    # numba's threads are the only pool: a scheduler's concurrent ops split their work over
    # them, the BLAS never adds threads of its own (issue 27: 4 busy threads on 2 cores)
    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_info

    from numbaflow.executor.scheduler import Scheduler, threading_layer
    if threading_layer() not in ("omp", "tbb"):
        pytest.skip("a pooled scheduler needs a thread-safe numba layer")

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    threads.limit_blas(2)
    pooled, plain = Scheduler([(), (), (0, 1)], num_threads=2), Scheduler([(), (0,)], 1)
    try:
        seen = []
        pooled.run([lambda: seen.append(blas_threads())] * 3)
        assert seen[0] == {1}, seen
        plain.run([lambda: seen.append(blas_threads())] * 2)
        assert seen[-1] == {1}, seen
    finally:
        pooled.close()
        plain.close()
