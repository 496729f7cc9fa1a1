"""The conv-epilogue passes (graph/passes/fuse_conv_epilogue.py): the LeNet CNN of
numbaflow/bench/models.py and examples/train_digits.py's CNN train with each conv's bias
(and a relu with no batch_norm between) in fused_conv2d, forward and backward, through a
CompiledProgram (the pipeline row, default on) and a plain Executor.run (the lowering);
the losses equal the unfused program's. A fetched intermediate blocks it. In an inference
program (`clone(for_test=True)`) the is_test batch_norm is folded into the conv and the
output equals the unfused test program's, also after the batch_norm's variables change.
(The op itself: the op-table rows in tests/op_rows/conv.py, forward against numpy and
gradients against finite differences; tests/gpu/test_gpu_sim_nn.py for its CUDA twin.)"""
import collections

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.bench import models
from numbaflow.compiler.compiled_program import passed_programs
from numbaflow.executor.executor import last_plan

FLAGS = ("fuse_conv_bias", "fold_conv_batch_norm")


def _executor(fuse):
    """An Executor whose plain-Program plans get the default-on rewrites, or (`fuse`
    False: NUMBAFLOW_PLAIN_REWRITES=0) none: the unrewritten reference."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("NUMBAFLOW_PLAIN_REWRITES", "1" if fuse else "0")
        return static.Executor(paddle.CPUPlace())


def _prog(main, fuse, compiled):
    """`main` as run: a CompiledProgram with both flags = `fuse`, or the plain program
    (run by `_executor(fuse)`)."""
    if compiled:
        bs = static.BuildStrategy()
        for f in FLAGS:
            setattr(bs, f, fuse)
        return static.CompiledProgram(main, build_strategy=bs)
    return main


def _ops(exe, prog, compiled):
    ops = passed_programs(prog)[0].global_block().ops if compiled else \
        last_plan(exe).ops
    return collections.Counter(op.type for op in ops)


def _train_cnn(fuse, compiled, steps=4):
    paddle.enable_static()
    paddle.seed(0)
    built = models.cnn_program(paddle)
    exe, scope = _executor(fuse), static.Scope()
    exe.run(built.startup, scope=scope)
    prog = _prog(built.main, fuse, compiled)
    losses = [float(exe.run(prog, feed=models.batch("cnn", s), fetch_list=[built.loss],
                            scope=scope)[0]) for s in range(steps)]
    return np.array(losses), _ops(exe, prog, compiled), prog


@pytest.mark.parametrize("compiled", [False, True], ids=["plain", "compiled"])
def test_cnn_conv_bias_is_fused_and_trains_the_same(compiled):
    ref, before, _ = _train_cnn(False, compiled)
    got, after, prog = _train_cnn(True, compiled)
    assert before["conv2d"] == before["conv2d_grad"] == 2
    assert after["fused_conv2d"] == after["fused_conv2d_grad"] == 2
    assert after["conv2d"] == after["conv2d_grad"] == 0
    # the two bias adds and their gradients are gone (the fc layers' stay)
    assert before["elementwise_add"] - after["elementwise_add"] == 2
    assert before["elementwise_add_grad"] - after["elementwise_add_grad"] == 2
    assert after["batch_norm"] == 2          # training: batch statistics, not folded
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    assert ref[-1] < ref[0]
    if compiled:
        row = [p for p in prog.passes if p.name == "fuse_conv_bias"][0]
        assert row.changed and not row.refusals
        assert "fold_conv_batch_norm" not in [p.name for p in prog.passes]   # trains


def _conv_relu_program(fetch_conv=False):
    """conv2d(bias) -> relu (no batch_norm between) -> mean: the relu is fused too."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 2, 6, 6])
        s = static.create_parameter([2, 6, 6], "float32", name="s")
        c = static.nn.conv2d(x * s, num_filters=3, filter_size=3, padding=1)
        y = paddle.nn.functional.relu(c)
        loss = paddle.mean(y * y)
        paddle.optimizer.SGD(0.1).minimize(loss)
    # s's gradient is the conv's Input gradient times x
    return main, startup, c, loss, main.global_block().var("s@GRAD")


