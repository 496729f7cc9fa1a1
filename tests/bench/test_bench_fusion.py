"""numbaflow-bench fusion/<flag>/<model>: every fusion flag on every model case, against the
same program through CompiledProgram with every fusion flag off."""
import math

import pytest

from numbaflow.bench import __main__ as bench
from numbaflow.bench import fusion
from numbaflow.bench.cases import all_cases, quick_config
from numbaflow.compiler.compiled_program import last_plan


def test_every_flag_on_every_model_is_a_case():
    names = [c.name for c in all_cases() if c.name.startswith("fusion/")]
    assert names == [f"fusion/{f}/{m}" for f in fusion.FLAGS for m in fusion.MODELS] + \
        ["fusion/fold_conv_batch_norm/cnn_inference"]
    assert {"fuse_conv_bias", "fuse_softmax_mask"} <= set(fusion.FLAGS)    # default-on ones
    assert bench.select(all_cases(), ["fusion/enable_auto_fusion/"], False)[0].name == \
        "fusion/enable_auto_fusion/cnn"


def test_quick_skips_the_big_models():
    case = {c.name: c for c in all_cases()}["fusion/enable_auto_fusion/gpt"]
    rows, failed = bench.run_case(case, quick_config())
    assert not failed and rows[0].note.startswith("skipped: --quick runs the MLP only")


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["enable_auto_fusion", "fuse_relu_depthwise_conv"])
def test_quick_mlp_row(flag):
    """The flagged and unfused programs agree (checked before timing); the row has a finite
    ratio; a flag that changed nothing says so and is judged as firing nowhere."""
    cfg = quick_config()
    cfg.threads = 1
    case = {c.name: c for c in all_cases()}[f"fusion/{flag}/mlp"]
    (row,), failed = bench.run_case(case, cfg)
    assert not failed, row.note
    assert math.isfinite(row.ratio) and row.ratio > 0 and row.t_subject.n == cfg.repeat
    assert row.baseline == "no flag" and row.note.startswith("CPU time, 1 thread")
    if flag == "fuse_relu_depthwise_conv":      # the MLP has no depthwise convolution
        assert "no pass changed the program" in row.note
        assert row.checks == {"fires only where it pays": True}
    else:
        assert "auto_fusion fired" in row.note and list(row.checks) == ["ratio <= 1x"]


@pytest.mark.slow
@pytest.mark.parametrize("flag,model", [("fuse_conv_bias", "cnn"),
                                        ("fold_conv_batch_norm", "cnn_inference")])
def test_a_default_on_flag_is_measured_against_a_baseline_without_it(flag, model):
    import numbaflow as nf
    nf.enable_static()
    plain = fusion.Contender(nf, model, None)
    flagged = fusion.Contender(nf, model, flag, plain.weights)
    assert not any(getattr(plain.build_strategy, f)
                   for f in fusion.FLAGS + fusion.INFERENCE_FLAGS)
    assert plain.step() == pytest.approx(flagged.step(), rel=fusion.LOSS_RTOL)
    assert not plain.fired()[0]
    changed, passes = flagged.fired()
    assert changed and [p.name for p in passes if p.changed] == [flag]
    ops = {op.type for op in last_plan(flagged.compiled).ops}
    assert "fused_conv2d" in ops and "batch_norm" not in ops if model.endswith("inference") \
        else "fused_conv2d" in ops
