"""The CUDA kernels of the ops added for Paddle programs (slice, strided_slice, one_hot, top_k,
layer_norm, sigmoid_cross_entropy_with_logits, the extra optimizers) under numba's CUDA
simulator, in a subprocess: each op-table row of these ops, forward and gradient, must
equal the CPU kernel, plus shapes bigger than the rows (several blocks) and the cases a
GPU kernel cannot raise on. (tests/gpu/test_gpu_sim.py runs every row as well; this one is
the quick check for these ops.)
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from locations import TESTS

OPS = ("slice", "strided_slice", "one_hot", "top_k", "layer_norm", "sigmoid_cross_entropy_with_logits",
       "adagrad", "rmsprop", "adamax", "adamw", "lamb", "auc")

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from op_rows import load_all
    from numbaflow.kernels import all_op_types, get_op_def, run_op
    from numbaflow.testing.op_test import make_inputs

    OPS = {ops!r}
    types = set(all_op_types())
    rng = np.random.default_rng(0)
    failures, checked = [], 0

    def compare(label, op, arrays, attrs):
        global checked
        cpu = run_op(op, arrays, attrs)
        gpu = run_op(op, arrays, attrs, device="gpu")
        for slot, want in cpu.items():
            got = gpu[slot]
            tol = 1e-5 if want.dtype == np.float32 else 1e-11
            if got.shape != want.shape or got.dtype != want.dtype or \\
                    not np.allclose(got, want, rtol=tol, atol=tol):
                failures.append(f"{{label}} {{slot}}: {{got}} vs {{want}}")
        checked += 1
        return cpu

    def grad_of(op, arrays, out, attrs, label):
        gt = op + "_grad"
        if gt not in types:
            return
        ins = {{}}
        for s in get_op_def(gt).inputs:
            if s.name.endswith("@GRAD"):
                ref = out[s.name[:-5]]
                ins[s.name] = rng.uniform(-1, 1, ref.shape).astype(ref.dtype)
            elif s.name in arrays:
                ins[s.name] = arrays[s.name]
            elif s.name in out:
                ins[s.name] = out[s.name]
        compare(label + " grad", gt, ins, attrs)

    for case in load_all():
        if case.op not in OPS:
            continue
        for dtype in case.dtypes:
            arrays = make_inputs(case, dtype)
            out = compare(f"{{case.id}}-{{dtype}}", case.op, arrays, case.attrs)
            grad_of(case.op, arrays, out, case.full_attrs(), f"{{case.id}}-{{dtype}}")

    u = lambda *s: rng.uniform(-1, 1, s)
    EXTRA = [   # several blocks / rows longer than a block
        ("slice", {{"Input": u(70, 9, 5)}}, {{"axes": [0, 2], "starts": [3, 1], "ends": [-2, 4],
                                             "decrease_axis": [], "infer_flags": []}}),
        ("strided_slice", {{"Input": u(70, 9, 5)}}, {{"axes": [0, 2], "starts": [60, 0],
                                                     "ends": [2, 5], "strides": [-3, 2]}}),
        ("top_k", {{"X": u(130, 40)}}, {{"k": 5}}),
        ("layer_norm", {{"X": u(130, 70), "Scale": u(70), "Bias": u(70)}}, {{}}),
        ("one_hot", {{"X": rng.integers(0, 9, (300, 1))}}, {{"depth": 9}}),
    ]
    for op, arrays, attrs in EXTRA:
        full = dict(get_op_def(op).attrs, **attrs)
        out = compare(f"extra {{op}}", op, arrays, full)
        if op != "one_hot":
            grad_of(op, arrays, out, full, f"extra {{op}}")

    # a GPU kernel cannot raise: an index out of range gives a row of zeros
    r = run_op("one_hot", {{"X": np.array([[1], [5]])}}, {{"depth": 3}}, device="gpu")
    if not (r["Out"][1] == 0).all() or r["Out"][0, 1] != 1:
        failures.append(f"one_hot out of range: {{r['Out']}}")
    print("checked", checked)
    print("\\n".join(failures))
    sys.exit(1 if failures or checked < 20 else 0)
""")


@pytest.mark.gpu
@pytest.mark.slow
def test_new_ops_on_simulated_gpu_match_cpu(tmp_path):
    tests_dir = str(TESTS)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests_dir, ops=OPS)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "checked" in r.stdout
