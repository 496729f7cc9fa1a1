"""Table rows for fused_softmax_mask: numpy's softmax(scale * x + mask) over the last axis,
the causal case as numpy's -inf upper triangle (np.triu), written from the definition; and
flash_attention's: that softmax of scale * Q K^T, times V (float64 products)."""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row, softmax_np


def fused_softmax_mask_ref(ins, a):
    x = f64(ins["X"])
    z = a["scale"] * x + (f64(ins["Mask"]) if "Mask" in ins else 0.0)
    if a["causal"]:
        tq, tk = x.shape[-2:]
        z = z + np.triu(np.full((tq, tk), -np.inf), 1)
    return {"Out": softmax_np(z, -1).astype(ins["X"].dtype)}


for _id, _ins, _attrs in [
        ("mask-bcast-heads", {"X": uniform((2, 3, 4, 5), -2, 2), "Mask": uniform((2, 1, 4, 5))},
         {"scale": 0.5}),
        ("mask-2d", {"X": uniform((2, 3, 4, 4), -2, 2), "Mask": uniform((4, 4))},
         {"scale": 1.0}),
        ("causal", {"X": uniform((2, 2, 4, 4), -2, 2)}, {"scale": 0.35, "causal": True}),
        ("causal-mask-wide", {"X": uniform((3, 2, 6), -2, 2), "Mask": uniform((1, 6))},
         {"scale": 2.0, "causal": True}),
        ("plain-1d", {"X": uniform((7,), -2, 2)}, {})]:
    row("fused_softmax_mask", _ins, fused_softmax_mask_ref, f"fused_softmax_mask-{_id}",
        attrs=_attrs)


def flash_attention_ref(ins, a):
    """softmax(scale * Q K^T + Mask) V in float64 through the unfused formula."""
    q, k, v = (f64(ins[s]) for s in ("Q", "K", "V"))
    scores = {"X": a["scale"] * q @ np.swapaxes(k, -1, -2)}
    if "Mask" in ins:
        scores["Mask"] = ins["Mask"]
    p = f64(fused_softmax_mask_ref(scores, dict(a, scale=1.0))["Out"])
    return {"Out": (p @ v).astype(ins["Q"].dtype)}


# blocks: 70 query rows are two blocks of 64 (the second of 6 rows, causal up to key 70)
for _id, _ins, _attrs in [
        ("mask-bcast-heads", {"Q": uniform((2, 3, 4, 5), -1, 1), "K": uniform((2, 3, 6, 5), -1, 1),
                              "V": uniform((2, 3, 6, 2), -1, 1), "Mask": uniform((2, 1, 4, 6))},
         {"scale": 0.5}),
        ("causal", {"Q": uniform((1, 2, 5, 3), -1, 1), "K": uniform((1, 2, 5, 3), -1, 1),
                    "V": uniform((1, 2, 5, 4), -1, 1)}, {"scale": 0.7, "causal": True}),
        ("causal-mask-3d", {"Q": uniform((2, 4, 3), -1, 1), "K": uniform((2, 4, 3), -1, 1),
                            "V": uniform((2, 4, 3), -1, 1), "Mask": uniform((4, 4))},
         {"scale": 1.0, "causal": True}),
        ("tiles-causal", {"Q": uniform((1, 70, 2), -1, 1), "K": uniform((1, 150, 2), -1, 1),
                          "V": uniform((1, 150, 2), -1, 1)}, {"scale": 0.5, "causal": True})]:
    row("flash_attention", _ins, flash_attention_ref, f"flash_attention-{_id}", attrs=_attrs)
