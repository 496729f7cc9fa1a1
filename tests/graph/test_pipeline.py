"""The pass table (compiler/pipeline.py), and CONTRIBUTING's "Adding a graph pass" worked
example run as written: a new pass, on by default, costs its file plus one row."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.compiler import pipeline
from numbaflow.compiler.pipeline import Context, Row, passes_for
from numbaflow.executor.executor import cached_plans
from numbaflow.graph.passes import Refused, Replacement, Rewrite
from numbaflow.utils import unique_name
from numbaflow.compiler.compiled_program import passed_programs

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


# ---- the pass file: numbaflow/graph/passes/fold_scale_chain.py would hold this class
class FoldScaleChain(Rewrite):
    """scale(scale(x, a), b) without biases is scale(x, a * b): one pass over x."""
    name = "fold_scale_chain"
    anchors = ("scale",)            # a candidate starts at the outer scale

    def match(self, block, op):
        inner = block.producer(op.inputs["X"][0])
        if inner is None or inner.type != "scale":
            return None             # not this pattern
        mid = inner.outputs["Out"][0]
        if op.attrs["bias"] or inner.attrs["bias"]:
            raise Refused("a scale has a bias")
        if mid.name in self.protected or mid.persistable or len(block.consumers(mid)) > 1:
            raise Refused(f"{mid.name} is fetched, persistable or read by another op")
        attrs = dict(op.attrs, scale=op.attrs["scale"] * inner.attrs["scale"])
        new = block.make_op("scale", inner.inputs, op.outputs, attrs)
        return Replacement(old=[inner, op], new=[new], at=[op])


# ---- the row, in compiler/pipeline.py's PIPELINE (before the data-parallel rewrite)
ROW = Row("fold_scale_chain", FoldScaleChain, "run `scale(scale(x, a), b)` as one scale.",
          default=True)


@pytest.fixture
def with_row(monkeypatch):
    monkeypatch.setattr(pipeline, "PIPELINE", pipeline.PIPELINE[:-1] + [ROW] +
                        pipeline.PIPELINE[-1:])


def net():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3], "float32")
        y = paddle.nn.functional.relu(paddle.scale(paddle.scale(x, scale=2.0), scale=0.5))
        out = paddle.mean(static.nn.fc(y, 2))
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    return main, out, exe, scope


def scales(ops):
    return [op.attrs["scale"] for op in ops if op.type == "scale"]


def test_the_worked_example_default_on_pass_is_one_file_and_one_row(with_row):
    main, out, exe, scope = net()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    feed = {"x": x}
    want = np.maximum(x, 0) @ scope.get(main.all_parameters()[0].name) + \
        scope.get(main.all_parameters()[1].name)
    # a plain Program gets a default-on pass on its plan, the user's program unchanged
    got, = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, want.mean(), rtol=1e-5)
    assert scales(cached_plans(exe)[-1].ops) == [1.0]
    assert scales(main.global_block().ops) == [2.0, 0.5]
    # a CompiledProgram: the flag comes from the row, on by default
    bs = static.BuildStrategy()
    assert bs.fold_scale_chain is True
    compiled = static.CompiledProgram(main, build_strategy=bs)
    got, = exe.run(compiled, feed=feed, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, want.mean(), rtol=1e-5)
    passed, = passed_programs(compiled)
    assert scales(passed.global_block().ops) == [1.0]
    assert [p.name for p in compiled.passes if p.changed] == ["fold_scale_chain"]
    bs.fold_scale_chain = False                         # switched off: both scales run
    off = static.CompiledProgram(main, build_strategy=bs)
    exe.run(off, feed=feed, fetch_list=[out], scope=scope)
    passed, = passed_programs(off)
    assert scales(passed.global_block().ops) == [2.0, 0.5]
    with pytest.raises(AttributeError, match="did you mean 'fold_scale_chain'"):
        bs.fold_scale_chai = True


def test_a_fetched_intermediate_is_refused_with_a_reason(with_row):
    main, out, exe, scope = net()
    inner = next(op.outputs["Out"][0] for op in main.global_block().ops if op.type == "scale")
    compiled = static.CompiledProgram(main)
    feed = {"x": np.ones((2, 3), np.float32)}
    mid, _ = exe.run(compiled, feed=feed, fetch_list=[inner, out], scope=scope)
    np.testing.assert_allclose(mid, 2.0)
    fold, = [p for p in compiled.passes if p.name == "fold_scale_chain"]
    assert not fold.changed and "fetched" in fold.refusals[0][1]
    # the plain Program's plan keeps both scales too
    mid, _ = exe.run(main, feed=feed, fetch_list=[inner, out], scope=scope)
    np.testing.assert_allclose(mid, 2.0)
    assert scales(cached_plans(exe)[-1].ops) == [2.0, 0.5]


def test_rows_decide_when_a_pass_applies():
    bs = static.BuildStrategy()
    bs.fuse_all_optimizer_ops = True
    one = [p.name for _, p in passes_for(bs.effective(), Context(devices=1))]
    assert one == ["fuse_conv_bias", "fuse_softmax_mask", "fuse_sgd_into_gemm",
                   "fuse_all_optimizer_ops", "recompute_elementwise"]
    # a weight updated inside the gemm would miss the other devices' gradients
    several = [p.name for _, p in passes_for(bs.effective(),
                                             Context(devices=2, data_parallel=True))]
    assert several == ["fuse_conv_bias", "fuse_softmax_mask", "fuse_all_optimizer_ops",
                       "recompute_elementwise", "multi_devices"]
    # the default strategy runs only the default-on rows (and in an inference program the
    # batch_norm fold and the blocked layout, not the backward's recompute)
    assert [p.name for _, p in passes_for(static.BuildStrategy().effective(), Context())] == \
        ["fuse_conv_bias", "fuse_softmax_mask", "recompute_elementwise"]
    assert [p.name for _, p in passes_for(static.BuildStrategy().effective(),
                                          Context(training=False))] == \
        ["fold_conv_batch_norm", "fuse_conv_bias", "nchwc_layout", "fuse_softmax_mask"]


def test_build_strategy_flags_and_help_come_from_the_rows():
    bs = static.BuildStrategy()
    for row in pipeline.PIPELINE:
        if row.flag:
            assert getattr(bs, row.flag) is row.default
            assert f"- {row.flag}" in static.BuildStrategy.__doc__
    # the default-on rows
    assert bs.fuse_softmax_mask and bs.fuse_conv_bias and bs.fold_conv_batch_norm
    assert pipeline.PIPELINE[-1].data_parallel       # the rewrite is the last row


def test_every_fetched_intermediate_survives_every_pass():
    """A second angle on 'a fusion pass drops a fetched intermediate': with every pass
    flag on, fetch each forward intermediate and compare it with the plain program's."""
    import numbaflow.nn.functional as F
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 6], "float32")
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 8, activation="relu")
        h2 = paddle.nn.functional.sigmoid(static.nn.fc(h, 8) + h)
        loss = paddle.mean(F.cross_entropy(static.nn.fc(h2, 3), y))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    forward = [v for op in main.global_block().ops if op.role == "forward"
               for v in op.output_vars() if not v.persistable]
    assert len(forward) >= 8
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((5, 6)).astype(np.float32),
            "y": rng.integers(0, 3, (5, 1)).astype(np.int64)}
    exe = static.Executor()
    plain_scope, fused_scope = static.Scope(), static.Scope()
    exe.run(startup, scope=plain_scope)
    for v in main.list_vars():
        if v.persistable and v.name in plain_scope:
            fused_scope.set(v.name, plain_scope.get(v.name))
    want = exe.run(main, feed=feed, fetch_list=forward, scope=plain_scope)
    bs = static.BuildStrategy()
    for flag in pipeline.flags():
        setattr(bs, flag, True)
    compiled = static.CompiledProgram(main, build_strategy=bs)
    got = exe.run(compiled, feed=feed, fetch_list=forward, scope=fused_scope)
    assert any(p.changed for p in compiled.passes), [p.name for p in compiled.passes]
    for v, g, w in zip(forward, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=v.name)


