"""Table rows for pool2d, batch_norm, dropout and lookup_table_v2.

References are plain loops / numpy in float64 written from Paddle's definitions (see
numbaflow/kernels/nn/pool.py, batch_norm.py, dropout.py and embedding.py for the sources), not from the kernels.
Dropout is random: only its deterministic cases are rows (is_test, p = 0, p = 1); its
statistics and seeding are tested in tests/nn/test_nn_layers.py.
"""
import math

import numpy as np

from numbaflow.testing.op_test import const, distinct, ints, uniform

from . import f64, row


# ---------------------------------------------------------------- pool2d
def _pads(a, H, W):
    if a["global_pooling"]:
        return H, W, 0, 0, 0, 0
    kh, kw = a["ksize"]
    p = list(a["paddings"])
    pt, pb, pl, pr = (p[0], p[0], p[1], p[1]) if len(p) == 2 else p
    if a["padding_algorithm"] == "SAME":
        sh, sw = a["strides"]
        th = max((math.ceil(H / sh) - 1) * sh + kh - H, 0)
        tw = max((math.ceil(W / sw) - 1) * sw + kw - W, 0)
        pt, pb, pl, pr = th // 2, th - th // 2, tw // 2, tw - tw // 2
    return kh, kw, pt, pb, pl, pr


def pool_ref(ins, a):
    x = f64(ins["X"])
    if a["data_format"] == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    N, C, H, W = x.shape
    kh, kw, pt, pb, pl, pr = _pads(a, H, W)
    sh, sw = a["strides"]
    if a["global_pooling"]:
        OH = OW = 1
    else:
        up = 1 if a["ceil_mode"] else 0     # ceil_mode: (n + s - 1) // s instead of n // s
        OH = (H + pt + pb - kh + up * (sh - 1)) // sh + 1
        OW = (W + pl + pr - kw + up * (sw - 1)) // sw + 1
    out = np.zeros((N, C, OH, OW))
    for i in range(OH):
        for j in range(OW):
            # the window in padded coordinates, cut at the end of the padded input
            r0, r1 = i * sh - pt, min(i * sh - pt + kh, H + pb)
            c0, c1 = j * sw - pl, min(j * sw - pl + kw, W + pr)
            rows = [r for r in range(r0, r1) if 0 <= r < H]
            cols = [c for c in range(c0, c1) if 0 <= c < W]
            win = x[:, :, rows][:, :, :, cols].reshape(N, C, -1)
            if a["pooling_type"] == "max":
                out[:, :, i, j] = win.max(axis=-1)
            else:
                count = win.shape[-1] if a["exclusive"] else (r1 - r0) * (c1 - c0)
                out[:, :, i, j] = win.sum(axis=-1) / count
    if a["data_format"] == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return {"Out": np.ascontiguousarray(out).astype(ins["X"].dtype)}


_POOL = [   # id, X shape, attrs (max rows use distinct values: no ties within eps)
    ("max-k2s2", (1, 2, 4, 4), {"ksize": [2, 2], "strides": [2, 2]}),
    ("max-k3s3-tiled", (2, 2, 6, 6), {"ksize": [3, 3], "strides": [3, 3]}),
    ("avg-k3s3-tiled", (2, 2, 6, 6), {"pooling_type": "avg", "ksize": [3, 3], "strides": [3, 3]}),
    ("max-k3s2-pad1", (1, 2, 5, 5), {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}),
    ("max-overlap-s1", (1, 1, 4, 5), {"ksize": [2, 3], "strides": [1, 1]}),
    ("max-ceil", (1, 2, 5, 5), {"ksize": [2, 2], "strides": [2, 2], "ceil_mode": True}),
    ("max-global", (2, 3, 3, 3), {"global_pooling": True, "ksize": [1, 1]}),
    ("max-nhwc", (1, 4, 4, 2), {"ksize": [2, 2], "strides": [2, 2], "data_format": "NHWC"}),
    ("avg-k2s2", (1, 2, 4, 4), {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2]}),
    ("avg-pad1-exclusive", (1, 2, 5, 5),
     {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}),
    ("avg-pad1-inclusive", (1, 2, 5, 5),
     {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1],
      "exclusive": False}),
    ("avg-ceil-inclusive", (1, 2, 5, 5),
     {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2], "ceil_mode": True,
      "exclusive": False}),
    ("avg-ceil-pad-exclusive", (1, 1, 6, 6),
     {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1],
      "ceil_mode": True}),
    ("avg-pad4-asymmetric", (1, 2, 4, 4),
     {"pooling_type": "avg", "ksize": [2, 2], "strides": [1, 2], "paddings": [1, 0, 0, 1],
      "exclusive": False}),
    ("avg-global", (2, 3, 3, 3), {"pooling_type": "avg", "global_pooling": True}),
    ("avg-same", (1, 2, 5, 5),
     {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "padding_algorithm": "SAME"}),
]
for _id, _shape, _attrs in _POOL:
    row("pool2d", {"X": distinct(_shape)}, pool_ref, f"pool2d-{_id}", attrs=_attrs)


