"""The CUDA kernels of the tensor-API ops (kernels/tensor/tensor_ops.py, gather_ops.py,
sampling.py) under numba's CUDA simulator, in a subprocess: every op-table row of these
ops, forward and gradient, must equal the CPU kernel; plus shapes spanning several blocks.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from locations import TESTS

OPS = ("where", "expand_as_v2", "tril_triu", "range", "linspace", "cumsum", "rsqrt", "erf",
       "silu", "relu6", "sign", "pad", "squared_l2_norm", "gather", "take_along_axis", "argsort", "multinomial")

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from op_rows import load_all
    from numbaflow.kernels import all_op_types, get_op_def, run_op
    from numbaflow.testing.op_test import make_inputs

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
        if case.op not in {ops!r}:
            continue
        for dtype in case.dtypes:
            arrays = make_inputs(case, dtype)
            out = compare(f"{{case.id}}-{{dtype}}", case.op, arrays, case.attrs)
            kinds = {{k: (a[0] if isinstance(a, list) else a).dtype.kind
                      for k, a in arrays.items()}}
            if all(v in "fb" or k == "Index" for k, v in kinds.items()):
                grad_of(case.op, arrays, out, case.full_attrs(), f"{{case.id}}-{{dtype}}")

    u = lambda *s: rng.uniform(-1, 1, s)
    EXTRA = [   # several blocks
        ("tril_triu", {{"X": u(3, 40, 50)}}, {{"lower": False, "diagonal": 2}}),
        ("cumsum", {{"X": u(30, 20, 7)}}, {{"axis": 1}}),
        ("gather", {{"X": u(50, 30)}}, {{"axis": 1}}),
        ("take_along_axis", {{"Input": u(60, 20),
                              "Index": rng.integers(0, 20, (60, 30))}}, {{"Axis": 1}}),
        ("range", {{}}, {{"start": 3, "end": 900, "step": 2, "dtype": "int64"}}),
        ("argsort", {{"X": rng.integers(0, 5, (40, 30)).astype(float)}}, {{"descending": True}}),
        ("linspace", {{}}, {{"start": -2.0, "stop": 5.0, "num": 301}}),
    ]
    EXTRA[2][1]["Index"] = rng.integers(-30, 30, 70)
    for op, arrays, attrs in EXTRA:
        full = dict(get_op_def(op).attrs, **attrs)
        out = compare(f"extra {{op}}", op, arrays, full)
        grad_of(op, arrays, out, full, f"extra {{op}}")
    print("checked", checked)
    print("\\n".join(failures))
    sys.exit(1 if failures or checked < 40 else 0)
""")


@pytest.mark.gpu
@pytest.mark.slow
def test_tensor_ops_on_simulated_gpu_match_cpu(tmp_path):
    tests_dir = str(TESTS)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests_dir, ops=OPS)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "checked" in r.stdout
