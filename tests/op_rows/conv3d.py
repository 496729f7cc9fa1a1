"""Table rows for conv3d (kernels/nn/conv3d.py; the _grad op through the backward check).

The reference is a direct loop over output positions with an einsum per window on an
explicitly zero-padded float64 copy of the input (no vol2col), written from the maths.
"""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row


def _pads6(p):
    p = list(p)
    return p * 6 if len(p) == 1 else [p[0], p[0], p[1], p[1], p[2], p[2]] if len(p) == 3 else p


def conv3d_ref_np(x, w, strides, paddings, dilations, groups, channels_last=False):
    """out[n, m, a, b, e] = sum over group(m)'s channels and the window, float64."""
    x, w = f64(x), f64(w)
    if channels_last:
        x = np.moveaxis(x, -1, 1)
    n, c, D, H, W = x.shape
    m, cg, kd, kh, kw = w.shape
    p = _pads6(paddings)
    xp = np.zeros((n, c, D + p[0] + p[1], H + p[2] + p[3], W + p[4] + p[5]))
    xp[:, :, p[0]:p[0] + D, p[2]:p[2] + H, p[4]:p[4] + W] = x
    k = (kd, kh, kw)
    o = [(xp.shape[2 + i] - dilations[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(3)]
    out = np.zeros((n, m, *o))
    mg = m // groups
    for idx in np.ndindex(*o):
        win = tuple(slice(idx[i] * strides[i], idx[i] * strides[i] + dilations[i] * (k[i] - 1)
                          + 1, dilations[i]) for i in range(3))
        for g in range(groups):
            window = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + win]
            out[(slice(None), slice(g * mg, (g + 1) * mg)) + idx] = np.einsum(
                "ncdhw,mcdhw->nm", window, w[g * mg:(g + 1) * mg])
    return np.moveaxis(out, 1, -1) if channels_last else out


def conv3d_ref(ins, a):
    p, s, d = a["paddings"], a["strides"], a["dilations"]
    if a["padding_algorithm"] == "VALID":
        p = [0]
    out = conv3d_ref_np(ins["Input"], ins["Filter"], s, p, d, a["groups"],
                        a["data_format"] == "NDHWC")
    return {"Output": np.ascontiguousarray(out).astype(ins["Input"].dtype)}


TOL = dict(rtol=1e-5, atol=1e-5)
CONV3D = {   # id: (Input shape, Filter shape, attrs)
    "basic": ((2, 2, 3, 4, 3), (3, 2, 2, 2, 2), {}),
    "stride2_pad1": ((1, 2, 4, 5, 4), (2, 2, 3, 3, 3), {"strides": [2, 2, 2],
                                                        "paddings": [1, 1, 1]}),
    "dilation_pad6": ((1, 1, 5, 4, 5), (2, 1, 2, 2, 2), {"dilations": [2, 1, 2],
                                                         "paddings": [1, 0, 0, 1, 2, 1]}),
    "groups2": ((1, 4, 3, 3, 3), (4, 2, 1, 2, 2), {"groups": 2, "paddings": [0, 1, 0],
                                                   "strides": [1, 2, 1]}),
    "ndhwc": ((1, 3, 4, 3, 2), (3, 2, 2, 2, 1), {"data_format": "NDHWC",
                                                 "paddings": [1, 0, 1]}),
    "valid": ((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), {"padding_algorithm": "VALID",
                                                 "paddings": [5, 5, 5]}),
}
for _id, (_xs, _ws, _attrs) in CONV3D.items():
    row("conv3d", {"Input": uniform(_xs), "Filter": uniform(_ws)}, conv3d_ref, f"conv3d-{_id}",
        attrs=_attrs, **TOL)
