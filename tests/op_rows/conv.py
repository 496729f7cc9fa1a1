"""Table rows for conv2d and depthwise_conv2d (and, through their backward, the _grad ops).

The reference is a direct loop over output positions with an einsum per window, on an
explicitly zero-padded float64 copy of the input: it shares nothing with the kernels
(no im2col, no padded-plane buffers). Inputs are tiny: the gradient check moves every
input element.
"""
import numpy as np

from numbaflow.testing.op_test import away_from_zero, uniform

from . import f64, row


def _pads4(p):
    p = list(p)
    return p * 4 if len(p) == 1 else [p[0], p[0], p[1], p[1]] if len(p) == 2 else p


def conv_ref_np(x, w, strides, paddings, dilations, groups, relu_in=False):
    """NCHW convolution, float64: out[n, m, oh, ow] = sum over the window of group(m)."""
    x, w = f64(x), f64(w)
    if relu_in:
        x = np.maximum(x, 0.0)
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    pt, pb, pl, pr = _pads4(paddings)
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh_n = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow_n = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, m, oh_n, ow_n))
    mg = m // groups
    for oh in range(oh_n):
        for ow in range(ow_n):
            rows = slice(oh * sh, oh * sh + dh * (kh - 1) + 1, dh)
            cols = slice(ow * sw, ow * sw + dw * (kw - 1) + 1, dw)
            for g in range(groups):
                window = xp[:, g * cg:(g + 1) * cg, rows, cols]          # (n, cg, kh, kw)
                out[:, g * mg:(g + 1) * mg, oh, ow] = np.einsum(
                    "nckl,mckl->nm", window, w[g * mg:(g + 1) * mg])
    return out


def conv_ref(ins, a):
    out = conv_ref_np(ins["Input"], ins["Filter"], a["strides"], a["paddings"], a["dilations"],
                      a["groups"], a.get("fuse_relu_before_depthwise_conv", False))
    return {"Output": out.astype(ins["Input"].dtype)}


# Sums of up to ~30 products: float32 rounding reaches a few 1e-6 near zero outputs.
TOL = dict(rtol=1e-5, atol=1e-5)

# ---------------------------------------------------------------- conv2d
# id: (Input shape, Filter shape, attrs)
CONV2D = {
    "basic": ((2, 3, 5, 5), (4, 3, 3, 3), {}),
    "stride2_pad1": ((1, 2, 6, 5), (3, 2, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}),
    "dilation2": ((1, 2, 7, 7), (2, 2, 3, 3), {"dilations": [2, 2], "paddings": [2, 2]}),
    "groups2": ((2, 4, 4, 4), (6, 2, 3, 3), {"groups": 2, "paddings": [1, 1]}),
    "pad4_asymmetric": ((1, 2, 5, 6), (2, 2, 3, 2), {"paddings": [1, 0, 2, 1],
                                                     "strides": [1, 2]}),
    "1x1": ((2, 4, 3, 3), (5, 4, 1, 1), {}),
    "stride1_pad4_asymmetric": ((2, 2, 5, 6), (3, 2, 3, 2), {"paddings": [1, 0, 2, 1]}),
    "lenet_5x5_pad2": ((2, 1, 8, 8), (3, 1, 5, 5), {"paddings": [2, 2]}),
    "1x1_groups2": ((2, 4, 3, 3), (6, 2, 1, 1), {"groups": 2}),
    "1x1_stride2": ((1, 3, 5, 5), (2, 3, 1, 1), {"strides": [2, 2]}),
    "nonsquare": ((1, 3, 6, 5), (2, 3, 2, 4), {"strides": [2, 1], "paddings": [0, 1]}),
    "stride_dilation_mixed": ((1, 2, 8, 7), (2, 1, 2, 3), {"groups": 2, "strides": [1, 2],
                                                           "dilations": [3, 1],
                                                           "paddings": [0, 1, 1, 0]}),
}
for _id, (_xs, _ws, _attrs) in CONV2D.items():
    row("conv2d", {"Input": uniform(_xs), "Filter": uniform(_ws)}, conv_ref, f"conv2d-{_id}",
        attrs=_attrs, **TOL)

