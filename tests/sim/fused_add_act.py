"""fused_elemwise_add_activation and its gradient on the simulated GPU equal the CPU
kernels, for every functor order, broadcast and dtype; prints `checked N`. Run by
tests/graph/test_fuse_add_act.py."""
import numpy as np
from numbaflow.kernels import run_op
rng = np.random.default_rng(0)
u = lambda *s: rng.uniform(-1, 1, s)
F, G = "fused_elemwise_add_activation", "fused_elemwise_add_activation_grad"
cases = [  # (functor_list, X, Y, axis)
    (["relu", "elementwise_add"], u(2, 3, 2), u(3), 1),
    (["gelu", "elementwise_add"], u(3, 4), u(4), -1),
    (["elementwise_add", "tanh"], u(3, 4), u(3, 4), -1),
    (["elementwise_add", "scale"], u(3, 4), u(3, 4), -1),
    (["sigmoid", "elementwise_add"], u(4), u(3, 4), -1),
]
checked = 0
for fl, x, y, axis in cases:
    for dt in ("float32", "float64"):
        a = {"functor_list": fl, "axis": axis, "scale": 1.5, "bias": -0.5}
        ins = {"X": x.astype(dt), "Y": y.astype(dt)}
        cpu, gpu = run_op(F, ins, a), run_op(F, ins, a, device="gpu")
        gins = dict(ins, Out=cpu["Out"], IntermediateOut=cpu["IntermediateOut"],
                    **{"Out@GRAD": u(*cpu["Out"].shape).astype(dt)})
        ga = dict(a, functor_list=[f + "_grad" for f in fl])
        pairs = [(cpu, gpu), (run_op(G, gins, ga), run_op(G, gins, ga, device="gpu"))]
        for want, got in pairs:
            for k, w in want.items():
                tol = 1e-5 if dt == "float32" else 1e-12
                assert got[k].shape == w.shape and got[k].dtype == w.dtype, (fl, k)
                np.testing.assert_allclose(got[k], w, rtol=tol, atol=tol, err_msg=f"{fl} {k}")
                checked += 1
print("checked", checked)
