"""auc: the area under the ROC curve from bucketed prediction counts (Paddle's auc op).

Each row's positive-class score (the last column of Predict) falls into bucket
int(score * num_thresholds) (clipped into [0, num_thresholds]); StatPos / StatNeg count
positives / negatives per bucket and are updated in place, so persistable stats
accumulate over runs (the global AUC) and zeroed temporaries give one batch's AUC. AUC
is the trapezoid sum over the buckets from the highest score down, divided by
(positives x negatives), 0 when either is 0. The GPU kernel runs the same loop on one
thread: the op is a metric over a batch, not a hot path.
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op

cuda = None   # numba.cuda, bound by _gpu_kernels on first use (gpu_util's convention)


def _auc_loop(pred, width, label, pos, neg, nt, out):
    for i in range(label.shape[0]):
        b = int(pred[i * width + width - 1] * nt)
        b = min(max(b, 0), nt)
        if label[i] != 0:
            pos[b] += 1
        else:
            neg[b] += 1
    area = 0.0
    tp = 0.0
    tn = 0.0
    for k in range(nt, -1, -1):
        tp_prev, tn_prev = tp, tn
        tp += pos[k]
        tn += neg[k]
        area += abs(tn - tn_prev) * (tp + tp_prev) / 2.0
    out[0] = area / tp / tn if tp > 0.0 and tn > 0.0 else 0.0


auc_kernel = njit(nogil=True, cache=True)(_auc_loop)


@gpu_util.lazy
def _gpu_kernels():
    global cuda
    from numba import cuda
    loop = cuda.jit(device=True)(_auc_loop)

    @cuda.jit(cache=True)
    def auc_one_thread(pred, width, label, pos, neg, nt, out):
        if cuda.grid(1) == 0:
            loop(pred, width, label, pos, neg, nt, out)

    return gpu_util.Kernels(auc=auc_one_thread)


def _infer(ctx):
    p, lab, nt = ctx.input("Predict"), ctx.input("Label"), int(ctx.attr("num_thresholds"))
    if len(p.shape) != 2:
        raise ctx.error(f"Predict {ctx.name('Predict')} must be 2-D (batch, classes), got "
                        f"{tuple(p.shape)}")
    if lab.dtype.kind not in "iu":
        raise ctx.error(f"Label {ctx.name('Label')} must be int32 or int64, got {lab.dtype}")
    for slot in ("StatPos", "StatNeg"):
        s = ctx.input(slot)
        if tuple(s.shape) != (nt + 1,) or s.dtype != np.int64:
            raise ctx.error(f"{slot} {ctx.name(slot)} must be int64 of shape ({nt + 1},) "
                            f"(num_thresholds + 1), got {s.dtype} {tuple(s.shape)}")
    stat = VarInfo((nt + 1,), np.dtype("int64"))
    return {"AUC": VarInfo((), np.dtype("float64")), "StatPosOut": stat, "StatNegOut": stat}


def _args(cop, ins, outs):
    pred, lab = ins["Predict"][0], ins["Label"][0]
    pairs = [(outs["StatPosOut"][0], ins["StatPos"][0]), (outs["StatNegOut"][0], ins["StatNeg"][0])]
    copies = [(o, i) for o, i in pairs if o is not i]
    return (pred.reshape(pred.size), int(pred.shape[1]), lab.reshape(lab.size), pairs[0][0],
            pairs[1][0], int(cop.attrs["num_thresholds"]), outs["AUC"][0].reshape(1)), copies


def _cpu(cop):
    def bind(ins, outs):
        args, copies = _args(cop, ins, outs)
        calls = [functools.partial(np.copyto, o, i) for o, i in copies]
        calls.append(functools.partial(auc_kernel, *args))
        return gpu_util.sequence(calls)
    return bind


def _gpu(cop):
    def bind(ins, outs):
        args, copies = _args(cop, ins, outs)
        calls = [gpu_util.copy_thunk(i, o) for o, i in copies]
        calls.append(functools.partial(gpu_util.configured(_gpu_kernels().auc, 1, 1), *args))
        return gpu_util.sequence(calls)
    return bind


register_op(OpDef(
    "auc", (Slot("Predict"), Slot("Label", no_grad=True), Slot("StatPos"), Slot("StatNeg")),
    (Slot("AUC"), Slot("StatPosOut"), Slot("StatNegOut")), _infer, _cpu, gpu=_gpu,
    attrs={"curve": "ROC", "num_thresholds": 4095, "slide_steps": 1},
    inplace={"StatPosOut": "StatPos", "StatNegOut": "StatNeg"},
    traits=frozenset((NO_GRAD,)),
    doc="AUC of the ROC curve from per-bucket positive/negative counts (updated in place)"))