# ---------------------------------------------------------------- depthwise_conv2d
# groups == channels; Filter [channels * multiplier, 1, kh, kw]
DEPTHWISE = {
    "3x3": ((2, 3, 5, 5), (3, 1, 3, 3), {"paddings": [1, 1]}),
    "3x3_multiplier2": ((1, 2, 5, 4), (4, 1, 3, 3), {"paddings": [1, 1]}),
    "3x3_stride2": ((1, 2, 6, 7), (2, 1, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}),
    "5x5": ((1, 2, 6, 6), (2, 1, 5, 5), {"paddings": [2, 2]}),
    "5x5_stride2": ((1, 2, 7, 7), (2, 1, 5, 5), {"strides": [2, 2], "paddings": [2, 2]}),
    "dilation2_pad4": ((1, 2, 7, 6), (2, 1, 3, 3), {"dilations": [2, 2],
                                                    "paddings": [1, 2, 0, 1]}),
    "nonsquare_stride": ((1, 2, 6, 7), (4, 1, 2, 3), {"strides": [1, 2], "paddings": [1, 0]}),
}
for _id, (_xs, _ws, _attrs) in DEPTHWISE.items():
    _a = dict(_attrs, groups=_xs[1])
    row("depthwise_conv2d", {"Input": uniform(_xs), "Filter": uniform(_ws)}, conv_ref,
        f"depthwise_conv2d-{_id}", attrs=_a, **TOL)
# relu applied to Input inside the kernel: inputs kept away from relu's kink at 0
for _id in ("3x3", "3x3_multiplier2", "5x5", "5x5_stride2", "nonsquare_stride"):
    _xs, _ws, _attrs = DEPTHWISE[_id]
    row("depthwise_conv2d", {"Input": away_from_zero(_xs), "Filter": uniform(_ws)}, conv_ref,
        f"depthwise_conv2d-{_id}-fuse_relu",
        attrs=dict(_attrs, groups=_xs[1], fuse_relu_before_depthwise_conv=True), **TOL)

# ---------------------------------------------------------------- fused_conv2d
def fused_conv_ref(ins, a):
    """act(conv + Bias), or act(batch_norm_is_test(conv + Bias)), from the definitions."""
    out = conv_ref_np(ins["Input"], ins["Filter"], a["strides"], a["paddings"], a["dilations"],
                      a["groups"])
    ch = lambda s: f64(ins[s])[None, :, None, None]      # noqa: E731 (per output channel)
    if "Bias" in ins:
        out = out + ch("Bias")
    if "BNScale" in ins:
        out = (out - ch("BNMean")) / np.sqrt(ch("BNVariance") + a["epsilon"]) * ch("BNScale") \
            + ch("BNBias")
    if a["activation"] == "relu":
        out = np.maximum(out, 0.0)
    return {"Output": out.astype(ins["Input"].dtype)}


def _positive(n):
    return lambda rng: rng.uniform(0.5, 2.0, n)


# each conv path (unit stride, strided, 1x1) with the bias, with bias + relu, and with a
# folded batch_norm (inference only: no gradient)
for _id in ("lenet_5x5_pad2", "stride2_pad1", "1x1_groups2", "groups2"):
    _xs, _ws, _attrs = CONV2D[_id]
    _m = _ws[0]
    _base = {"Input": uniform(_xs), "Filter": uniform(_ws), "Bias": uniform((_m,))}
    row("fused_conv2d", _base, fused_conv_ref, f"fused_conv2d-{_id}-bias", attrs=_attrs, **TOL)
    row("fused_conv2d", _base, fused_conv_ref, f"fused_conv2d-{_id}-bias-relu",
        attrs=dict(_attrs, activation="relu"), **TOL)
    _bn = {"BNScale": _positive(_m), "BNBias": uniform((_m,)), "BNMean": uniform((_m,)),
           "BNVariance": _positive(_m)}
    row("fused_conv2d", dict(_base, **_bn), fused_conv_ref, f"fused_conv2d-{_id}-bn-relu",
        attrs=dict(_attrs, activation="relu", epsilon=1e-3), grad_inputs=(), **TOL)
    row("fused_conv2d", {"Input": uniform(_xs), "Filter": uniform(_ws)}, fused_conv_ref,
        f"fused_conv2d-{_id}-nobias-relu", attrs=dict(_attrs, activation="relu"), **TOL)
    row("fused_conv2d", dict({"Input": uniform(_xs), "Filter": uniform(_ws)}, **_bn),
        fused_conv_ref, f"fused_conv2d-{_id}-nobias-bn", attrs=_attrs, grad_inputs=(), **TOL)


