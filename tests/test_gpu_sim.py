"""GPU kernels under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), in a subprocess:
the simulator must be selected before numba.cuda is first imported.

Every elementwise row of the op table runs through the op's CUDA kernel (rendered from
the same scalar body as the CPU kernel) and must equal the CPU kernel's result.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from op_rows import load_all
    from numbaflow.kernels import get_op_def, run_op
    from numbaflow.kernels.registry import ELEMENTWISE
    from numbaflow.testing.op_test import make_inputs

    checked, failures = 0, []
    for case in load_all():
        opdef = get_op_def(case.op)
        if not opdef.has(ELEMENTWISE):
            continue
        for dtype in case.dtypes:
            arrays = make_inputs(case, dtype)
            cpu = run_op(case.op, arrays, case.attrs)
            gpu = run_op(case.op, arrays, case.attrs, device="gpu")
            for slot, want in cpu.items():
                got = gpu[slot]
                tol = 1e-5 if np.dtype(getattr(want, "dtype", "f8")) == np.float32 else 1e-12
                if got.shape != want.shape or got.dtype != want.dtype or \\
                        not np.allclose(got, want, rtol=tol, atol=tol):
                    failures.append(f"{{case.id}}-{{dtype}} {{slot}}: {{got}} vs {{want}}")
            checked += 1
    print("checked", checked)
    print("\\n".join(failures))
    sys.exit(1 if failures or checked < 50 else 0)
""")


def test_elementwise_ops_on_simulated_gpu_match_cpu(tmp_path):
    tests_dir = str(Path(__file__).parent)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests_dir)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "checked" in r.stdout
