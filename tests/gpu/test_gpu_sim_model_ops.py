"""The CUDA kernels of the ops added for Paddle 2 models (issue 28: adaptive pool2d,
conv2d_transpose, ...) under numba's CUDA simulator, in a subprocess: each op-table row of
these ops (rows whose id starts with one of ROWS), forward and gradient, must equal the
CPU kernel. (tests/gpu/test_gpu_sim.py runs every row as well; this one is the quick check.)
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from locations import TESTS

ROWS = ("pool2d-adaptive", "conv2d_transpose-", "depthwise_conv2d_transpose-",
        "nearest_interp_v2-", "bilinear_interp_v2-", "group_norm-", "instance_norm-", "pad3d-",
        "one_hot_v2-", "hard_swish", "hard_sigmoid", "swish", "brelu", "max_pool2d_with_index",
        "elu", "celu", "selu", "softplus", "softsign", "mish", "logsigmoid", "tanh_shrink",
        "softshrink", "hard_shrink", "thresholded_relu", "sigmoid_ce-pos_weight",
        "sigmoid_ce_grad-pos_weight", "huber_loss", "bce_loss", "kldiv_loss", "prelu-", "unfold-",
        "nll_loss-")

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from op_rows import load_all
    from numbaflow.kernels import all_op_types, get_op_def, run_op
    from numbaflow.testing.op_test import make_inputs

    ROWS = {rows!r}
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
        if not case.id.startswith(ROWS):
            continue
        for dtype in case.dtypes:
            arrays = make_inputs(case, dtype)
            out = compare(f"{{case.id}}-{{dtype}}", case.op, arrays, case.attrs)
            grad_of(case.op, arrays, out, case.full_attrs(), f"{{case.id}}-{{dtype}}")
    print("checked", checked)
    print("\\n".join(failures))
    sys.exit(1 if failures or checked < 2 * len(ROWS) else 0)
""")


@pytest.mark.gpu
@pytest.mark.slow
def test_model_ops_on_simulated_gpu_match_cpu(tmp_path):
    tests_dir = str(TESTS)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests_dir, rows=ROWS)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "checked" in r.stdout
    print(r.stdout)
