"""fused_softmax_mask (kernels/fused/softmax_mask.py): softmax(scale * x + mask) in one op.

The op-table rows (tests/op_rows/attention.py) check it against numpy and finite
differences; here: rows longer than a GPU block and the GPU kernels under the CUDA
simulator against numpy, and Paddle's incubate names.
"""

import numpy as np
import pytest

from numbaflow.kernels import run_op
from simulator import run_sim


def softmax_ref(x, scale, mask=None, causal=False):
    z = scale * x.astype(np.float64) + (0.0 if mask is None else mask.astype(np.float64))
    if causal:
        z = z + np.triu(np.full(x.shape[-2:], -np.inf), 1)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def grad_ref(y, dy, scale):
    return scale * y * (dy - (dy * y).sum(-1, keepdims=True))


@pytest.mark.parametrize("causal", [False, True])
def test_long_rows_match_numpy(causal):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 70, 70)).astype(np.float32)
    mask = rng.standard_normal((2, 1, 70, 70)).astype(np.float32)
    y = run_op("fused_softmax_mask", {"X": x, "Mask": mask},
               {"scale": 0.125, "causal": causal})["Out"]
    np.testing.assert_allclose(y, softmax_ref(x, 0.125, mask, causal), rtol=2e-6, atol=1e-7)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx = run_op("fused_softmax_mask_grad", {"Out": y, "Out@GRAD": dy},
                {"scale": 0.125, "causal": causal})["X@GRAD"]
    np.testing.assert_allclose(dx, grad_ref(y.astype(np.float64), dy, 0.125),
                               rtol=1e-5, atol=1e-7)


def test_mask_that_does_not_broadcast_is_refused():
    x = np.zeros((2, 3, 4, 5), np.float32)
    with pytest.raises(ValueError, match="must broadcast to X"):
        run_op("fused_softmax_mask", {"X": x, "Mask": np.zeros((3, 1, 4, 5), np.float32)})
    with pytest.raises(ValueError, match="X's dtype"):
        run_op("fused_softmax_mask", {"X": x, "Mask": np.zeros((4, 5), np.float64)})


@pytest.mark.slow
@pytest.mark.gpu
def test_gpu_kernels_on_the_simulator_match_numpy():
    r = run_sim("softmax_mask")
    worst = float(r.stdout.split("worst")[1])
    assert worst < 1e-6, r.stdout


def test_paddle_incubate_names_match_numpy_forward_and_backward():
    import numbaflow as paddle
    from numbaflow import static
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((2, 3, 5, 5))
    mv = rng.standard_normal((2, 1, 5, 5))
    wv = rng.standard_normal((2, 3, 5, 5))
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3, 5, 5], "float64")
        x.stop_gradient = False
        m = static.data("m", [None, 1, 5, 5], "float64")
        w = static.data("w", [None, 3, 5, 5], "float64")
        outs = [paddle.incubate.softmax_mask_fuse(x, m),
                paddle.incubate.softmax_mask_fuse_upper_triangle(x)]
        grads = [static.gradients(paddle.sum(y * w), [x])[0] for y in outs]
    exe = static.Executor(paddle.CPUPlace())
    y1, y2, g1, g2 = exe.run(main, feed={"x": xv, "m": mv, "w": wv}, fetch_list=outs + grads)
    r1, r2 = softmax_ref(xv, 1.0, mv), softmax_ref(xv, 1.0, causal=True)
    np.testing.assert_allclose(y1, r1, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(y2, r2, rtol=1e-12, atol=1e-15)
    assert (y2[..., np.triu_indices(5, 1)[0], np.triu_indices(5, 1)[1]] == 0).all()
    np.testing.assert_allclose(g1, grad_ref(r1, wv, 1.0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g2, grad_ref(r2, wv, 1.0), rtol=1e-9, atol=1e-12)