def adaptive_pool_ref(ins, a):
    """Paddle's adaptive bins: cell i covers [floor(i*H/oh), ceil((i+1)*H/oh))."""
    x = f64(ins["X"])
    if a["data_format"] == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    (N, C, H, W), (oh, ow) = x.shape, a["ksize"]
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, math.floor(i * H / oh):math.ceil((i + 1) * H / oh),
                    math.floor(j * W / ow):math.ceil((j + 1) * W / ow)]
            out[:, :, i, j] = win.max(axis=(2, 3)) if a["pooling_type"] == "max" else \
                win.mean(axis=(2, 3))
    if a["data_format"] == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return {"Out": np.ascontiguousarray(out).astype(ins["X"].dtype)}


_ADAPTIVE = [   # id, X shape, attrs: bins that overlap (5 -> 3), widen (3 -> 5), divide
    ("avg-5x7-to-3x4", (1, 2, 5, 7), {"pooling_type": "avg", "ksize": [3, 4]}),
    ("max-5x7-to-3x4", (1, 2, 5, 7), {"pooling_type": "max", "ksize": [3, 4]}),
    ("avg-3x3-to-5x2", (2, 1, 3, 3), {"pooling_type": "avg", "ksize": [5, 2]}),
    ("max-6x6-to-2x3", (1, 2, 6, 6), {"pooling_type": "max", "ksize": [2, 3]}),
    ("avg-to-1x1", (2, 3, 4, 5), {"pooling_type": "avg", "ksize": [1, 1]}),
    ("max-nhwc", (1, 5, 4, 2), {"pooling_type": "max", "ksize": [2, 3], "data_format": "NHWC"}),
]
for _id, _shape, _attrs in _ADAPTIVE:
    row("pool2d", {"X": distinct(_shape)}, adaptive_pool_ref, f"pool2d-adaptive-{_id}",
        attrs=dict(_attrs, adaptive=True, strides=[2, 2], paddings=[1, 1]))


# ---------------------------------------------------------------- batch_norm
def bn_ref(ins, a):
    x = f64(ins["X"])
    nhwc = a["data_layout"] == "NHWC" or x.ndim == 2
    axes = tuple(d for d in range(x.ndim) if d != (x.ndim - 1 if nhwc else 1))
    shape = [1] * x.ndim
    shape[x.ndim - 1 if nhwc else 1] = -1
    scale, bias = f64(ins["Scale"]), f64(ins["Bias"])
    mean, var = f64(ins["Mean"]), f64(ins["Variance"])
    glob = a["use_global_stats"] or (a["is_test"] and not a["trainable_statistics"])
    if glob:
        mu, v = mean, var
        mean_out, var_out = mean, var
    else:
        mu, v = x.mean(axis=axes), x.var(axis=axes)      # biased variance, as Paddle
        m = a["momentum"]
        mean_out, var_out = m * mean + (1 - m) * mu, m * var + (1 - m) * v
    inv = 1.0 / np.sqrt(v + a["epsilon"])
    y = (x - mu.reshape(shape)) * (inv * scale).reshape(shape) + bias.reshape(shape)
    dt = ins["X"].dtype
    return {"Y": y.astype(dt), "MeanOut": mean_out.astype(dt), "VarianceOut": var_out.astype(dt),
            "SavedMean": mu.astype(dt), "SavedVariance": inv.astype(dt)}


def _bn_inputs(shape, c):
    return {"X": uniform(shape, -2.0, 2.0), "Scale": uniform((c,), 0.5, 1.5),
            "Bias": uniform((c,)), "Mean": uniform((c,)), "Variance": uniform((c,), 0.5, 2.0)}


for _id, _shape, _c, _attrs in [
        ("train-2d", (5, 3), 3, {}),
        ("train-4d", (2, 3, 2, 2), 3, {"momentum": 0.8, "epsilon": 1e-3}),
        ("train-nhwc", (2, 2, 2, 3), 3, {"data_layout": "NHWC"}),
        ("test-4d", (2, 3, 2, 2), 3, {"is_test": True}),
        ("test-2d", (4, 3), 3, {"is_test": True}),
        ("global_stats-4d", (2, 2, 3, 2), 2, {"use_global_stats": True}),
        # Paddle's F.batch_norm(training=False, use_global_stats=False): batch statistics
        ("test-trainable_statistics", (4, 3), 3,
         {"is_test": True, "trainable_statistics": True})]:
    row("batch_norm", _bn_inputs(_shape, _c), bn_ref, f"batch_norm-{_id}", attrs=_attrs,
        outputs_for_grad=("Y",))


