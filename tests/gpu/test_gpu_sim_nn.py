"""The CNN ops' CUDA kernels (conv2d, depthwise_conv2d, fused_conv2d, pool2d, batch_norm, dropout,
lookup_table_v2 and their gradients) under numba's CUDA simulator, in a subprocess (the
simulator must be selected before numba.cuda is first imported).

Every op-table row of these ops (tests/op_rows/conv.py, nn.py) runs on the simulated GPU
and must equal the CPU kernel's result, forward and gradient; a few extra shapes reach
what the tiny rows do not (several blocks, channels longer than a block, absent optional
gradient outputs); dropout must draw the CPU kernel's mask for the same seed.
"""

import pytest
from simulator import run_sim

OPS = ("conv2d", "depthwise_conv2d", "fused_conv2d", "pool2d", "batch_norm", "dropout",
       "lookup_table_v2")

@pytest.mark.slow
@pytest.mark.gpu
def test_small_cnn_trains_identically_on_simulated_gpu():
    """A small CNN (conv, batch norm, depthwise conv, max and avg pooling, dropout, embedding)
    trained three steps on CUDAPlace(0) matches the CPU run: losses, parameters and the
    running statistics (batch_norm's MeanOut/VarianceOut update Mean/Variance in place)."""
    assert "trained" in run_sim("nn_net").stdout


@pytest.mark.slow
@pytest.mark.gpu
def test_cnn_ops_on_simulated_gpu_match_cpu():
    r = run_sim("cnn_ops", *OPS)
    ops = {o + s for o in OPS for s in ("", "_grad")}
    for op in ops:     # every op and its gradient really ran on the simulated GPU
        assert f"'{op}'" in r.stdout, (op, r.stdout[-2000:])


def test_cnn_ops_have_gpu_kernels():
    from numbaflow.kernels import get_op_def
    missing = [o + s for o in OPS for s in ("", "_grad") if get_op_def(o + s).gpu is None]
    assert not missing, missing
