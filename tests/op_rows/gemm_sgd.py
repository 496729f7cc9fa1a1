"""Table row for mul_grad_sgd (kernels/fused/gemm_sgd.py): mul_grad's input gradient, and the
SGD update of Y by X^T @ dOut, from numpy in float64."""
from numbaflow.testing.op_test import const, uniform

from . import f64, row


def mul_grad_sgd_ref(ins, a):
    x, y, d, lr = (f64(ins[k]) for k in ("X", "Y", "Out@GRAD", "LearningRate"))
    x2 = x.reshape(-1, y.shape[0])
    d2 = d.reshape(x2.shape[0], y.shape[1])
    return {"X@GRAD": (d2 @ y.T).reshape(x.shape).astype(ins["X"].dtype),
            "ParamOut": (y - lr[0] * (x2.T @ d2)).astype(ins["Y"].dtype)}


row("mul_grad_sgd", {"X": uniform((6, 4)), "Y": uniform((4, 5)), "Out@GRAD": uniform((6, 5)),
                     "LearningRate": const([0.1])}, mul_grad_sgd_ref)
row("mul_grad_sgd", {"X": uniform((2, 3, 4)), "Y": uniform((4, 5)),
                     "Out@GRAD": uniform((2, 3, 5)), "LearningRate": const([0.05])},
    mul_grad_sgd_ref, "mul_grad_sgd-x_num_col_dims2", attrs={"x_num_col_dims": 2})
