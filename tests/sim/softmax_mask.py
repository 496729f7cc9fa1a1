"""The fused softmax-mask kernels on the simulated GPU against numpy; prints the worst
difference (`worst E`). Run by tests/kernels/test_fused_softmax_mask.py."""
import numpy as np
from numbaflow.kernels import run_op
rng = np.random.default_rng(1)
worst = 0.0
# rows shorter and longer than the simulator's 32-thread row blocks
for shape, mshape in (((2, 2, 5, 5), (2, 1, 5, 5)), ((1, 2, 40, 40), (40, 40))):
    for causal in (False, True):
        for dt in ("float32", "float64"):
            x = rng.standard_normal(shape).astype(dt)
            m = rng.standard_normal(mshape).astype(dt)
            a = {"scale": 0.3, "causal": causal}
            y = run_op("fused_softmax_mask", {"X": x, "Mask": m}, a, device="gpu")["Out"]
            z = 0.3 * x.astype("f8") + m
            if causal:
                z = z + np.triu(np.full(shape[-2:], -np.inf), 1)
            e = np.exp(z - z.max(-1, keepdims=True))
            ref = e / e.sum(-1, keepdims=True)
            worst = max(worst, float(np.abs(y - ref).max()))
            dy = rng.standard_normal(shape).astype(dt)
            dx = run_op("fused_softmax_mask_grad", {"Out": y, "Out@GRAD": dy}, a,
                        device="gpu")["X@GRAD"]
            yy = y.astype("f8")
            gref = 0.3 * yy * (dy - (dy * yy).sum(-1, keepdims=True))
            worst = max(worst, float(np.abs(dx - gref).max()))
print("worst", worst)
