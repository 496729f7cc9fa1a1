"""Table rows for prelu in its three modes and both layouts.

The reference is numpy in float64 from the definition (x where x > 0, else alpha * x with
alpha broadcast per mode), not from the kernel; X keeps away from 0, where prelu has a
kink, so finite differences check both gradients (X and the summed-down Alpha).
"""
import numpy as np

from numbaflow.testing.op_test import away_from_zero, uniform

from . import f64, row


def prelu_ref(ins, a):
    x, w = f64(ins["X"]), f64(ins["Alpha"])
    if a["mode"] == "channel" and a["data_format"] == "NCHW":
        w = w.reshape((1, -1) + (1,) * (x.ndim - 2))
    return {"Out": np.where(x > 0, x, w * x).astype(ins["X"].dtype)}


for _id, _x, _alpha, _attrs in [
        ("all", (2, 3, 2, 2), (1,), {"mode": "all"}),
        ("channel", (2, 3, 2, 2), (3,), {"mode": "channel"}),
        ("channel-nc", (4, 3), (3,), {"mode": "channel"}),
        ("channel-nhwc", (2, 2, 2, 3), (3,), {"mode": "channel", "data_format": "NHWC"}),
        ("element", (2, 3, 2), (1, 3, 2), {"mode": "element"})]:
    row("prelu", {"X": away_from_zero(_x), "Alpha": uniform(_alpha, -0.5, 0.8)}, prelu_ref,
        f"prelu-{_id}", attrs=_attrs)
