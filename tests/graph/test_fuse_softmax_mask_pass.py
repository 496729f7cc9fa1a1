"""The fuse_softmax_mask pass (graph/passes/fuse_softmax_mask.py): hand-written attention
(`matmul(q, k, transpose_y=True) -> scale -> + mask -> softmax`, as tests/paddle_gpt.py
writes it) runs as fused_softmax_mask forward and backward, through a CompiledProgram
(the pipeline row, default on) and a plain Executor.run (the lowering); the losses equal
the unfused program's; a fetched intermediate or a mask that needs a gradient blocks it."""
import collections

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.compiler.compiled_program import passed_programs
from numbaflow.executor.executor import last_plan

import paddle_gpt


def _executor(fuse):
    """An Executor whose plain-Program plans get the default-on rewrites, or (`fuse`
    False: NUMBAFLOW_PLAIN_REWRITES=0) none: the unrewritten reference."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("NUMBAFLOW_PLAIN_REWRITES", "1" if fuse else "0")
        return static.Executor(paddle.CPUPlace())


def _build():
    paddle.enable_static()
    return paddle_gpt.build(paddle, np.random.default_rng(0))


def _train(fuse, compiled, steps=8):
    """Losses of `steps` AdamW steps of tests/paddle_gpt.py's GPT, and the ops run."""
    main, startup, _, loss, _, sched = _build()
    exe, scope = _executor(fuse), static.Scope()
    exe.run(startup, scope=scope)
    if compiled:
        bs = static.BuildStrategy()
        bs.fuse_softmax_mask = fuse
        prog = static.CompiledProgram(main, build_strategy=bs)
    else:
        prog = main
    losses = []
    for tokens, labels in paddle_gpt.batches(steps):
        (v,) = exe.run(prog, feed={"tokens": tokens, "labels": labels}, fetch_list=[loss],
                       scope=scope)
        losses.append(float(v))
        sched.step()
    ops = last_plan(exe).ops if not compiled else \
        passed_programs(prog)[0].global_block().ops
    # (the default-on recompute_elementwise adds a GELU per layer to the plain plan)
    ops = [op for op in ops if not op.output_arg_names[0].endswith("@RECOMPUTED")]
    return np.array(losses), collections.Counter(op.type for op in ops), prog


@pytest.mark.parametrize("compiled", [False, True], ids=["plain", "compiled"])
def test_hand_written_gpt_attention_is_fused_and_trains_the_same(compiled):
    ref, before, _ = _train(False, compiled)
    got, after, prog = _train(True, compiled)
    layers = paddle_gpt.LAYERS
    assert before["softmax"] == layers and before["softmax_grad"] == layers
    assert after["fused_softmax_mask"] == after["fused_softmax_mask_grad"] == layers
    assert after["softmax"] == after["softmax_grad"] == 0
    # per layer: scale, elementwise_add, softmax forward; softmax_grad,
    # elementwise_add_grad, scale backward -> one op each way
    assert sum(before.values()) - sum(after.values()) == 4 * layers
    assert before["scale"] - after["scale"] == 2 * layers
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    assert ref[-1] < ref[0]         # it trained (the learning rate warms up from 0)
    if compiled:
        row = [p for p in prog.passes if p.name == "fuse_softmax_mask"][0]
        assert row.changed and not row.refusals


def _attention_program(mask_grad=False, mask_first=False):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        q = static.data("q", [None, 2, 4, 3])
        q.stop_gradient = False
        mask = paddle.triu(paddle.full([4, 4], -1e9, "float32"), 1)
        if mask_grad:
            mask = static.create_parameter([4, 4], "float32")
        scores = paddle.scale(paddle.matmul(q, q, transpose_y=True), 0.5)
        if mask_first:      # a full-shape mask written first: the scores are still found
            mask = paddle.expand(mask, [2, 2, 4, 4])
        att = paddle.nn.functional.softmax(mask + scores if mask_first else scores + mask,
                                           axis=-1)
        loss = paddle.mean(paddle.matmul(att, q))
        grads = static.gradients([loss], [q])
    return main, startup, scores, att, loss, grads[0]


