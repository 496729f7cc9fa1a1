"""The recompute_elementwise pass (graph/passes/recompute_elementwise.py) on a small MLP
with two GELU layers, `mean((gelu(gelu(x W1 + b1) W2 + b2) W3 + b3)^2)`: each next fc's
`mul_grad` reads a GELU's output, `gelu_grad` its input, so the pass recomputes the
outputs in the backward.
Through a plain Executor.run (the lowering's default-on rewrites) and a CompiledProgram at
1 and 2 threads: the same losses and gradients as the unrewritten program, the gradients
equal to finite differences of a numpy forward written from the maths, a smaller memory
plan, and the refusals (an input that would die, a fetched output)."""
import math

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.compiler.compiled_program import passed_programs
from numbaflow.executor.executor import last_plan

N, D, H, O = 16, 8, 64, 4
NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


def _build(fetch_gelu=False):
    paddle.enable_static()
    paddle.seed(3)
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, D])
        g = x
        for k in (1, 2):
            g = paddle.nn.functional.gelu(static.nn.fc(
                g, H, weight_attr=paddle.ParamAttr(name=f"w{k}"),
                bias_attr=paddle.ParamAttr(name=f"b{k}")))
        out = static.nn.fc(g, O, weight_attr=paddle.ParamAttr(name="w3"),
                           bias_attr=paddle.ParamAttr(name="b3"))
        loss = paddle.mean(out * out)
        grads = static.append_backward(loss)
    fetch = [loss] + [dict((p.name, gr) for p, gr in grads)[n] for n in NAMES]
    return main, startup, fetch + ([g] if fetch_gelu else [])


def _feed():
    return {"x": np.random.default_rng(0).standard_normal((N, D)).astype(np.float32)}


def _run(recompute, compiled=False, threads=1, fetch_gelu=False):
    """(loss and gradients, the scope's weights, executor, program as run)."""
    main, startup, fetch = _build(fetch_gelu)
    with pytest.MonkeyPatch.context() as env:     # plain runs: the default rewrites, or none
        env.setenv("NUMBAFLOW_PLAIN_REWRITES", "1" if recompute or compiled else "0")
        exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    prog = main
    if compiled:
        bs, es = static.BuildStrategy(), static.ExecutionStrategy()
        bs.recompute_elementwise, es.num_threads = recompute, threads
        prog = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
            loss_name=fetch[0].name, exec_strategy=es, places=[paddle.CPUPlace()])
    got = exe.run(prog, feed=_feed(), fetch_list=fetch, scope=scope)
    weights = {n: np.array(scope.find_var(n).get_tensor()) for n in NAMES}
    return [np.asarray(v) for v in got], weights, exe, prog


def _loss(w, x):
    """The program's loss in float64, from the maths (exact GELU with erf)."""
    g = x
    for k in (1, 2):
        h = g @ w[f"w{k}"] + w[f"b{k}"]
        g = 0.5 * h * (1.0 + np.vectorize(math.erf)(h / math.sqrt(2.0)))
    out = g @ w["w3"] + w["b3"]
    return np.mean(out * out)


def _recomputed(ops):
    return [op for op in ops if any(v.name.endswith("@RECOMPUTED") for v in op.output_vars())]


def test_plain_run_recomputes_the_gelu_and_keeps_less():
    ref, weights, exe_ref, _ = _run(False)
    got, same_weights, exe, _ = _run(True)
    # (the square's product is recomputed too: reduce_mean_grad takes it, its input lives)
    again = [op for op in _recomputed(last_plan(exe).ops) if op.type == "gelu"]
    assert len(again) == 2 and not _recomputed(last_plan(exe_ref).ops)
    for op in again:
        readers = [r for r in last_plan(exe).ops if op.outputs["Out"][0] in r.input_vars()]
        assert [r.type for r in readers] == ["mul_grad"]
    for a, b, n in zip(got, ref, ("loss",) + NAMES):
        np.testing.assert_array_equal(a, b, err_msg=n)      # the same kernels on the same values
    # the first GELU's output [N, H] no longer lives through the second layer's backward
    size = N * H * 4
    before, after = last_plan(exe_ref).assignment, last_plan(exe).assignment
    assert after.peak_live_bytes <= before.peak_live_bytes - size
    assert sum(after.sizes) < sum(before.sizes)
    # gradients against finite differences of the numpy forward (float64)
    x = _feed()["x"].astype(np.float64)
    w = {n: v.astype(np.float64) for n, v in same_weights.items()}
    assert abs(got[0] - _loss(w, x)) < 1e-5 * abs(got[0]) + 1e-6
    rng = np.random.default_rng(1)
    for k, n in enumerate(NAMES):
        for idx in [tuple(rng.integers(0, s) for s in w[n].shape) for _ in range(3)]:
            up, down = {**w, n: w[n].copy()}, {**w, n: w[n].copy()}
            up[n][idx] += 1e-5
            down[n][idx] -= 1e-5
            fd = (_loss(up, x) - _loss(down, x)) / 2e-5
            assert abs(got[k + 1][idx] - fd) < 1e-3 * abs(fd) + 1e-5, (n, idx)


@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_program_same_numbers_and_refusals(threads):
    ref = _run(False, compiled=True, threads=threads)[0]
    got, _, exe, prog = _run(True, compiled=True, threads=threads)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    row = [p for p in prog.passes if p.name == "recompute_elementwise"][0]
    assert row.changed
    # each fc's bias add is read by the backward (gelu_grad, the square's gradient), but
    # recomputing it would keep the GEMM's output (read by nothing there) alive
    adds = [(what, r) for what, r in row.refusals if what.startswith("elementwise_add")]
    assert len(adds) == 3
    for what, reason in adds:
        gemm = what.split(" -> ")[1].replace(".tmp_1", ".tmp_0")
        assert f"its input {gemm} dies at op" in reason and f"keep {gemm} alive" in reason


def test_fetched_output_is_refused():
    got, _, exe, prog = _run(True, compiled=True, fetch_gelu=True)
    row = [p for p in prog.passes if p.name == "recompute_elementwise"][0]
    fetched = passed_programs(prog)[0].global_block().ops
    gelus = [op.outputs["Out"][0].name for op in fetched if op.type == "gelu"]
    # the second GELU's output is fetched: kept, not recomputed; the first one is
    assert [n for n in gelus if n.endswith("@RECOMPUTED")] == [gelus[0] + "@RECOMPUTED"]
    assert [r for w, r in row.refusals if w == f"gelu -> {gelus[1]}"] == [
        f"{gelus[1]} is fetched or persistable: it stays alive anyway"]
