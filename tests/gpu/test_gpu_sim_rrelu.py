"""rrelu's CUDA kernel (and rrelu_grad's generated one) under numba's CUDA simulator, in a
subprocess (the simulator must be selected before numba.cuda is first imported): this
file runs itself there. The op table's deterministic rows (tests/op_rows/rrelu.py) equal
the CPU kernel's results, forward and gradient; a training run draws slopes in
[lower, upper) with Out = X * Noise on the device; the CPU and GPU kernels of one seeded
op draw the same slopes."""
import os
import subprocess
import sys

import pytest
from locations import TESTS


def check():
    """Run under NUMBA_ENABLE_CUDASIM=1; returns the list of failures."""
    import numpy as np
    from numbaflow.kernels import run_op
    from numbaflow.kernels.tensor.creation import set_global_seed
    from op_rows import load_all
    from numbaflow.testing.op_test import make_inputs

    failures, rng = [], np.random.default_rng(0)

    def close(label, g, w):
        tol = 1e-6 if w.dtype == np.float32 else 1e-12
        if g.shape != w.shape or g.dtype != w.dtype or not np.allclose(g, w, rtol=tol, atol=tol):
            failures.append(f"{label}: gpu {g} vs cpu {w}")

    rows = [c for c in load_all() if c.op == "rrelu"]
    for case in rows:
        for dtype in case.dtypes:
            arrays = make_inputs(case, dtype)
            cpu, gpu = (run_op("rrelu", arrays, case.attrs, device=d) for d in ("cpu", "gpu"))
            for slot in ("Out", "Noise"):
                close(f"{case.id}-{dtype} {slot}", gpu[slot], cpu[slot])
            gins = {"X": arrays["X"], "Noise": cpu["Noise"],
                    "Out@GRAD": rng.uniform(-1, 1, cpu["Out"].shape).astype(dtype)}
            close(f"{case.id}-{dtype} grad", run_op("rrelu_grad", gins, case.attrs, "gpu")["X@GRAD"],
                  run_op("rrelu_grad", gins, case.attrs)["X@GRAD"])
    x = rng.uniform(-1, 1, (40, 7)).astype("float32")
    draws = {}
    for device in ("cpu", "gpu"):
        set_global_seed(11)       # the kernel's generator takes the first op seed
        got = run_op("rrelu", {"X": x}, {"lower": 0.2, "upper": 0.6}, device=device)
        neg = x < 0
        if not (np.array_equal(got["Out"], x * got["Noise"]) and (got["Noise"][~neg] == 1).all()
                and 0.2 <= got["Noise"][neg].min() and got["Noise"][neg].max() < 0.6):
            failures.append(f"{device} training draw: {got}")
        draws[device] = got["Noise"]
    close("seeded training draws", draws["gpu"], draws["cpu"])
    return failures if rows else ["no rrelu rows"]


@pytest.mark.slow
@pytest.mark.gpu
def test_rrelu_on_simulated_gpu_matches_cpu(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
               NUMBAFLOW_CACHE_DIR=os.environ.get("NUMBAFLOW_CACHE_DIR", str(tmp_path)))
    r = subprocess.run([sys.executable, str(TESTS / "gpu" / "test_gpu_sim_rrelu.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


if __name__ == "__main__":
    problems = check()
    print("\n".join(problems) or "ok")
    sys.exit(1 if problems else 0)
