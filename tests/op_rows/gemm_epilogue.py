"""Table rows for fused_gemm_epilogue (kernels/fused/gemm_epilogue.py): act(flatten(X) @
op(Y) + Bias) from numpy in float64 (gelu from math.erf / tanh), ReserveSpace the
pre-activation; the gradient rows check DX, DY and DBias by finite differences of Out."""
import math

import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row

_erf = np.vectorize(math.erf)


def gemm_epilogue_ref(ins, a):
    x, y, b = (f64(ins[k]) for k in ("X", "Y", "Bias"))
    y = y.T if a["trans_y"] else y
    z = x.reshape(-1, y.shape[0]) @ y + b
    z = z.reshape(tuple(x.shape[:a["x_num_col_dims"]]) + (y.shape[1],))
    act = a["activation"]
    if act == "relu":
        out = np.maximum(z, 0.0)
    elif act == "gelu" and a["approximate"]:
        out = 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))
    elif act == "gelu":
        out = 0.5 * z * (1.0 + _erf(z / math.sqrt(2.0)))
    else:
        out = z
    dt = ins["X"].dtype
    res = {"Out": out.astype(dt)}
    if act == "gelu":
        res["ReserveSpace"] = z.astype(dt)
    return res


_TOL = dict(rtol=1e-4, atol=1e-5, outputs_for_grad=("Out",))
for _act, _extra in (("none", {}), ("relu", {}), ("gelu", {}), ("gelu", {"approximate": True})):
    _id = "-".join([_act] + [k for k in _extra])
    row("fused_gemm_epilogue", {"X": uniform((2, 5, 4)), "Y": uniform((4, 6)),
                                "Bias": uniform((6,))}, gemm_epilogue_ref,
        f"fused_gemm_epilogue-{_id}", attrs=dict(_extra, activation=_act, x_num_col_dims=2),
        **_TOL)
row("fused_gemm_epilogue", {"X": uniform((7, 4)), "Y": uniform((6, 4)), "Bias": uniform((6,))},
    gemm_epilogue_ref, "fused_gemm_epilogue-gelu-trans_y",
    attrs={"activation": "gelu", "trans_y": True}, **_TOL)
