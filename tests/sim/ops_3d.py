"""The CUDA kernels of the 3-D ops (conv3d, pool3d and their gradients): each op-table row,
forward and gradient, equals the CPU kernel; so do shapes bigger than the rows (several
blocks). Run by tests/gpu/test_gpu_sim_3d.py."""
from op_compare import OpComparison

from numbaflow.kernels import get_op_def

OPS = ("conv3d", "pool3d", "max_pool3d_with_index")


def extra_shapes(check):
    """(op, inputs, attrs) with more elements than one block."""
    u = check.uniform
    return [
        ("conv3d", {"Input": u(2, 3, 5, 6, 7), "Filter": u(4, 3, 3, 2, 3)},
         {"strides": [1, 2, 1], "paddings": [1, 1, 1]}),
        ("conv3d", {"Input": u(1, 5, 6, 6, 4), "Filter": u(4, 2, 2, 3, 2)},
         {"data_format": "NDHWC", "groups": 2, "dilations": [1, 2, 1]}),
        ("pool3d", {"X": u(2, 3, 6, 7, 5)}, {"ksize": [3, 3, 2], "strides": [2, 2, 1],
                                             "paddings": [1, 1, 0], "ceil_mode": True}),
        ("pool3d", {"X": u(1, 6, 5, 7, 4)}, {"pooling_type": "avg", "ksize": [2, 3, 3],
                                             "adaptive": True, "data_format": "NDHWC"}),
    ]


if __name__ == "__main__":
    check = OpComparison(f64_tol=1e-11)
    check.rows(lambda case: case.op in OPS)
    for op, arrays, attrs in extra_shapes(check):
        full = dict(get_op_def(op).attrs, **attrs)
        out = check.compare(f"extra {op}", op, arrays, full)
        check.compare_grad(f"extra {op}", op, arrays, out, full)
    check.finish(at_least=10)