# ---------------------------------------------------------------- conv2d_transpose
def conv_transpose_ref(ins, a):
    """Paddle's conv2d_transpose from its definition: each input element scatters
    x[n, c, ih, iw] * W[c, mo, i, j] to output row ih*sh - pt + i*dh, column iw*sw - pl +
    j*dw of channel group(c) * C_out/groups + mo (into a buffer with the paddings, cropped)."""
    x, w = f64(ins["Input"]), f64(ins["Filter"])
    n, c, h, wd = x.shape
    _, mg, kh, kw = w.shape
    G = a["groups"]
    (sh, sw), (dh, dw) = a["strides"], a["dilations"]
    pt, pb, pl, pr = _pads4(a["paddings"])
    op = list(a["output_padding"]) or [0, 0]
    full = np.zeros((n, mg * G, (h - 1) * sh + dh * (kh - 1) + 1 + op[0] + pb,
                     (wd - 1) * sw + dw * (kw - 1) + 1 + op[1] + pr))
    cg = c // G
    for ih in range(h):
        for iw in range(wd):
            for i in range(kh):
                for j in range(kw):
                    for g in range(G):
                        full[:, g * mg:(g + 1) * mg, ih * sh + i * dh, iw * sw + j * dw] += \
                            x[:, g * cg:(g + 1) * cg, ih, iw] @ w[g * cg:(g + 1) * cg, :, i, j]
    oh = (h - 1) * sh - pt - pb + dh * (kh - 1) + 1 + op[0]
    ow = (wd - 1) * sw - pl - pr + dw * (kw - 1) + 1 + op[1]
    return {"Output": full[:, :, pt:pt + oh, pl:pl + ow].astype(ins["Input"].dtype)}


# id: (Input shape, Filter shape [C_in, C_out/groups, kh, kw], attrs)
CONV2D_TRANSPOSE = {
    "basic": ((2, 3, 3, 3), (3, 2, 3, 3), {}),
    "stride2_pad1": ((1, 2, 3, 4), (2, 3, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}),
    "stride2_output_padding": ((1, 2, 3, 3), (2, 2, 3, 3),
                               {"strides": [2, 2], "paddings": [1, 1], "output_padding": [1, 1]}),
    "groups2_dilation": ((2, 4, 3, 3), (4, 1, 2, 2), {"groups": 2, "dilations": [2, 1]}),
    "pad4_asymmetric_stride": ((1, 2, 3, 4), (2, 2, 3, 2),
                               {"paddings": [1, 0, 0, 1], "strides": [2, 3]}),
    "1x1": ((2, 3, 3, 3), (3, 4, 1, 1), {}),
    "4x4_stride2_pad1": ((1, 3, 2, 2), (3, 2, 4, 4), {"strides": [2, 2], "paddings": [1, 1]}),
}
for _id, (_xs, _ws, _attrs) in CONV2D_TRANSPOSE.items():
    row("conv2d_transpose", {"Input": uniform(_xs), "Filter": uniform(_ws)}, conv_transpose_ref,
        f"conv2d_transpose-{_id}", attrs=_attrs, **TOL)
row("depthwise_conv2d_transpose", {"Input": uniform((2, 3, 3, 4)), "Filter": uniform((3, 1, 3, 2))},
    conv_transpose_ref, "depthwise_conv2d_transpose-stride2",
    attrs={"groups": 3, "strides": [2, 1], "paddings": [1, 0]}, **TOL)
