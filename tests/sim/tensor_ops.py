"""The CUDA kernels of the tensor-API ops (kernels/tensor/tensor_ops.py, gather_ops.py,
sampling.py): every op-table row of these ops, forward and (float inputs) gradient, equals
the CPU kernel; so do shapes spanning several blocks. Run by
tests/gpu/test_gpu_sim_tensor_ops.py."""
from op_compare import OpComparison

from numbaflow.kernels import get_op_def

OPS = ("where", "expand_as_v2", "tril_triu", "range", "linspace", "cumsum", "rsqrt", "erf",
       "silu", "relu6", "sign", "pad", "squared_l2_norm", "gather", "take_along_axis", "argsort",
       "multinomial")


def float_inputs(arrays):
    """Only rows whose inputs are float or bool (an `Index` aside) have a gradient to check."""
    kinds = {k: (a[0] if isinstance(a, list) else a).dtype.kind for k, a in arrays.items()}
    return all(v in "fb" or k == "Index" for k, v in kinds.items())


def extra_shapes(check):
    """(op, inputs, attrs) spanning several blocks."""
    u, rng = check.uniform, check.rng
    return [
        ("tril_triu", {"X": u(3, 40, 50)}, {"lower": False, "diagonal": 2}),
        ("cumsum", {"X": u(30, 20, 7)}, {"axis": 1}),
        ("gather", {"X": u(50, 30)}, {"axis": 1}),
        ("take_along_axis", {"Input": u(60, 20), "Index": rng.integers(0, 20, (60, 30))},
         {"Axis": 1}),
        ("range", {}, {"start": 3, "end": 900, "step": 2, "dtype": "int64"}),
        ("argsort", {"X": rng.integers(0, 5, (40, 30)).astype(float)}, {"descending": True}),
        ("linspace", {}, {"start": -2.0, "stop": 5.0, "num": 301}),
    ]


if __name__ == "__main__":
    check = OpComparison(f64_tol=1e-11)
    check.rows(lambda case: case.op in OPS, with_grad=float_inputs)
    extra = extra_shapes(check)
    extra[2][1]["Index"] = check.rng.integers(-30, 30, 70)
    for op, arrays, attrs in extra:
        full = dict(get_op_def(op).attrs, **attrs)
        out = check.compare(f"extra {op}", op, arrays, full)
        check.compare_grad(f"extra {op}", op, arrays, out, full)
    check.finish(at_least=40)
