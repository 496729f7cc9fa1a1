"""Metric ops: accuracy (top-k, Paddle fluid/static semantics).

Paddle's accuracy op reads the output of a separate top_k op; numbaflow's takes the
scores directly (what `metric.accuracy` feeds it) and counts a row as correct when its
label is among the k largest scores. Ties count in the label's favour: the row is
correct when fewer than k scores are strictly greater than the label's score.

The GPU kernel (gpu_util.accuracy_block, one block counting with a shared-memory tree)
cannot raise: a label outside [0, classes) makes Accuracy NaN and goes into the device's
error record, which the executor raises as this kernel's ValueError (gpu_util).
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_errors, gpu_util
from ..gpu.gpu_errors import ERR_ACCURACY, ERROR_MESSAGES, DataError
from ..registry import MAY_FAIL, NO_GRAD, OpDef, Slot, VarInfo, register_op

_MSG = ERROR_MESSAGES[ERR_ACCURACY][1]     # an out-of-range label (DataError formats it)


@njit(nogil=True, cache=True, error_model="numpy")
def accuracy_kernel(x, label, k, acc, correct, total):
    N, C = x.shape
    n_ok = 0
    for i in range(N):
        lab = label[i]
        if lab < 0 or lab >= C:
            raise DataError(_MSG, lab, i, C)
        s = x[i, lab]
        above = 0
        for j in range(C):
            if x[i, j] > s:
                above += 1
        if above < k:
            n_ok += 1
    correct[0] = n_ok
    total[0] = N
    acc[0] = n_ok / N if N > 0 else 0.0


def _accuracy_infer(ctx):
    x, lab = ctx.input("Out"), ctx.input("Label")
    xn, ln = ctx.name("Out"), ctx.name("Label")
    if len(x.shape) != 2:
        raise ctx.error(f"Out {xn} must be 2-D scores (batch, classes), got shape "
                        f"{tuple(x.shape)}")
    if lab.dtype.kind not in "iu":
        raise ctx.error(f"Label {ln} must be int64 or int32, got {lab.dtype}")
    ls = tuple(lab.shape)
    if not (len(ls) == 1 or (len(ls) == 2 and ls[1] in (1, -1))):
        raise ctx.error(f"Label {ln} must have shape (batch, 1) or (batch,), got {ls}")
    if -1 not in (ls[0], x.shape[0]) and ls[0] != x.shape[0]:
        raise ctx.error(f"Label {ln} has {ls[0]} rows but Out {xn} has {x.shape[0]} "
                        f"(shape {tuple(x.shape)})")
    k = ctx.attr("k")
    if k < 1 or (x.shape[1] != -1 and k > x.shape[1]):
        raise ctx.error(f"k={k} must be between 1 and the number of classes "
                        f"{x.shape[1]} of Out {xn}")
    return {"Accuracy": VarInfo((), np.dtype("float32")),
            "Correct": VarInfo((), np.dtype("int64")),
            "Total": VarInfo((), np.dtype("int64"))}


def _accuracy_cpu(cop):
    k = int(cop.attrs["k"])

    def bind(ins, outs):
        x, lab = ins["Out"][0], ins["Label"][0]
        # Correct and Total are optional outputs: scratch buffers when not wanted
        res = [(outs.get(s) or [np.zeros((), dt)])[0].reshape(1)
               for s, dt in (("Accuracy", np.float32), ("Correct", np.int64),
                             ("Total", np.int64))]
        return functools.partial(accuracy_kernel, x, lab.reshape(-1), k, *res)
    return bind


def _accuracy_gpu(cop):
    k = int(cop.attrs["k"])

    def bind(ins, outs):
        from numba import cuda
        x, lab = ins["Out"][0], ins["Label"][0]
        res = [gpu_util.flat((outs.get(s) or [cuda.device_array((), dt)])[0])
               for s, dt in (("Accuracy", np.float32), ("Correct", np.int64),
                             ("Total", np.int64))]
        kern = gpu_util.common().accuracy_block
        return gpu_util.launch_rows(kern, 1, x.shape[0], x, gpu_util.flat(lab), k, *res,
                                    gpu_errors.error_record())
    return bind


register_op(OpDef(
    "accuracy", (Slot("Out"), Slot("Label", no_grad=True)),
    (Slot("Accuracy"), Slot("Correct", optional=True), Slot("Total", optional=True)),
    _accuracy_infer, _accuracy_cpu, gpu=_accuracy_gpu,
    attrs={"k": 1}, traits=frozenset((NO_GRAD, MAY_FAIL)),
    doc="Accuracy = Correct / Total, Correct = rows whose Label is among the top k of Out"))
