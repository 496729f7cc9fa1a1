"""The CUDA kernels of the ops added for Paddle programs (slice, strided_slice, one_hot,
top_k, layer_norm, sigmoid_cross_entropy_with_logits, the extra optimizers): each op-table
row, forward and gradient, equals the CPU kernel; so do shapes bigger than the rows (several
blocks); and one_hot out of range, which a GPU kernel cannot raise on, gives zeros. Run by
tests/gpu/test_gpu_sim_paddle_ops.py."""
import numpy as np
from op_compare import OpComparison

from numbaflow.kernels import get_op_def, run_op

OPS = ("slice", "strided_slice", "one_hot", "top_k", "layer_norm",
       "sigmoid_cross_entropy_with_logits", "adagrad", "rmsprop", "adamax", "adamw", "lamb", "auc")


def extra_shapes(check):
    """(op, inputs, attrs) with several blocks / rows longer than a block."""
    u = check.uniform
    return [
        ("slice", {"Input": u(70, 9, 5)}, {"axes": [0, 2], "starts": [3, 1], "ends": [-2, 4],
                                           "decrease_axis": [], "infer_flags": []}),
        ("strided_slice", {"Input": u(70, 9, 5)}, {"axes": [0, 2], "starts": [60, 0],
                                                   "ends": [2, 5], "strides": [-3, 2]}),
        ("top_k", {"X": u(130, 40)}, {"k": 5}),
        ("layer_norm", {"X": u(130, 70), "Scale": u(70), "Bias": u(70)}, {}),
        ("one_hot", {"X": check.rng.integers(0, 9, (300, 1))}, {"depth": 9}),
    ]


if __name__ == "__main__":
    check = OpComparison(f64_tol=1e-11)
    check.rows(lambda case: case.op in OPS)
    for op, arrays, attrs in extra_shapes(check):
        full = dict(get_op_def(op).attrs, **attrs)
        out = check.compare(f"extra {op}", op, arrays, full)
        if op != "one_hot":
            check.compare_grad(f"extra {op}", op, arrays, out, full)
    r = run_op("one_hot", {"X": np.array([[1], [5]])}, {"depth": 3}, device="gpu")
    if not (r["Out"][1] == 0).all() or r["Out"][0, 1] != 1:
        check.failures.append(f"one_hot out of range: {r['Out']}")
    check.finish(at_least=20)
