"""Every op-table row of an op with a CUDA kernel runs on the simulated GPU and equals the
CPU kernel, forward and gradient; plus shapes the table's tiny rows do not reach, the random
initialisers, and bad data (the GPU raises the CPU kernel's ValueError word for word). Run
by tests/gpu/test_gpu_sim.py."""
import numpy as np
from op_compare import OpComparison

from numbaflow.kernels import get_op_def, run_op
from numbaflow.kernels.registry import RANDOM


def extra_shapes(u):
    """Several tiles / blocks, long rows, the wide-C (thread per output) reduction,
    non-contiguous reduced axes (the simulator's matmul tiles are 8x8, its row blocks 32
    threads)."""
    return [
        ("matmul_v2", {"X": u(2, 10, 17), "Y": u(17, 9)}, {}),
        ("matmul_v2", {"X": u(17, 10), "Y": u(2, 9, 17)}, {"trans_x": True, "trans_y": True}),
        ("mul", {"X": u(9, 3, 6), "Y": u(18, 10)}, {}),
        ("reduce_sum", {"X": u(2, 100)}, {"dim": [1]}),
        ("reduce_max", {"X": u(3, 5, 40)}, {"dim": [1]}),
        ("reduce_mean", {"X": u(3, 5, 40)}, {"dim": [0, 1]}),
        ("reduce_min", {"X": u(3, 4, 5, 2)}, {"dim": [0, 2], "keep_dim": True}),
        ("softmax", {"X": u(2, 70)}, {}),
        ("log_softmax", {"X": u(2, 70)}, {}),
        ("arg_max", {"X": u(2, 100)}, {}),
        ("transpose2", {"X": u(3, 1, 4, 5)}, {"axis": [3, 1, 0, 2]}),
        # GEMM: several 16x16 tiles (the simulator's big config) and all transposes
        ("matmul_v2", {"X": u(20, 35), "Y": u(33, 20)}, {"trans_x": True, "trans_y": True}),
        ("matmul_v2", {"X": u(3, 17, 20), "Y": u(20, 19)}, {}),
        # elementwise fast path: column (R, 1) and scalar broadcasts, 1-D same shape
        ("elementwise_mul", {"X": u(7, 9), "Y": u(7, 1)}, {}),
        ("elementwise_sub", {"X": u(7, 9), "Y": u(1)}, {}),
        ("elementwise_add", {"X": u(2, 7, 9), "Y": u(2, 1, 9)}, {}),
    ]


def bad_data(check):
    """A GPU kernel records bad data on the device and run_op raises the CPU kernel's
    ValueError, word for word; the record is cleared, so a good run afterwards passes."""
    x = check.uniform(3, 5)
    bad = [("softmax_with_cross_entropy", {"Logits": x, "Label": np.array([[1], [7], [-100]])}),
           ("cross_entropy", {"X": np.abs(x), "Label": np.array([[1], [7], [-100]])}),
           ("accuracy", {"Out": x, "Label": np.array([[0], [5], [1]])}),
           ("lookup_table_v2", {"W": x, "Ids": np.array([1, 3, -2])})]
    for op, arrays in bad:
        msgs = []
        for dev in ("cpu", "gpu"):
            try:
                run_op(op, arrays, {}, device=dev)
                msgs.append(None)
            except ValueError as e:
                msgs.append(str(e))
        if msgs[0] is None or msgs[0] != msgs[1]:
            check.failures.append(f"{op} bad data: cpu {msgs[0]!r} gpu {msgs[1]!r}")
        check.checked += 1
    good = run_op("cross_entropy", {"X": np.abs(x), "Label": np.array([[1], [2], [0]])}, {},
                  device="gpu")
    if not np.isfinite(good["Y"]).all():
        check.failures.append(f"cross_entropy after a recorded failure: {good}")


if __name__ == "__main__":
    check = OpComparison(f64_tol=1e-12)
    # every row's CPU run must succeed (grad ops too): a CPU error ends the script, so no
    # comparison is dropped silently
    check.rows(lambda case: get_op_def(case.op).gpu is not None
               and not get_op_def(case.op).has(RANDOM), full_attrs=False)
    for op, arrays, attrs in extra_shapes(check.uniform):
        for dtype in ("float32", "float64"):
            arrs = {k: v.astype(dtype) for k, v in arrays.items()}
            out = check.compare(f"extra {op} {attrs} {dtype}", op, arrs, attrs)
            check.compare_grad(f"extra {op} {attrs} {dtype}", op, arrs, out, attrs)
    # random initialisers: drawn on the host from the CPU kernel's stream, so equal
    for op in sorted(check.types):
        d = get_op_def(op)
        if d.has(RANDOM) and d.gpu is not None and not d.inputs:
            check.compare(op, op, {}, {"shape": [3, 4], "seed": 7, "dtype": "float32"})
    bad_data(check)
    # 1166 comparisons when this floor was set (op rows x dtypes, their grads, the extra
    # shapes, the initialisers, the bad data): fewer means some were skipped
    check.finish(at_least=1166)