@pytest.mark.parametrize("compiled", [False, True], ids=["plain", "compiled"])
def test_conv_bias_relu_fused_with_input_gradient(compiled):
    x = np.random.default_rng(1).standard_normal((2, 2, 6, 6)).astype(np.float32)
    runs = {}
    for fuse in (False, True):
        paddle.seed(0)
        main, startup, _, loss, dx = _conv_relu_program()
        exe, scope = _executor(fuse), static.Scope()
        exe.run(startup, scope=scope)
        prog = _prog(main, fuse, compiled)
        got = [exe.run(prog, feed={"x": x}, fetch_list=[loss, dx], scope=scope)
               for _ in range(3)]
        runs[fuse] = got, _ops(exe, prog, compiled)
    (ref, before), (got, after) = runs[False], runs[True]
    assert after["fused_conv2d"] == after["fused_conv2d_grad"] == 1
    assert after["relu"] == after["relu_grad"] == after["conv2d"] == 0
    assert before["relu"] == 1
    for (l0, d0), (l1, d1) in zip(ref, got):
        np.testing.assert_allclose(l1, l0, rtol=1e-5)
        np.testing.assert_allclose(d1, d0, rtol=1e-5, atol=1e-7)


def test_fetched_conv_output_blocks_the_fusion():
    paddle.seed(0)
    main, startup, c, loss, _ = _conv_relu_program()
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(startup, scope=scope)
    prog = _prog(main, True, True)
    x = np.ones((2, 2, 6, 6), np.float32)
    exe.run(prog, feed={"x": x}, fetch_list=[loss, c], scope=scope)
    assert _ops(exe, prog, True)["fused_conv2d"] == 0
    row = [p for p in prog.passes if p.name == "fuse_conv_bias"][0]
    assert not row.changed
    assert any(c.name in reason and "fetched" in reason for _, reason in row.refusals)
    # the plain path leaves it too
    exe2 = static.Executor(paddle.CPUPlace())
    exe2.run(main, feed={"x": x}, fetch_list=[loss, c], scope=scope)
    assert "fused_conv2d" not in [op.type for op in last_plan(exe2).ops]


@pytest.mark.parametrize("compiled", [False, True], ids=["plain", "compiled"])
def test_inference_program_folds_batch_norm_at_run_time(compiled):
    paddle.enable_static()
    paddle.seed(0)
    built = models.cnn_program(paddle)
    test = built.main.clone(for_test=True)
    exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
    exe.run(built.startup, scope=scope)
    for s in range(2):      # train a little: the running statistics move off 0 / 1
        exe.run(built.main, feed=models.batch("cnn", s), fetch_list=[built.loss], scope=scope)
    feed = models.batch("cnn", 5)
    names = ("bn0.w", "bn0.b", "bn1.mean", "bn1.var")
    trained = {n: scope.get(n).copy() for n in names}
    # new batch_norm parameters, as a checkpoint load sets them: the fold must follow
    loaded = {n: np.random.default_rng(i).uniform(0.5, 1.5, a.shape).astype(a.dtype)
              for i, (n, a) in enumerate(trained.items())}
    outs = {}
    for fuse in (False, True):
        e = _executor(fuse)
        prog = _prog(test, fuse, compiled)
        outs[fuse] = []
        for values in (trained, loaded):
            for n, a in values.items():
                scope.set(n, a)
            outs[fuse].append(float(e.run(prog, feed=feed, fetch_list=[built.loss],
                                          scope=scope)[0]))
        ops = _ops(e, prog, compiled)
        if fuse:
            assert ops["fused_conv2d"] == 2 and ops["batch_norm"] == 0 and ops["relu"] == 2
        else:
            assert ops["batch_norm"] == 2 and "fused_conv2d" not in ops
        if compiled and fuse:
            row = [p for p in prog.passes if p.name == "fold_conv_batch_norm"][0]
            assert row.changed and not row.refusals
    np.testing.assert_allclose(outs[True], outs[False], rtol=1e-5)
    assert abs(outs[True][1] - outs[True][0]) > 1e-4      # the new parameters were used


