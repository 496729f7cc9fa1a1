"""Table rows for pool3d (kernels/nn/pool3d.py; the _grad op through the backward check).

The reference loops over output cells in float64 and takes each window from the maths:
[o*s - p_before, o*s - p_before + k) clipped to the padded then the real input (adaptive:
[floor(o n / O), ceil((o+1) n / O))); avg divides by the clipped window (exclusive) or by
the window in the padded input. Inputs are pairwise distinct, so max has no ties.
"""
import math

import numpy as np

from numbaflow.testing.op_test import distinct

from . import f64, row


def _axis(o, n, a, i, pads):
    """(start, end, padded size) of window o along spatial axis i of size n."""
    if a["global_pooling"]:
        return 0, n, n
    k = a["ksize"][i]
    if a["adaptive"]:
        lo, hi = math.floor(o * n / k), math.ceil((o + 1) * n / k)
        return lo, hi, hi - lo
    s = a["strides"][i]
    start = o * s - pads[2 * i]
    end = min(start + k, n + pads[2 * i + 1])
    return max(start, 0), min(end, n), end - start


def _out(n, a, i, pads):
    if a["global_pooling"]:
        return 1
    if a["adaptive"]:
        return a["ksize"][i]
    k, s = a["ksize"][i], a["strides"][i]
    extra = s - 1 if a["ceil_mode"] else 0
    return (n + pads[2 * i] + pads[2 * i + 1] - k + extra) // s + 1


def pool3d_ref(ins, a):
    x = f64(ins["X"])
    last = a["data_format"] == "NDHWC"
    if last:
        x = np.moveaxis(x, -1, 1)
    p = list(a["paddings"])
    pads = p * 6 if len(p) == 1 else [p[0], p[0], p[1], p[1], p[2], p[2]] if len(p) == 3 else p
    if a["padding_algorithm"] == "SAME":
        pads = []
        for n, k, s in zip(x.shape[2:], a["ksize"], a["strides"]):
            total = max((math.ceil(n / s) - 1) * s + k - n, 0)
            pads += [total // 2, total - total // 2]
    osz = [_out(n, a, i, pads) for i, n in enumerate(x.shape[2:])]
    out = np.zeros(x.shape[:2] + tuple(osz))
    for idx in np.ndindex(*osz):
        w = [_axis(o, n, a, i, pads) for i, (o, n) in enumerate(zip(idx, x.shape[2:]))]
        win = x[(slice(None), slice(None)) + tuple(slice(lo, hi) for lo, hi, _ in w)]
        if win.size == 0:
            continue
        if a["pooling_type"] == "max":
            v = win.max(axis=(2, 3, 4))
        else:
            size = win[0, 0].size if a["exclusive"] or a["adaptive"] else \
                np.prod([full for _, _, full in w])
            v = win.sum(axis=(2, 3, 4)) / size
        out[(slice(None), slice(None)) + idx] = v
    if last:
        out = np.moveaxis(out, 1, -1)
    return {"Out": np.ascontiguousarray(out).astype(ins["X"].dtype)}


_ROWS = [   # id, X shape, attrs
    ("max-k2s2", (2, 2, 4, 4, 5), {"ksize": [2, 2, 2], "strides": [2, 2, 2]}),
    ("max-k3s2p1-ceil", (1, 2, 5, 4, 6), {"ksize": [3, 3, 3], "strides": [2, 2, 2],
                                          "paddings": [1, 1, 1], "ceil_mode": True}),
    ("avg-exclusive-pad6", (1, 2, 4, 5, 3), {"pooling_type": "avg", "ksize": [2, 3, 2],
                                             "strides": [1, 2, 1],
                                             "paddings": [1, 0, 1, 1, 0, 1]}),
    ("avg-inclusive", (1, 1, 5, 4, 4), {"pooling_type": "avg", "ksize": [3, 2, 3],
                                        "strides": [2, 2, 2], "paddings": [1, 1, 1],
                                        "exclusive": False}),
    ("adaptive-avg", (2, 2, 5, 4, 7), {"pooling_type": "avg", "ksize": [2, 3, 3],
                                       "adaptive": True}),
    ("adaptive-max", (1, 2, 4, 6, 5), {"ksize": [3, 4, 2], "adaptive": True}),
    ("global-avg", (2, 3, 3, 2, 4), {"pooling_type": "avg", "ksize": [1, 1, 1],
                                     "global_pooling": True}),
    ("max-ndhwc", (1, 4, 5, 3, 2), {"ksize": [2, 2, 2], "strides": [2, 1, 1],
                                    "data_format": "NDHWC"}),
    ("avg-same", (1, 2, 5, 4, 3), {"pooling_type": "avg", "ksize": [2, 3, 2],
                                   "strides": [2, 2, 1], "padding_algorithm": "SAME"}),
]
for _id, _shape, _attrs in _ROWS:
    row("pool3d", {"X": distinct(_shape)}, pool3d_ref, f"pool3d-{_id}", attrs=_attrs)


# ---------------------------------------------------------------- max_pool3d_with_index
def pool3d_index_ref(ins, a):
    """Max and its flat index (d * H + h) * W + w per window (adaptive bins or windows
    [o*s - p, o*s - p + k) clipped to the input)."""
    x = f64(ins["X"])
    N, C, D, H, W = x.shape
    axes = []
    for i, n in enumerate((D, H, W)):
        k = a["ksize"][i]
        if a["adaptive"]:
            axes.append([(math.floor(o * n / k), math.ceil((o + 1) * n / k)) for o in range(k)])
        else:
            s, p = a["strides"][i], a["paddings"][i]
            axes.append([(max(o * s - p, 0), min(o * s - p + k, n))
                         for o in range((n + 2 * p - k) // s + 1)])
    shape = (N, C) + tuple(len(ax) for ax in axes)
    out, mask = np.zeros(shape), np.zeros(shape, np.int32)
    for idx in np.ndindex(*shape[2:]):
        (d0, d1), (h0, h1), (w0, w1) = (axes[i][idx[i]] for i in range(3))
        win = x[:, :, d0:d1, h0:h1, w0:w1]
        k = win.reshape(N, C, -1).argmax(-1)
        z, y, u = np.unravel_index(k, win.shape[2:])
        out[(slice(None), slice(None)) + idx] = win.reshape(N, C, -1).max(-1)
        mask[(slice(None), slice(None)) + idx] = ((d0 + z) * H + h0 + y) * W + w0 + u
    return {"Out": out.astype(ins["X"].dtype), "Mask": mask}


row("max_pool3d_with_index", {"X": distinct((2, 2, 5, 4, 6))}, pool3d_index_ref,
    "max_pool3d_with_index-adaptive", attrs={"ksize": [2, 3, 4], "adaptive": True},
    outputs_for_grad=("Out",))
row("max_pool3d_with_index", {"X": distinct((1, 2, 5, 5, 4))}, pool3d_index_ref,
    "max_pool3d_with_index-k3s2p1", attrs={"ksize": [3, 3, 2], "strides": [2, 2, 1],
                                            "paddings": [1, 1, 0]}, outputs_for_grad=("Out",))
