"""The fuse_flash_attention pass (graph/passes/fuse_flash_attention.py): hand-written
attention (tests/paddle_gpt.py: matmul -> scale -> + mask -> softmax -> matmul) and
F.scaled_dot_product_attention run as one flash_attention forward and one backward in a
CompiledProgram with BuildStrategy.fuse_flash_attention (off by default: a plain
Executor.run does not fuse); the GPT's losses equal the unfused program's; an inference
program fuses its forward alone; a fetched probability matrix, dropout on the weights
and a GPU device are refused with their reasons."""
import collections

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.compiler.compiled_program import passed_programs
from numbaflow.graph.passes import get_pass

import paddle_gpt

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def _compiled(program, fuse):
    bs = static.BuildStrategy()
    bs.fuse_flash_attention = fuse
    return static.CompiledProgram(program, build_strategy=bs)


def _train(fuse, steps=4):
    """Losses of `steps` AdamW steps of tests/paddle_gpt.py's GPT and the op counts run."""
    paddle.enable_static()
    main, startup, _, loss, _, sched = paddle_gpt.build(paddle, np.random.default_rng(0))
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    prog = _compiled(main, fuse)
    losses = []
    for tokens, labels in paddle_gpt.batches(steps):
        (v,) = exe.run(prog, feed={"tokens": tokens, "labels": labels}, fetch_list=[loss],
                       scope=scope)
        losses.append(float(v))
        sched.step()
    ops = passed_programs(prog)[0].global_block().ops
    return np.array(losses), collections.Counter(op.type for op in ops), prog


def test_hand_written_gpt_attention_is_one_op_each_way_and_trains_the_same():
    ref, before, _ = _train(False)
    got, after, prog = _train(True)
    layers = paddle_gpt.LAYERS
    assert after["flash_attention"] == after["flash_attention_grad"] == layers
    assert after["softmax"] == after["fused_softmax_mask"] == 0
    assert after["matmul_v2"] == before["matmul_v2"] - 2 * layers
    assert after["matmul_v2_grad"] == before["matmul_v2_grad"] - 2 * layers
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    row = [p for p in prog.passes if p.name == "fuse_flash_attention"][0]
    assert row.changed and not row.refusals


def _sdpa_program(dropout_p=0.0, fetch_weights=False):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        q = static.data("q", [None, 5, 2, 3])
        q.stop_gradient = False
        out = paddle.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=dropout_p,
                                                                is_causal=True)
        loss = paddle.sum(out * out)
        grads = static.gradients([loss], [q])
    weights = [op for op in main.global_block().ops if op.type == "fused_softmax_mask"][0]
    return main, startup, out, grads[0], weights.outputs["Out"][0]


def _numpy_sdpa(q):
    """Causal softmax(q q^T / sqrt(3)) q per batch and head, Paddle's [B, T, H, D] layout."""
    x = np.swapaxes(q.astype(np.float64), 1, 2)
    s = x @ np.swapaxes(x, -1, -2) / np.sqrt(3) + np.triu(np.full((5, 5), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.swapaxes(p / p.sum(-1, keepdims=True) @ x, 1, 2)


def test_scaled_dot_product_attention_is_fused_and_equals_numpy():
    main, startup, out, dq, _ = _sdpa_program()
    q = np.random.default_rng(1).standard_normal((2, 5, 2, 3)).astype("float32")
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    compiled = _compiled(main, True)
    got, g = exe.run(compiled, feed={"q": q}, fetch_list=[out, dq])
    types = [op.type for op in passed_programs(compiled)[0].global_block().ops]
    assert "flash_attention" in types and "flash_attention_grad" in types
    assert "fused_softmax_mask" not in types and types.count("matmul_v2") == 0
    np.testing.assert_allclose(got, _numpy_sdpa(q), rtol=1e-5, atol=1e-6)
    g_ref, = exe.run(_compiled(main, False), feed={"q": q}, fetch_list=[dq])
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case", ["fetched-weights", "dropout", "gpu"])
def test_refusals_say_why(case):
    main, startup, out, dq, weights = _sdpa_program(dropout_p=0.5 if case == "dropout" else 0.0)
    protected = [weights.name] if case == "fetched-weights" else []
    p = get_pass("fuse_flash_attention", protected=protected,
                 device="gpu" if case == "gpu" else "cpu")
    assert not p.run(main)
    reason = {"fetched-weights": f"{weights.name} is fetched",
              "dropout": "products reading the probabilities", "gpu": "on a GPU"}[case]
    assert any(reason in r for _, r in p.refusals), p.refusals


def test_an_inference_program_fuses_the_forward_alone():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        q = static.data("q", [None, 5, 2, 3])
        out = paddle.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    q_val = np.random.default_rng(2).standard_normal((3, 5, 2, 3)).astype("float32")
    exe = static.Executor(paddle.CPUPlace())
    compiled = _compiled(main, True)
    got, = exe.run(compiled, feed={"q": q_val}, fetch_list=[out])
    types = [op.type for op in passed_programs(compiled)[0].global_block().ops]
    assert types.count("flash_attention") == 1 and "matmul_v2" not in types
    np.testing.assert_allclose(got, _numpy_sdpa(q_val), rtol=1e-5, atol=1e-6)
