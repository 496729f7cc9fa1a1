"""Table rows for fused_elementwise (the auto_fusion pass's op): groups written by hand,
with references composed in numpy from the math (not from the sub-ops' bodies)."""
import numpy as np

from numbaflow.kernels.fused.fused_elementwise import make_ops
from numbaflow.testing.op_test import away_from_zero, uniform

from . import F, row


def x(i):
    return ("x", i)


def out(j):
    return ("out", j)


def tmp(k):
    return ("tmp", k)


# fc's bias add on a channel axis (Paddle axis=1) + relu; the pre-activation is also an output
row("fused_elementwise", {"X": [uniform((2, 3, 4)), uniform((3,))]},
    lambda ins, a: {"Out": [(ins["X"][0] + ins["X"][1][None, :, None]),
                            np.maximum(ins["X"][0] + ins["X"][1][None, :, None], 0.0)]},
    id="fused_elementwise-add_axis1_relu",
    attrs={"ops": make_ops([
        ("elementwise_add", {"axis": 1}, {"X": [x(0)], "Y": [x(1)]}, {"Out": [out(0)]}),
        ("relu", {}, {"X": [out(0)]}, {"Out": [out(1)]})])})


# the backward of that: relu_grad -> add_grad, the bias gradient summed down to (3,)
def _bwd_ref(ins, a):
    o, d = ins["X"][0], ins["X"][1]
    g = np.where(o > 0, d, 0.0)
    return {"Out": [g, g.sum(axis=(0, 2))]}


row("fused_elementwise", {"X": [away_from_zero((2, 3, 4)), uniform((2, 3, 4)),
                                uniform((2, 3, 4)), uniform((3,))]},
    _bwd_ref, id="fused_elementwise-relu_grad_add_grad",
    attrs={"ops": make_ops([
        ("relu_grad", {}, {"Out": [x(0)], "Out@GRAD": [x(1)]}, {"X@GRAD": [tmp(0)]}),
        ("elementwise_add_grad", {"axis": 1}, {"X": [x(2)], "Y": [x(3)], "Out@GRAD": [tmp(0)]},
         {"X@GRAD": [out(0)], "Y@GRAD": [out(1)]})])})

# one input aligned two ways (axis=1 and trailing), a chain through a temporary, sigmoid
row("fused_elementwise", {"X": [uniform((2, 4, 4)), uniform((4,))]},
    lambda ins, a: {"Out": [1.0 / (1.0 + np.exp(0.5 - (ins["X"][0] + ins["X"][1][None, :, None])
                                                * ins["X"][1][None, None, :] * 2.0))]},
    id="fused_elementwise-two_alignments",
    attrs={"ops": make_ops([
        ("elementwise_add", {"axis": 1}, {"X": [x(0)], "Y": [x(1)]}, {"Out": [tmp(0)]}),
        ("elementwise_mul", {"axis": -1}, {"X": [tmp(0)], "Y": [x(1)]}, {"Out": [tmp(1)]}),
        ("scale", {"scale": 2.0, "bias": -0.5}, {"X": [tmp(1)]}, {"Out": [tmp(2)]}),
        ("sigmoid", {}, {"X": [tmp(2)]}, {"Out": [out(0)]})])})

# a dtype change inside: a comparison (bool output), cast back to float, a product
row("fused_elementwise", {"X": [uniform((3, 4)), uniform((3, 4))]},
    lambda ins, a: {"Out": [ins["X"][0] > ins["X"][1],
                            (ins["X"][0] > ins["X"][1]).astype(F) * ins["X"][0]]},
    id="fused_elementwise-compare_cast", dtypes=("float64",),
    attrs={"ops": make_ops([
        ("greater_than", {}, {"X": [x(0)], "Y": [x(1)]}, {"Out": [out(0)]}),
        ("cast", {"in_dtype": "bool", "out_dtype": "float64"}, {"X": [out(0)]},
         {"Out": [tmp(0)]}),
        ("elementwise_mul", {}, {"X": [tmp(0)], "Y": [x(0)]}, {"Out": [out(1)]})])})

# gradient accumulation: sum of three, then an exported pass-through copy
row("fused_elementwise", {"X": [uniform((2, 5)), uniform((2, 5)), uniform((2, 5))]},
    lambda ins, a: {"Out": [ins["X"][0] + ins["X"][1] + ins["X"][2],
                            ins["X"][1].copy()]},
    id="fused_elementwise-sum_assign",
    attrs={"ops": make_ops([
        ("sum", {}, {"X": [x(0), x(1), x(2)]}, {"Out": [out(0)]}),
        ("assign", {}, {"X": [x(1)]}, {"Out": [out(1)]})])})

# a matmul head (its output only in scratch), a bias add, tanh, and a reduce_sum tail
row("fused_elementwise", {"X": [uniform((3, 4)), uniform((4, 5)), uniform((5,))]},
    lambda ins, a: {"Out": [np.tanh(ins["X"][0] @ ins["X"][1] + ins["X"][2]),
                            np.tanh(ins["X"][0] @ ins["X"][1] + ins["X"][2]).sum(axis=1)]},
    id="fused_elementwise-mul_head_reduce_tail",
    attrs={"ops": make_ops([
        ("mul", {}, {"X": [x(0)], "Y": [x(1)]}, {"Out": [tmp(0)]}),
        ("elementwise_add", {}, {"X": [tmp(0)], "Y": [x(2)]}, {"Out": [tmp(1)]}),
        ("tanh", {}, {"X": [tmp(1)]}, {"Out": [out(0)]}),
        ("reduce_sum", {"dim": [1]}, {"X": [out(0)]}, {"Out": [out(1)]})])})

# softmax tail reading a value that is not an output (scratch)
row("fused_elementwise", {"X": [uniform((2, 6)), uniform((6,))]},
    lambda ins, a: {"Out": [np.exp(ins["X"][0] * ins["X"][1]) /
                            np.exp(ins["X"][0] * ins["X"][1]).sum(1, keepdims=True)]},
    id="fused_elementwise-softmax_tail",
    attrs={"ops": make_ops([
        ("elementwise_mul", {}, {"X": [x(0)], "Y": [x(1)]}, {"Out": [tmp(0)]}),
        ("softmax", {}, {"X": [tmp(0)]}, {"Out": [out(0)]})])})
