"""The fuse_gemm_epilogue pass (graph/passes/fuse_gemm_epilogue.py): the small GPT of
numbaflow/bench/models.py trains with each MLP block's `gelu(fc(x))` in fused_gemm_epilogue,
forward and backward (a CompiledProgram with BuildStrategy.fuse_gemm_epilogue; off by
default), and the losses equal the unfused program's over a few steps; an MLP's
`relu(fc(x))` likewise. Refused, with the reason: a fetched
pre-activation, a matmul_v2 with trans_x. (The op: tests/op_rows/gemm_epilogue.py and
tests/kernels/test_gemm_epilogue.py.)"""
import collections

import numpy as np

import numbaflow as paddle
from numbaflow import static
from numbaflow.bench import models
from numbaflow.compiler.compiled_program import passed_programs
from numbaflow.graph.passes import get_pass

SMALL_GPT = dict(models.GPT, batch=2, ctx=8, d_model=16, heads=2, warmup=1)


def _train_gpt(fuse, steps=3):
    paddle.enable_static()
    paddle.seed(0)
    built = models.gpt_program(paddle, SMALL_GPT)
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(built.startup, scope=scope)
    bs = static.BuildStrategy()
    bs.fuse_gemm_epilogue = fuse
    bs.recompute_elementwise = False    # this pass alone (the recompute adds gelu copies)
    prog = static.CompiledProgram(built.main, build_strategy=bs)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        seq = rng.integers(0, SMALL_GPT["vocab"], (2, 9)).astype(np.int64)
        feed = {"tokens": seq[:, :-1].copy(), "target": seq[:, 1:, None].copy()}
        losses.append(float(exe.run(prog, feed=feed, fetch_list=[built.loss],
                                    scope=scope)[0]))
        built.scheduler.step()
    return np.array(losses), _types(prog)


def _types(prog):
    return collections.Counter(op.type for op in passed_programs(prog)[0].global_block().ops)


def test_gpt_mlp_gelu_is_fused_and_trains_the_same():
    ref, before = _train_gpt(False)
    got, after = _train_gpt(True)
    layers = SMALL_GPT["layers"]
    assert before["gelu"] == before["gelu_grad"] == layers
    assert after["fused_gemm_epilogue"] == after["fused_gemm_epilogue_grad"] == layers
    assert after["gelu"] == after["gelu_grad"] == 0
    assert before["mul"] - after["mul"] == layers
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    assert ref[-1] != ref[0]        # the steps train


def _mlp(fetch_pre=False):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 12])
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 16, activation="relu")
        pre = main.global_block().ops[-2].output_vars()[0]     # the bias add's output
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 4), y)
        paddle.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss, pre


def test_mlp_relu_fused_and_trains_the_same():
    rng = np.random.default_rng(2)
    feed = {"x": rng.standard_normal((10, 12)).astype(np.float32),
            "y": rng.integers(0, 4, (10, 1)).astype(np.int64)}
    runs = {}
    for fuse in (False, True):
        paddle.seed(0)
        main, startup, loss, _ = _mlp()
        exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
        exe.run(startup, scope=scope)
        bs = static.BuildStrategy()
        bs.fuse_gemm_epilogue = fuse
        prog = static.CompiledProgram(main, build_strategy=bs)
        losses = [float(exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)[0])
                  for _ in range(3)]
        runs[fuse] = np.array(losses), _types(prog)
    (ref, before), (got, after) = runs[False], runs[True]
    assert before["fused_gemm_epilogue"] == 0
    assert after["fused_gemm_epilogue"] == after["fused_gemm_epilogue_grad"] == 1
    assert after["relu"] == after["relu_grad"] == 0
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert ref[-1] < ref[0]


def test_a_fetched_pre_activation_is_refused_with_the_reason():
    main, _, _, pre = _mlp()
    p = get_pass("fuse_gemm_epilogue", protected={pre.name})
    assert not p.run(main)
    assert any(pre.name in why and "fetched" in why for _, why in p.refusals), p.refusals


def test_matmul_with_trans_x_is_refused_with_the_reason():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [5, 3])
        w = static.create_parameter([5, 4], "float32", name="w")
        b = static.create_parameter([4], "float32", name="b")
        out = paddle.nn.functional.gelu(paddle.matmul(x, w, transpose_x=True) + b)
        paddle.mean(out)
    p = get_pass("fuse_gemm_epilogue")
    assert not p.run(main)
    assert any("trans_x" in why for _, why in p.refusals), p.refusals
