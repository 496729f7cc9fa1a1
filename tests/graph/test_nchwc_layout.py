"""The nchwc_layout pass (graph/passes/nchwc_layout.py) on the ResNet-20 `for_test` program
of numbaflow/bench/models.py: with it, every convolution after the first (3 channels) runs
on blocked activations (one nchwc_pack after the first conv, one nchwc_unpack before the
pool), and the logits equal the program's with the pass off (to float32 rounding) at 1, 2
and 3 threads, through a CompiledProgram and a plain Executor.run; a fetched intermediate
is unpacked and equal too; on a GPU place the pass refuses, saying why. (The ops against
numpy: tests/kernels/test_conv_blocked.py.)"""
import collections

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.bench import models
from numbaflow.compiler.compiled_program import last_plan
from numbaflow.executor.executor import last_plan as plain_last_plan
from numbaflow.graph.passes.nchwc_layout import NchwcLayout
from numbaflow.kernels.nn import conv_im2col


@pytest.fixture(scope="module")
def resnet():
    paddle.enable_static()
    paddle.seed(0)
    built = models.PROGRAMS["resnet20"](paddle)
    scope = static.Scope()
    static.Executor(paddle.CPUPlace()).run(built.startup, scope=scope)
    feed = {"image": np.random.default_rng(1).standard_normal((3, 3, 32, 32))
            .astype(np.float32)}
    return built, scope, feed


def _run(built, scope, feed, on, fetch=()):
    bs = static.BuildStrategy()
    bs.nchwc_layout = on
    prog = static.CompiledProgram(built.test, build_strategy=bs)
    exe = static.Executor(paddle.CPUPlace())
    outs = exe.run(prog, feed=feed, fetch_list=[built.output, *fetch], scope=scope)
    return outs, collections.Counter(op.type for op in last_plan(prog).ops)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_resnet20_for_test_equals_the_program_without_the_pass(monkeypatch, resnet, threads):
    built, scope, feed = resnet
    monkeypatch.setattr(conv_im2col, "parallel_threads",
                        lambda work, units: min(threads, units))
    (off,), ops_off = _run(built, scope, feed, False)
    (on,), ops = _run(built, scope, feed, True)
    assert ops_off["fused_conv2d_nchwc"] == 0
    assert ops["fused_conv2d_nchwc"] == 20 and ops["fused_conv2d"] == 1
    assert ops["nchwc_pack"] == 1 and ops["nchwc_unpack"] == 1
    _close(on, off)


def test_plain_run_takes_the_pass_and_matches(resnet):
    built, scope, feed = resnet
    exe = static.Executor(paddle.CPUPlace())
    got = exe.run(built.test, feed=feed, fetch_list=[built.output], scope=scope)[0]
    ops = collections.Counter(op.type for op in plain_last_plan(exe).ops)
    assert ops["fused_conv2d_nchwc"] == 20 and ops["nchwc_unpack"] == 1
    (off,), _ = _run(built, scope, feed, False)
    _close(got, off)


def test_a_fetched_activation_is_unpacked(resnet):
    built, scope, feed = resnet
    mid = [op for op in built.test.global_block().ops if op.type == "relu"][5].output_vars()[0]
    (_, want), _ = _run(built, scope, feed, False, [mid])
    (_, got), ops = _run(built, scope, feed, True, [mid])
    assert ops["nchwc_unpack"] == 2 and got.shape == want.shape
    _close(got, want)


def test_refused_on_a_gpu(resnet):
    built, _, _ = resnet
    prog = built.test.clone()
    p = NchwcLayout(device="gpu")
    assert not p.run(prog)
    assert "nchwc_pack" not in [op.type for op in prog.global_block().ops]
    assert any("CPU kernels only" in why for _, why in p.refusals)
