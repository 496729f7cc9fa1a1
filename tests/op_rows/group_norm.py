"""Table rows for group_norm and instance_norm (kernels/nn/group_norm.py): the reference
normalises each (sample, group) block with numpy's mean and biased variance in float64,
then applies the per-channel scale and bias (Paddle's definitions; instance_norm's
SavedVariance is 1 / sqrt(var + epsilon), group_norm's Variance the variance)."""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row


def norm_ref(ins, a, groups, nhwc=False, inv=False):
    x = f64(ins["X"])
    if nhwc:
        x = np.moveaxis(x, -1, 1)
    N, C = x.shape[:2]
    xb = x.reshape(N, groups, -1)
    m, v = xb.mean(-1), xb.var(-1)
    y = ((xb - m[..., None]) / np.sqrt(v[..., None] + a["epsilon"])).reshape(x.shape)
    cshape = (1, C) + (1,) * (x.ndim - 2)
    if ins.get("Scale") is not None:
        y = y * f64(ins["Scale"]).reshape(cshape)
    if ins.get("Bias") is not None:
        y = y + f64(ins["Bias"]).reshape(cshape)
    if nhwc:
        y = np.moveaxis(y, 1, -1)
    dt = ins["X"].dtype
    y = np.ascontiguousarray(y).astype(dt)
    if inv:
        return {"Y": y, "SavedMean": m.reshape(-1).astype(dt),
                "SavedVariance": (1 / np.sqrt(v + a["epsilon"])).reshape(-1).astype(dt)}
    return {"Y": y, "Mean": m.astype(dt), "Variance": v.astype(dt)}


def gn(groups, nhwc=False):
    return lambda ins, a: norm_ref(ins, a, groups, nhwc)


def inorm(ins, a):
    return norm_ref(ins, a, ins["X"].shape[1], inv=True)


TOL = dict(rtol=1e-4, atol=1e-5, outputs_for_grad=("Y",), grad_rtol=1e-5)
row("group_norm", {"X": uniform((2, 4, 3, 3)), "Scale": uniform((4,)), "Bias": uniform((4,))},
    gn(2), "group_norm-g2", attrs={"groups": 2}, **TOL)
row("group_norm", {"X": uniform((2, 6, 5)), "Scale": uniform((6,))}, gn(3),
    "group_norm-3d-scale-only", attrs={"groups": 3, "epsilon": 1e-3}, **TOL)
row("group_norm", {"X": uniform((1, 3, 2, 4))}, gn(1), "group_norm-g1-no-affine",
    attrs={"groups": 1}, **TOL)
row("group_norm", {"X": uniform((2, 3, 2, 4)), "Scale": uniform((4,)), "Bias": uniform((4,))},
    gn(2, nhwc=True), "group_norm-nhwc", attrs={"groups": 2, "data_layout": "NHWC"}, **TOL)
row("instance_norm", {"X": uniform((2, 3, 3, 4)), "Scale": uniform((3,)), "Bias": uniform((3,))},
    inorm, "instance_norm-affine", **TOL)
row("instance_norm", {"X": uniform((3, 2, 5))}, inorm, "instance_norm-1d-no-affine",
    attrs={"epsilon": 1e-3}, **TOL)
