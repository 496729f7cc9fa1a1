"""models/resnet20, models/gpt_medium and ResNet-20's inference rows (issue 27): the
per-step tolerance, the onnxruntime contender, the inference program and its export, and
(with real peer interpreters) that the torch, JAX and onnxruntime workers reproduce
numbaflow's losses / outputs.

The peer tests run only where NUMBAFLOW_PEER_FILE names a JSON file of interpreters
({"torch": PYTHON, "jax": PYTHON}, as `numbaflow-bench --peer-file`); elsewhere they skip."""
import json
import os

import numpy as np
import pytest

from numbaflow.bench import model_rows, models, worker


def test_agree_takes_a_tolerance_per_step_and_outputs_a_floor():
    ref = [2.0, 1.5, 1.2]
    rtols = model_rows.MODEL_RTOL["resnet20"]
    assert rtols[:2] == (model_rows.LOSS_RTOL,) * 2 and rtols[2] > model_rows.LOSS_RTOL
    assert model_rows.agree(ref, [2.0, 1.5, 1.2 * (1 + 1e-3)], rtols) is None
    why = model_rows.agree(ref, [2.0, 1.5 * (1 + 3e-4), 1.2], rtols)
    assert "step 1" in why and "rtol 0.0001" in why
    # outputs: relative to the largest |reference|, so a logit near 0 is not judged alone
    out = [100.0, 0.001, -50.0]
    assert model_rows.agree_outputs(out, [100.0, 0.002, -50.0]) is None
    why = model_rows.agree_outputs(out, [100.0, 0.001, -49.9])
    assert why.startswith("outputs differ") and "output 2" in why


def test_inference_rows_run_onnxruntime_from_the_torch_interpreter():
    peers = {"jax": "/j/python", "torch": "/t/python", "paddle": "/p/python"}
    got = [(c.label, c.framework, c.python)
           for c in model_rows.contenders(peers, 2, False, infer=True)]
    me = got[0][2]
    assert got == [("numbaflow 2t", "numbaflow", me), ("numbaflow 1t", "numbaflow", me),
                   ("numbaflow 2t, one core busy", "numbaflow", me),
                   ("onnxruntime 2t", "onnxruntime", "/t/python"),
                   ("paddle static 1t", "paddle", "/p/python"),
                   ("paddle static 2t", "paddle", "/p/python")]
    names = [c.name for c in model_rows.model_cases()]
    assert {"models/resnet20_infer_b1", "models/resnet20_infer_b32"} <= set(names)
    assert set(model_rows.ONNX_TARGET) == {"models/" + m for m in models.INFER}
    assert set(model_rows.PEER_MODELS) >= {"resnet20", "gpt_medium"}


def test_resnet20_inference_program_has_no_loss_and_feeds_the_image_alone():
    import numbaflow as nf
    nf.enable_static()
    built = models.resnet20_program(nf)
    ops = [op.type for op in built.test.global_block().ops]
    assert ops.count("conv2d") == 21 and "cross_entropy" not in " ".join(ops)
    assert not any(t.endswith("_grad") or t == "momentum" for t in ops)
    assert all(op.attr("is_test") for op in built.test.global_block().ops
               if op.type == "batch_norm")
    for name, n in (("resnet20_infer_b1", 1), ("resnet20_infer_b32", 32)):
        feed = models.batch(name)
        assert set(feed) == {"image"} and feed["image"].shape == (n, 3, 32, 32)


@pytest.mark.slow
def test_inference_reference_exports_what_it_runs(tmp_path):
    # the numbaflow reference worker of an inference row writes its ONNX export; onnx's own
    # reference evaluator (numpy, independent of numbaflow's kernels) computes the same logits
    reference = pytest.importorskip("onnx.reference")
    step = worker.StaticStep("numbaflow", "resnet20_infer_b1", str(tmp_path), True)
    logits = step.step()
    assert logits.shape == (1, models.RESNET20["classes"])
    evaluator = reference.ReferenceEvaluator(str(tmp_path / worker.ONNX_FILE))
    want, = evaluator.run(None, {"image": step.feed["image"]})
    assert model_rows.agree_outputs(worker.values(want), worker.values(logits)) is None


def _peer_python(framework):
    path = os.environ.get("NUMBAFLOW_PEER_FILE")
    if not path:
        pytest.skip("set NUMBAFLOW_PEER_FILE to a JSON file of peer interpreters "
                    '({"torch": PYTHON, "jax": PYTHON}) to run the peer workers')
    with open(path, encoding="utf-8") as f:
        python = json.load(f).get("torch" if framework == "onnxruntime" else framework)
    if not python:
        pytest.skip(f"{path} names no interpreter for {framework}")
    return python


@pytest.mark.slow
@pytest.mark.parametrize("model, framework", [
    ("resnet20", "torch"), ("resnet20", "jax"), ("gpt_medium", "torch"),
    ("gpt_medium", "jax"), ("resnet20_infer_b1", "onnxruntime"),
    ("lstm", "torch"), ("lstm", "jax"), ("lstm", "paddle")])
def test_peer_reproduces_numbaflow(model, framework, tmp_path):
    python = _peer_python(framework)
    import numbaflow
    ref = worker.StaticStep("numbaflow", model, str(tmp_path), True)
    infer = model in models.INFER
    want = [worker.values(ref.step()) for _ in range(1 if infer else model_rows.AGREE_STEPS)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
    w = model_rows.Worker(model_rows.Contender(framework, framework, python, 1), root)
    try:
        w.ask("setup", model=model, dir=str(tmp_path))
        got = w.ask("losses", steps=len(want))["losses"]
    finally:
        w.close()
    if infer:
        assert model_rows.agree_outputs(want[0], got[0]) is None
    else:
        assert model_rows.agree(want, got, model_rows.MODEL_RTOL.get(model)
                                or model_rows.LOSS_RTOL) is None, (want, got)
