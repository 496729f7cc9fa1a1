"""flash_attention's GPU kernels on the simulated GPU against its CPU kernels (which the op
table checks against numpy and finite differences); prints the worst difference
(`worst E`). Run by tests/kernels/test_flash_attention.py."""
import numpy as np
from numbaflow.kernels import run_op
rng = np.random.default_rng(1)
worst = 0.0
for lead, tq, tk, use_mask in (((2, 2), 5, 5, True), ((1,), 6, 9, False)):
    for causal in (False, True):
        for dt in ("float32", "float64"):
            ins = {"Q": rng.standard_normal(lead + (tq, 3)).astype(dt),
                   "K": rng.standard_normal(lead + (tk, 3)).astype(dt),
                   "V": rng.standard_normal(lead + (tk, 2)).astype(dt)}
            if use_mask:
                ins["Mask"] = rng.standard_normal((tq, tk)).astype(dt)
            a = {"scale": 0.4, "causal": causal}
            out = {d: run_op("flash_attention", ins, a, device=d)["Out"] for d in ("cpu", "gpu")}
            gins = dict(ins, Out=out["cpu"], **{"Out@GRAD": rng.standard_normal(
                out["cpu"].shape).astype(dt)})
            grads = {d: run_op("flash_attention_grad", gins, a, device=d) for d in ("cpu", "gpu")}
            worst = max([worst, float(np.abs(out["gpu"] - out["cpu"]).max())] +
                        [float(np.abs(grads["gpu"][s] - grads["cpu"][s]).max())
                         for s in ("Q@GRAD", "K@GRAD", "V@GRAD")])
print("worst", worst)
