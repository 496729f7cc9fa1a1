"""Activation memory (issue 27 item 5): what a plan keeps alive between forward and backward.

Each test computes the plan's buffer assignment from a small program and checks its bytes
against the sizes written out by hand, plus the numbers against numpy."""
from types import SimpleNamespace

import numpy as np

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.executor.executor import cached_plans
from numbaflow.kernels.registry import value_inputs
from numbaflow.utils import unique_name

N, D = 16, 256
S = N * D * 4          # bytes of one [N, D] float32 temporary


def _op(type, inputs, outputs, attrs=None):
    return SimpleNamespace(type=type, inputs=inputs, outputs=outputs, attrs=attrs or {"axis": -1})


def test_value_inputs_leave_out_what_only_gives_a_shape():
    d = {"Out@GRAD": ["d"]}
    add = _op("elementwise_add_grad", {"X": ["x"], "Y": ["y"], **d},
              {"X@GRAD": ["dx"], "Y@GRAD": ["dy"]})
    assert value_inputs(add) == ["d"]
    # elementwise_mul's dX = d * y reads y, not x; with dY wanted too, both
    mul_dx = _op("elementwise_mul_grad", {"X": ["x"], "Y": ["y"], **d}, {"X@GRAD": ["dx"]})
    assert sorted(value_inputs(mul_dx)) == ["d", "y"]
    mul = _op("elementwise_mul_grad", {"X": ["x"], "Y": ["y"], **d},
              {"X@GRAD": ["dx"], "Y@GRAD": ["dy"]})
    assert sorted(value_inputs(mul)) == ["d", "x", "y"]
    reshape = _op("reshape2_grad", {"X": ["x"], **d}, {"X@GRAD": ["dx"]}, {"shape": [-1]})
    assert value_inputs(reshape) == ["d"]
    gemm = _op("mul_grad", {"X": ["x"], "Y": ["w"], **d}, {"X@GRAD": ["dx"], "Y@GRAD": ["dw"]},
               {"x_num_col_dims": 1, "y_num_col_dims": 1})
    assert value_inputs(gemm) == ["x", "w", "d"]


def _run(main, startup, feed, fetch):
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    out = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    return out, cached_plans(exe)[-1], scope


def test_a_gradient_that_needs_only_a_shape_does_not_keep_the_forward_tensor():
    # a = 3x, h = a + b, out = tanh(h), loss = mean(out): elementwise_add_grad takes a
    # (X) for its shape only, so a dies at the forward add (h runs in place in it) and
    # the peak is out and its gradient, two [N, D] tensors; keeping a made it three
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D], "float32")
        b = static.create_parameter([D], "float32", name="b",
                                    default_initializer=paddle.nn.initializer.Constant(0.5))
        out = paddle.tanh(paddle.scale(x, 3.0) + b)
        loss = paddle.mean(out)
        db = static.append_backward(loss, parameter_list=[b])[0][1]
    xv = np.random.default_rng(0).standard_normal((N, D)).astype(np.float32)
    (dbv,), plan, _ = _run(main, startup, {"x": xv}, [db])
    live = plan.assignment.peak_live_bytes
    assert 2 * S <= live < 2 * S + S // 2, live / S
    t = np.tanh(3.0 * xv.astype(np.float64) + 0.5)
    np.testing.assert_allclose(dbv, ((1 - t * t) / t.size).sum(0), rtol=1e-5, atol=1e-9)


def test_buffers_are_packed_by_lifetime_not_by_walk_order():
    # A = 2x [N, D] dies at r = sum(A); t = 3r is small but, allocated in walk order, took
    # A's big buffer (the only free one) and held it while B = x + t needed another big
    # one. Packed largest first, A and B share one buffer and r, t get small ones.
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, D], "float32")
        r = paddle.sum(paddle.scale(x, 2.0), axis=1, keepdim=True)
        loss = paddle.mean(x + paddle.scale(r, 3.0))
    strategy = static.BuildStrategy()
    strategy.enable_inplace = False
    compiled = static.CompiledProgram(main, build_strategy=strategy)
    xv = np.random.default_rng(1).standard_normal((N, D)).astype(np.float32)
    exe = static.Executor(paddle.CPUPlace())
    lossv, = exe.run(compiled, feed={"x": xv}, fetch_list=[loss], scope=static.Scope())
    stats = compiled.memory_stats()
    assert stats["pool_bytes"] < 1.5 * S, stats["pool_bytes"] / S
    x64 = xv.astype(np.float64)
    np.testing.assert_allclose(lossv, np.mean(x64 + 6.0 * x64.sum(1, keepdims=True)),
                               rtol=1e-5)