def test_train_digits_cnn_is_fused_in_training_and_folded_in_its_test_program(monkeypatch):
    """examples/train_digits.py --model cnn (conv -> batch_norm(act=relu), twice): plain
    Executor.run, as the example runs it. The convolutions run on one thread: this net
    turns a 1e-7 relative change of its weights into ~2e-3 of the test loss after 3 steps,
    so only sums in the same order compare at 1e-5 (split over threads, the fused bias
    gradient and elementwise_add_grad's add the samples in different orders; and conv2d_grad
    sums dFilter in the NCHWc dw tile where fused_conv2d_grad, with its bias, runs im2col:
    both on im2col here)."""
    import argparse
    from numbaflow.examples import train_digits
    from numbaflow.kernels.nn import conv, conv_im2col
    monkeypatch.setattr(conv_im2col, "parallel_threads", lambda work, units: 1)
    monkeypatch.setattr(conv, "use_nchwc", lambda k, dtype: False)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((16, 64)).astype(np.float32),
            "y": rng.integers(0, 10, (16, 1)).astype(np.int64)}
    runs = {}
    for fuse in (False, True):
        paddle.enable_static()
        paddle.seed(0)
        main, startup, test, loss, _ = train_digits.build_programs(
            argparse.Namespace(model="cnn", lr=0.01))
        exe, scope = _executor(fuse), static.Scope()
        exe.run(startup, scope=scope)
        got = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
               for _ in range(3)]
        train_ops = collections.Counter(op.type for op in last_plan(exe).ops)
        got.append(float(exe.run(test, feed=feed, fetch_list=[loss], scope=scope)[0]))
        test_ops = collections.Counter(op.type for op in last_plan(exe).ops)
        runs[fuse] = got, train_ops, test_ops
    (ref, _, before), (got, train_ops, test_ops) = runs[False], runs[True]
    assert train_ops["fused_conv2d"] == train_ops["fused_conv2d_grad"] == 2
    assert train_ops["batch_norm"] == 2
    # (the second conv's 16 -> 32 channels run on blocked activations: nchwc_layout)
    assert test_ops["fused_conv2d"] + test_ops["fused_conv2d_nchwc"] == 2
    assert test_ops["batch_norm"] == 0
    assert before["batch_norm"] == 2 and before["conv2d"] == 2
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_data_parallel_cnn_with_fused_conv_bias_trains_the_same():
    """Two CPU places: the bias gradients the fused grad op writes are summed like the
    elementwise_add_grad's were (same variables)."""
    runs = {}
    for fuse in (False, True):
        paddle.enable_static()
        paddle.seed(0)
        built = models.cnn_program(paddle)
        exe, scope = static.Executor(paddle.CPUPlace()), static.Scope()
        exe.run(built.startup, scope=scope)
        bs = static.BuildStrategy()
        bs.fuse_conv_bias = fuse
        prog = static.CompiledProgram(built.main, build_strategy=bs).with_data_parallel(
            loss_name=built.loss.name, places=[paddle.CPUPlace()] * 2)
        losses = [float(np.mean(exe.run(prog, feed=models.batch("cnn", s),
                                        fetch_list=[built.loss], scope=scope)[0]))
                  for s in range(3)]
        runs[fuse] = losses, _ops(exe, prog, True)
    (ref, before), (got, after) = runs[False], runs[True]
    assert before["fused_conv2d_grad"] == 0 and after["fused_conv2d_grad"] == 2
    np.testing.assert_allclose(got, ref, rtol=1e-5)
