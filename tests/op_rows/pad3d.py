"""Table rows for pad3d (kernels/nn/pad3d.py): the reference is numpy's np.pad, whose modes
'constant', 'reflect', 'edge' and 'wrap' are Paddle's constant, reflect, replicate and
circular; paddings [left, right, top, bottom, front, back] pad W, H, D."""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row

_NP = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad3d_ref(ins, a):
    x = f64(ins["X"])
    last = a["data_format"] == "NDHWC"
    if last:
        x = np.moveaxis(x, -1, 1)
    p = a["paddings"]
    width = [(0, 0), (0, 0), (p[4], p[5]), (p[2], p[3]), (p[0], p[1])]
    kw = {"constant_values": a["value"]} if a["mode"] == "constant" else {}
    out = np.pad(x, width, mode=_NP[a["mode"]], **kw)
    if last:
        out = np.moveaxis(out, 1, -1)
    return {"Out": np.ascontiguousarray(out).astype(ins["X"].dtype)}


_ROWS = [   # id, X shape, attrs
    ("reflect-hw", (2, 2, 1, 4, 3), {"mode": "reflect", "paddings": [2, 1, 0, 3, 0, 0]}),
    ("replicate-dhw", (1, 2, 2, 3, 3), {"mode": "replicate", "paddings": [1, 2, 2, 0, 1, 1]}),
    ("circular-wide", (1, 2, 1, 3, 2), {"mode": "circular", "paddings": [3, 2, 1, 4, 0, 0]}),
    ("constant-value", (1, 2, 2, 2, 3), {"mode": "constant", "value": 1.5,
                                         "paddings": [1, 0, 0, 2, 1, 0]}),
    ("reflect-ndhwc", (1, 1, 3, 4, 2), {"mode": "reflect", "paddings": [1, 1, 2, 1, 0, 0],
                                        "data_format": "NDHWC"}),
]
for _id, _shape, _attrs in _ROWS:
    row("pad3d", {"X": uniform(_shape)}, pad3d_ref, f"pad3d-{_id}", attrs=_attrs)
