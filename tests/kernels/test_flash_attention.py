"""The flash_attention op's kernels (kernels/fused/flash_attention.py) beyond the op-table
rows (tests/op_rows/attention.py: numpy forward, finite-difference backward): query blocks
and items shared over 1, 2 and 3 workers give one worker's results and numpy's; shapes
that do not make an attention are refused; the GPU kernels match the CPU ones on the
simulator."""
import numpy as np
import pytest
from simulator import run_sim

from numbaflow.kernels import run_op
from numbaflow.kernels.fused import flash_attention as fa


def _numpy_probabilities(q, k, mask, scale):
    """The probabilities softmax(scale q k^T + mask), causal (-inf above the diagonal)."""
    s = scale * q @ np.swapaxes(k, -1, -2) + mask + np.triu(np.full(mask.shape, -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


@pytest.mark.parametrize("workers", [2, 3])
def test_work_shared_over_workers_equals_one_worker_and_numpy(monkeypatch, workers):
    rng = np.random.default_rng(0)
    # 70 query rows: 2 blocks of 64 per item, 3 items -> 6 forward pieces, 3 backward items
    ins = {"Q": rng.standard_normal((3, 70, 4)), "K": rng.standard_normal((3, 70, 4)),
           "V": rng.standard_normal((3, 70, 2)), "Mask": rng.standard_normal((70, 70))}
    a = {"scale": 0.5, "causal": True}
    dout = rng.standard_normal((3, 70, 2))
    got = {}
    for t in (1, workers):
        monkeypatch.setattr(fa, "parallel_threads", lambda work, units: min(t, units))
        out = run_op("flash_attention", ins, a)["Out"]
        grads = run_op("flash_attention_grad", dict(ins, Out=out, **{"Out@GRAD": dout}), a)
        got[t] = (out, grads)
    np.testing.assert_array_equal(got[1][0], got[workers][0])
    for s in ("Q@GRAD", "K@GRAD", "V@GRAD"):
        np.testing.assert_array_equal(got[1][1][s], got[workers][1][s])
    p = _numpy_probabilities(ins["Q"], ins["K"], ins["Mask"], 0.5)
    np.testing.assert_allclose(got[workers][0], p @ ins["V"], rtol=1e-10)
    np.testing.assert_allclose(got[workers][1]["V@GRAD"], np.swapaxes(p, -1, -2) @ dout,
                               rtol=1e-9, atol=1e-12)
    dp = dout @ np.swapaxes(ins["V"], -1, -2)
    ds = 0.5 * p * (dp - (dp * p).sum(-1, keepdims=True))
    np.testing.assert_allclose(got[workers][1]["Q@GRAD"], ds @ ins["K"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got[workers][1]["K@GRAD"], np.swapaxes(ds, -1, -2) @ ins["Q"],
                               rtol=1e-9, atol=1e-12)


def test_operands_that_are_not_an_attention_are_refused():
    q = np.zeros((2, 3, 4, 5), np.float32)
    with pytest.raises(ValueError, match="same leading dims"):
        run_op("flash_attention", {"Q": q, "K": np.zeros((2, 1, 4, 5), np.float32), "V": q})
    with pytest.raises(ValueError, match="share one float dtype"):
        run_op("flash_attention", {"Q": q, "K": q, "V": q.astype(np.float64)})
    with pytest.raises(ValueError, match="broadcast to the scores"):
        run_op("flash_attention", {"Q": q, "K": q, "V": q, "Mask": np.zeros((4, 3), np.float32)})


@pytest.mark.slow
@pytest.mark.gpu
def test_gpu_kernels_on_the_simulator_match_cpu():
    r = run_sim("flash_attention")
    worst = float(r.stdout.split("worst")[1])
    assert worst < 1e-5, r.stdout