# ---------------------------------------------------------------- dropout (deterministic)
def dropout_ref(ins, a):
    x, p = f64(ins["X"]), a["dropout_prob"]
    up = a["dropout_implementation"] == "upscale_in_train"
    if a["is_test"]:
        out, mask = (x if up else x * (1 - p)), np.ones(x.shape, np.uint8)
    elif p == 1.0:
        out, mask = np.zeros_like(x), np.zeros(x.shape, np.uint8)
    else:                                   # p == 0: nothing dropped
        out, mask = x, np.ones(x.shape, np.uint8)
    return {"Out": out.astype(ins["X"].dtype), "Mask": mask}


for _id, _p, _test, _impl in [("test-upscale", 0.3, True, "upscale_in_train"),
                              ("test-downgrade", 0.3, True, "downgrade_in_infer"),
                              ("train-p0-upscale", 0.0, False, "upscale_in_train"),
                              ("train-p0-downgrade", 0.0, False, "downgrade_in_infer"),
                              ("train-p1", 1.0, False, "upscale_in_train")]:
    row("dropout", {"X": uniform((3, 4))}, dropout_ref, f"dropout-{_id}",
        attrs={"dropout_prob": _p, "is_test": _test, "dropout_implementation": _impl,
               "seed": 5})


# ---------------------------------------------------------------- lookup_table_v2
def lookup_ref(ins, a):
    w, ids = ins["W"], ins["Ids"]
    out = np.array([np.zeros(w.shape[1]) if i == a["padding_idx"] else f64(w[i])
                    for i in ids.reshape(-1)]).reshape(ids.shape + (w.shape[1],))
    return {"Out": out.astype(w.dtype)}


for _id, _ids, _attrs in [
        ("basic", ints((2, 3), 0, 5), {}),
        ("repeated", const([[1, 1, 1], [0, 4, 1]], "int64"), {}),
        ("padding_idx", const([[2, 0, 2], [3, 2, 4]], "int64"), {"padding_idx": 2}),
        ("ids_1d_int32", const([4, 0, 4, 3], "int32"), {}),
        ("ids_3d_padding_0", const([[[0, 1]], [[1, 0]]], "int64"), {"padding_idx": 0})]:
    row("lookup_table_v2", {"W": uniform((5, 3)), "Ids": _ids}, lookup_ref,
        f"lookup_table_v2-{_id}", attrs=_attrs)



# ---------------------------------------------------------------- max_pool2d_with_index
def pool_index_ref(ins, a):
    """Max and its flat index h * W + w per window (adaptive bins or clipped windows)."""
    x = f64(ins["X"])
    N, C, H, W = x.shape
    if a["adaptive"]:
        (oh, ow) = a["ksize"]
        rows = [(math.floor(i * H / oh), math.ceil((i + 1) * H / oh)) for i in range(oh)]
        cols = [(math.floor(j * W / ow), math.ceil((j + 1) * W / ow)) for j in range(ow)]
    else:
        (kh, kw), (sh, sw), (ph, pw) = a["ksize"], a["strides"], a["paddings"]
        rows = [(max(i * sh - ph, 0), min(i * sh - ph + kh, H))
                for i in range((H + 2 * ph - kh) // sh + 1)]
        cols = [(max(j * sw - pw, 0), min(j * sw - pw + kw, W))
                for j in range((W + 2 * pw - kw) // sw + 1)]
    out = np.zeros((N, C, len(rows), len(cols)))
    mask = np.zeros(out.shape, np.int32)
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            win = x[:, :, r0:r1, c0:c1].reshape(N, C, -1)
            k = win.argmax(-1)
            out[:, :, i, j] = win.max(-1)
            mask[:, :, i, j] = (r0 + k // (c1 - c0)) * W + c0 + k % (c1 - c0)
    return {"Out": out.astype(ins["X"].dtype), "Mask": mask}


row("max_pool2d_with_index", {"X": distinct((2, 2, 7, 5))}, pool_index_ref,
    "max_pool2d_with_index-adaptive", attrs={"ksize": [3, 2], "adaptive": True},
    outputs_for_grad=("Out",))
row("max_pool2d_with_index", {"X": distinct((1, 2, 5, 6))}, pool_index_ref,
    "max_pool2d_with_index-k3s2p1", attrs={"ksize": [3, 3], "strides": [2, 2],
                                            "paddings": [1, 1]}, outputs_for_grad=("Out",))
