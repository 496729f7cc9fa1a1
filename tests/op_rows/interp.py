"""Table rows for nearest_interp_v2 and bilinear_interp_v2 (kernels/nn/interp.py).

The reference resizes with two (out, in) interpolation matrices, out = Wh @ x @ Ww^T, each
row built from Paddle's definition of the source coordinate in float64 (the kernels use
Paddle's float32 tables; the rows pick ratios exact in float32: 1/2, 2, (4-1)/(7-1)).
Paddle's own outputs are compared in tests/io/test_paddle_model_ops.py.
"""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row


def _matrix(n_in, n_out, scale, align_corners, align_mode, nearest):
    if n_out == 1:
        ratio = 0.0
    elif align_corners:
        ratio = (n_in - 1) / (n_out - 1)
    else:
        ratio = 1.0 / scale if scale else n_in / n_out
    m = np.zeros((n_out, n_in))
    for k in range(n_out):
        if nearest:
            m[k, int(ratio * k + 0.5) if align_corners else int(ratio * k)] = 1.0
            continue
        src = max(ratio * (k + 0.5) - 0.5, 0.0) if align_mode == 0 and not align_corners \
            else ratio * k
        lo = int(np.floor(src))
        hi = min(lo + 1, n_in - 1)
        m[k, lo] += 1.0 - (src - lo)
        m[k, hi] += src - lo
    return m


def interp_ref(nearest):
    def ref(ins, a):
        x = f64(ins["X"])
        nhwc = a["data_layout"] == "NHWC"
        if nhwc:
            x = x.transpose(0, 3, 1, 2)
        H, W = x.shape[2:]
        s = a["scale"] or [None, None]
        oh, ow = (int(H * s[0]), int(W * s[1])) if a["scale"] else (a["out_h"], a["out_w"])
        mh = _matrix(H, oh, s[0], a["align_corners"], a["align_mode"], nearest)
        mw = _matrix(W, ow, s[1], a["align_corners"], a["align_mode"], nearest)
        out = np.einsum("ki,ncij,lj->nckl", mh, x, mw)
        if nhwc:
            out = out.transpose(0, 2, 3, 1)
        return {"Out": np.ascontiguousarray(out).astype(ins["X"].dtype)}
    return ref


_OFF = {"align_corners": False, "align_mode": 0}
_ROWS = [   # op, id, X shape, attrs
    ("nearest", "size-up", (2, 3, 4, 3), dict(_OFF, out_h=7, out_w=5)),
    ("nearest", "scale2", (1, 2, 3, 4), dict(_OFF, scale=[2.0, 2.0])),
    ("nearest", "down", (1, 2, 8, 6), dict(_OFF, out_h=4, out_w=3)),
    ("nearest", "nhwc", (1, 3, 4, 2), dict(_OFF, out_h=6, out_w=8, data_layout="NHWC")),
    ("bilinear", "scale2-half-pixel", (2, 2, 3, 4), dict(_OFF, scale=[2.0, 2.0])),
    ("bilinear", "down-half-pixel", (1, 2, 8, 6), dict(_OFF, out_h=4, out_w=3)),
    ("bilinear", "align-corners", (1, 2, 4, 3), dict(out_h=7, out_w=5, align_corners=True)),
    ("bilinear", "align-mode1", (1, 2, 4, 3), dict(out_h=8, out_w=6, align_corners=False,
                                                   align_mode=1)),
    ("bilinear", "nhwc", (1, 3, 4, 2), dict(_OFF, scale=[2.0, 0.5], data_layout="NHWC")),
    ("bilinear", "to-1x1", (1, 2, 3, 3), dict(_OFF, out_h=1, out_w=2)),
]
for _m, _id, _shape, _attrs in _ROWS:
    row(f"{_m}_interp_v2", {"X": uniform(_shape)}, interp_ref(_m == "nearest"),
        f"{_m}_interp_v2-{_id}", attrs=_attrs, rtol=1e-5, atol=1e-6)
