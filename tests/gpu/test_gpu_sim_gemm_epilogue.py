"""fused_gemm_epilogue's CUDA kernels (the tiled GEMM, then the generated epilogue) under
numba's CUDA simulator, in a subprocess: every op-table row (tests/op_rows/gemm_epilogue.py)
equals the CPU kernel's result, forward and gradient (tests/sim/cnn_ops.py, which takes the
ops to check as arguments)."""
import pytest
from simulator import run_sim


@pytest.mark.slow
@pytest.mark.gpu
def test_gemm_epilogue_on_simulated_gpu_matches_cpu():
    r = run_sim("cnn_ops", "fused_gemm_epilogue")
    for op in ("fused_gemm_epilogue", "fused_gemm_epilogue_grad"):
        assert f"'{op}'" in r.stdout, r.stdout[-2000:]
