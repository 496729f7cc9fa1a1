"""fuse_sgd_into_gemm: an fc layer's SGD update folded into its weight-gradient GEMM
(one BLAS call with beta = 1): the same numbers as the unfused step, and refused (with
the reason) wherever moving the update would change them."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from numbaflow.graph.passes import apply_passes
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def mlp(dtype="float32", opt=None, sizes=(20, 16, 12, 5)):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        h = static.data("x", [None, sizes[0]], dtype)
        y = static.data("y", [None, 1], "int64")
        for i, n in enumerate(sizes[1:]):
            h = static.nn.fc(h, n, activation="relu" if i < len(sizes) - 2 else None)
        loss = paddle.mean(F.cross_entropy(h, y))
        (opt or paddle.optimizer.SGD(learning_rate=0.1)).minimize(loss)
    return main, startup, loss


def feeds(n, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((8, 20)).astype(dtype),
             "y": rng.integers(0, 5, (8, 1)).astype(np.int64)} for _ in range(n)]


def train(main, startup, loss, batches, strategy=None):
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    prog = main if strategy is None else static.CompiledProgram(main, build_strategy=strategy)
    losses = [float(exe.run(prog, feed=f, fetch_list=[loss], scope=scope)[0]) for f in batches]
    return losses, {p.name: scope.get(p.name) for p in main.all_parameters()}, prog


@pytest.mark.parametrize("flag", ["fuse_all_optimizer_ops", "enable_auto_fusion"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_folded_update_trains_like_the_unfused_program(flag, dtype):
    main, startup, loss = mlp(dtype)
    batches = feeds(6, dtype)
    want_losses, want, _ = train(main, startup, loss, batches)
    bs = static.BuildStrategy()
    setattr(bs, flag, True)
    got_losses, got, compiled = train(main, startup, loss, batches, bs)
    passed, = passed_programs(compiled)
    types = [op.type for op in passed.global_block().ops]
    assert types.count("mul_grad_sgd") == 3 and "mul_grad" not in types
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got_losses, want_losses, rtol=rtol)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=rtol, err_msg=k)


def test_a_fetched_weight_gradient_is_not_folded():
    main, startup, loss = mlp()
    passed = main.clone()
    p, = apply_passes(passed, ["fuse_sgd_into_gemm"], protected={"fc_1.w_0@GRAD"})
    types = [op.type for op in passed.global_block().ops]
    assert types.count("mul_grad_sgd") == 2 and types.count("mul_grad") == 1
    assert any("fc_1.w_0@GRAD" in why for _, why in p.refusals)


def test_momentum_and_weight_decay_are_not_folded():
    main, _, _ = mlp(opt=paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9))
    passed = main.clone()
    p, = apply_passes(passed, ["fuse_sgd_into_gemm"])
    assert not p.changed and len(p.refusals) == 3
    main, _, _ = mlp(opt=paddle.optimizer.SGD(learning_rate=0.1, weight_decay=0.01))
    passed = main.clone()
    p, = apply_passes(passed, ["fuse_sgd_into_gemm"])
    # the decay reads the parameter between the gradient and the update
    assert not p.changed and p.refusals


def test_not_on_gpu_and_not_across_devices():
    main, _, _ = mlp()
    p, = apply_passes(main.clone(), ["fuse_sgd_into_gemm"], device="gpu")
    assert not p.changed and "GPU" in p.refusals[0][1]
    main, startup, loss = mlp()
    bs = static.BuildStrategy()
    bs.fuse_all_optimizer_ops = True
    c = static.CompiledProgram(main, build_strategy=bs).with_data_parallel(
        loss_name=loss.name, places=[paddle.CPUPlace()] * 2)
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    exe.run(c, feed=feeds(1)[0], fetch_list=[loss], scope=scope)
    passed, = passed_programs(c)
    assert "mul_grad_sgd" not in [op.type for op in passed.global_block().ops]