def trained_net():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        x = static.data("x", [None, 3], "float32")
        out = paddle.mean(static.nn.fc(paddle.nn.functional.relu(x + 1.0), 2))
        paddle.optimizer.SGD(0.1).minimize(out)
    exe, scope = static.Executor(), static.Scope()
    exe.run(startup, scope=scope)
    return main, out, exe, scope


def test_training_or_inference_column():
    """A program trains when it has backward or optimizer ops; its clone for_test does not.
    The optimizer rows run on training programs only, the others on both; a row may also
    be for inference programs only."""
    main, out, exe, scope = trained_net()
    test_program = main.clone(for_test=True)
    assert pipeline.is_training(main) and not pipeline.is_training(test_program)
    bs = static.BuildStrategy()
    bs.fuse_all_optimizer_ops = bs.enable_auto_fusion = bs.sync_batch_norm = True
    names = lambda training: [p.name for _, p in passes_for(bs.effective(),
                                                            Context(training=training))]
    assert names(True) == ["sync_batch_norm", "fuse_conv_bias", "fuse_softmax_mask",
                           "fuse_sgd_into_gemm", "fuse_all_optimizer_ops", "auto_fusion",
                           "recompute_elementwise"]
    # (a forward-only program may still compute batch statistics: sync_batch_norm stays)
    assert names(False) == ["sync_batch_norm", "fold_conv_batch_norm", "fuse_conv_bias",
                            "nchwc_layout", "fuse_softmax_mask", "auto_fusion"]
    for r in pipeline.PIPELINE:
        assert r.programs in pipeline.PROGRAMS, r
    only_inference = Row("enable_auto_fusion", FoldScaleChain, programs="inference")
    assert only_inference.applies(bs, Context(training=False))
    assert not only_inference.applies(bs, Context(training=True))
    with pytest.raises(ValueError, match="programs must be one of.*'test'"):
        Row("fold_scale_chain", FoldScaleChain, programs="test")


def test_an_inference_program_is_compiled_without_the_optimizer_passes():
    # end to end: the CompiledProgram of the for_test clone runs only the passes that
    # apply to inference, and gives the plain program's numbers
    main, out, exe, scope = trained_net()
    test_program = main.clone(for_test=True)
    feed = {"x": np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)}
    want, = exe.run(test_program, feed=feed, fetch_list=[out], scope=scope)
    bs = static.BuildStrategy()
    bs.fuse_all_optimizer_ops = bs.enable_auto_fusion = True
    compiled = static.CompiledProgram(test_program, build_strategy=bs)
    got, = exe.run(compiled, feed=feed, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [p.name for p in compiled.passes] == ["fold_conv_batch_norm", "fuse_conv_bias",
                                                 "nchwc_layout", "fuse_softmax_mask",
                                                 "auto_fusion"]
    train = static.CompiledProgram(main, build_strategy=bs)
    exe.run(train, feed=feed, fetch_list=[out], scope=scope)
    assert [p.name for p in train.passes] == ["fuse_conv_bias", "fuse_softmax_mask",
                                              "fuse_sgd_into_gemm",
                                              "fuse_all_optimizer_ops", "auto_fusion",
                                              "recompute_elementwise"]