def _numpy_attention(q):
    z = 0.5 * q.astype(np.float64) @ np.swapaxes(q, -1, -2) + np.triu(np.full((4, 4), -1e9), 1)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_a_fetched_intermediate_blocks_the_fusion():
    main, startup, scores, att, loss, dq = _attention_program()
    q = np.random.default_rng(0).standard_normal((2, 2, 4, 3)).astype("float32")
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    # the plain path: fetching the scaled scores keeps softmax unfused
    s, a = exe.run(main, feed={"q": q}, fetch_list=[scores, att])
    assert "fused_softmax_mask" not in {op.type for op in last_plan(exe).ops}
    np.testing.assert_allclose(a, _numpy_attention(q), rtol=1e-5, atol=1e-7)
    a2, g = exe.run(main, feed={"q": q}, fetch_list=[att, dq])
    types = {op.type for op in last_plan(exe).ops}
    assert {"fused_softmax_mask", "fused_softmax_mask_grad"} <= types
    np.testing.assert_allclose(a2, a, rtol=1e-6)
    # the pass says why it refused
    compiled = static.CompiledProgram(main)
    exe.run(compiled, feed={"q": q}, fetch_list=[scores, att])
    row = [p for p in compiled.passes if p.name == "fuse_softmax_mask"][0]
    assert not row.changed
    assert any(scores.name in reason for _, reason in row.refusals), row.refusals


def test_a_mask_that_needs_a_gradient_is_not_fused():
    main, startup, _, att, loss, dq = _attention_program(mask_grad=True)
    compiled = static.CompiledProgram(main)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    q = np.ones((1, 2, 4, 3), "float32")
    exe.run(compiled, feed={"q": q}, fetch_list=[loss, dq])
    row = [p for p in compiled.passes if p.name == "fuse_softmax_mask"][0]
    assert not row.changed
    assert any("needs a gradient" in reason for _, reason in row.refusals), row.refusals


def test_a_full_shape_mask_added_first_is_still_the_mask():
    main, startup, _, att, loss, dq = _attention_program(mask_first=True)
    q = np.random.default_rng(1).standard_normal((2, 2, 4, 3)).astype("float32")
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    a, g = exe.run(main, feed={"q": q}, fetch_list=[att, dq])
    fused = [op for op in last_plan(exe).ops if op.type == "fused_softmax_mask"]
    assert len(fused) == 1 and fused[0].attrs["scale"] == 0.5
    np.testing.assert_allclose(a, _numpy_attention(q), rtol=1e-5, atol=1e-7)
    g_ref, = _executor(False).run(main, feed={"q": q}, fetch_list=[dq])
    np.testing.assert_allclose(g, g_ref, rtol=1e-5, atol=1e-7)


def test_a_classifier_bias_is_a_mask_in_inference_and_blocks_in_training():
    # fc -> softmax: `x @ w + b` then softmax is softmax(x @ w + mask=b) in a test program;
    # in training b needs its gradient, so the pass refuses and says so
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 5])
        prob = paddle.nn.functional.softmax(static.nn.fc(x, 3), axis=-1)
        test = main.clone(for_test=True)
        loss = paddle.mean(prob)
        paddle.optimizer.SGD(0.1).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    xv = np.random.default_rng(2).standard_normal((4, 5)).astype("float32")
    got, = exe.run(test, feed={"x": xv}, fetch_list=[prob.name])
    assert "fused_softmax_mask" in {op.type for op in last_plan(exe).ops}
    w, b = (np.array(static.global_scope().find_var(p.name).get_tensor())
            for p in main.all_parameters())
    z = xv.astype(np.float64) @ w + b
    want = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(1, keepdims=True), rtol=1e-5)
    compiled = static.CompiledProgram(main)
    exe.run(compiled, feed={"x": xv}, fetch_list=[loss])
    row = [p for p in compiled.passes if p.name == "fuse_softmax_mask"][0]
    assert not row.changed and "needs a gradient" in row.refusals[0][1]
