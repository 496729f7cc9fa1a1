"""Losses: softmax_with_cross_entropy (logits in) and cross_entropy (probabilities in),
with their gradient ops.

softmax_with_cross_entropy views Logits as (A, R, C) with R the class axis
(reduction.py's trick), so any `axis` runs the same loops; hard labels and the loss are
then (A, C). It computes log-softmax directly (max subtraction, log of the sum), never
log(softmax). A hard label outside [0, num_classes) that is not `ignore_index` raises
ValueError from the kernel (the ops are MAY_FAIL); rows whose label is `ignore_index`
get loss 0 and gradient 0.

GPU kernels cannot raise: there an out-of-range hard label (not ignore_index) gives a
loss of 0 for its row and goes into the device's error record (gpu_util), which the
executor reads once per run and raises as the CPU kernel's ValueError, leaving the
parameters as before the run. The row kernels (one block per row, shared-memory trees) are in gpu_util; the
per-element gradient kernels are here.
"""
import functools
import math

import numpy as np
from numba import float64, njit

from ..gpu import gpu_errors, gpu_util
from ..gpu.gpu_errors import ERR_SWCE, ERR_XENT, ERROR_MESSAGES, DataError
from ..math.reduction import arc_view, exp_shifted
from ..registry import MAY_FAIL, NO_GRAD, OpDef, Slot, VarInfo, numel, register_op


# ---------------------------------------------------------------- kernels
# An out-of-range label raises DataError (its message is formatted in Python); the
# executor adds the op's variable names around it.
_SWCE_MSG, _XENT_MSG = ERROR_MESSAGES[ERR_SWCE][1], ERROR_MESSAGES[ERR_XENT][1]


@njit(nogil=True, cache=True, error_model="numpy")
def swce_hard(x, label, sm, loss, ignore):
    A, R, C = x.shape
    for a in range(A):
        for c in range(C):
            m, s = exp_shifted(x, sm, a, c)
            for r in range(R):
                sm[a, r, c] = sm[a, r, c] / s
            lab = label[a, c]
            if lab == ignore:
                loss[a, c] = 0.0
            elif lab < 0 or lab >= R:
                raise DataError(_SWCE_MSG, lab, a * C + c, R)
            else:
                loss[a, c] = np.log(s) - (x[a, lab, c] - m)


@njit(nogil=True, cache=True, error_model="numpy")
def swce_soft(x, label, sm, loss):
    A, R, C = x.shape
    for a in range(A):
        for c in range(C):
            m, s = exp_shifted(x, sm, a, c)
            ls = np.log(s)
            acc = 0.0
            for r in range(R):
                sm[a, r, c] = sm[a, r, c] / s
                acc += label[a, r, c] * (x[a, r, c] - m - ls)
            loss[a, c] = -acc


@njit(nogil=True, cache=True, error_model="numpy")
def swce_hard_grad(label, sm, dloss, dx, ignore):
    A, R, C = sm.shape
    for a in range(A):
        for c in range(C):
            lab = label[a, c]
            d = dloss[a, c]
            if lab == ignore:
                d = 0.0
            for r in range(R):
                dx[a, r, c] = (sm[a, r, c] - (1.0 if r == lab else 0.0)) * d


@njit(nogil=True, cache=True, error_model="numpy")
def swce_soft_grad(label, sm, dloss, dx):
    # d/dx of -sum(label * log_softmax(x)) = softmax * sum(label) - label (exact even
    # when the labels do not sum to 1)
    A, R, C = sm.shape
    for a in range(A):
        for c in range(C):
            t = 0.0
            for r in range(R):
                t += label[a, r, c]
            d = dloss[a, c]
            for r in range(R):
                dx[a, r, c] = (sm[a, r, c] * t - label[a, r, c]) * d


@njit(nogil=True, cache=True, error_model="numpy")
def xent_hard(x, label, y, ignore):
    N, D = x.shape
    for i in range(N):
        lab = label[i]
        if lab == ignore:
            y[i] = 0.0
        elif lab < 0 or lab >= D:
            raise DataError(_XENT_MSG, lab, i, D)
        else:
            y[i] = -np.log(x[i, lab])


@njit(nogil=True, cache=True, error_model="numpy")
def xent_soft(x, label, y):
    N, D = x.shape
    for i in range(N):
        acc = 0.0
        for j in range(D):
            acc += label[i, j] * np.log(x[i, j])
        y[i] = -acc


@njit(nogil=True, cache=True, error_model="numpy")
def xent_hard_grad(x, label, dy, dx, ignore):
    N, D = x.shape
    for i in range(N):
        lab = label[i]
        for j in range(D):
            dx[i, j] = 0.0
        if lab != ignore and 0 <= lab < D:
            dx[i, lab] = -dy[i] / x[i, lab]


@njit(nogil=True, cache=True, error_model="numpy")
def xent_soft_grad(x, label, dy, dx):
    N, D = x.shape
    for i in range(N):
        for j in range(D):
            dx[i, j] = -dy[i] * label[i, j] / x[i, j]


# ---------------------------------------------------------------- GPU kernels
cuda = None   # numba.cuda, bound lazily by the kernel builder (gpu_util explains)


@gpu_util.lazy
def _gk():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def swce_hard_grad(label2, sm3, dloss2, dx3, ignore):
        A, R, C = sm3.shape
        for i in range(cuda.grid(1), A * R * C, cuda.gridsize(1)):
            a = i // (R * C)
            rc = i - a * R * C
            r = rc // C
            c = rc - r * C
            lab = label2[a, c]
            d = 0.0 if lab == ignore else float64(dloss2[a, c])
            dx3[a, r, c] = (sm3[a, r, c] - (1.0 if r == lab else 0.0)) * d

    @cuda.jit(cache=True)
    def xent_hard(x2, label, y, ignore, err):
        N, D = x2.shape
        for i in range(cuda.grid(1), N, cuda.gridsize(1)):
            lab = label[i]
            if lab == ignore:
                y[i] = 0.0
            elif lab < 0 or lab >= D:
                y[i] = 0.0
                if cuda.atomic.compare_and_swap(err, 0, gpu_errors.ERR_XENT) == 0:
                    err[1], err[2], err[3] = lab, i, D
            else:
                y[i] = -math.log(x2[i, lab])

    @cuda.jit(cache=True)
    def xent_hard_grad(x2, label, dy, dx2, ignore):
        N, D = x2.shape
        for e in range(cuda.grid(1), N * D, cuda.gridsize(1)):
            i = e // D
            j = e - i * D
            lab = label[i]
            if j == lab and lab != ignore:
                dx2[i, j] = -dy[i] / x2[i, lab]
            else:
                dx2[i, j] = 0.0

    @cuda.jit(cache=True)
    def xent_soft_grad(x2, label2, dy, dx2):
        N, D = x2.shape
        for e in range(cuda.grid(1), N * D, cuda.gridsize(1)):
            i = e // D
            j = e - i * D
            dx2[i, j] = -dy[i] * label2[i, j] / x2[i, j]

    return gpu_util.Kernels(swce_hard_grad=swce_hard_grad, xent_hard=xent_hard,
                        xent_hard_grad=xent_hard_grad, xent_soft_grad=xent_soft_grad)


# ---------------------------------------------------------------- label checks
def _check_labels(ctx, x_slot, axis, soft):
    """Validate Label against `x_slot` (class dim at `axis`); return the merged shape of
    the per-row outputs (x's shape with 1 at axis)."""
    x, lab = ctx.input(x_slot), ctx.input("Label")
    xs, ls = tuple(x.shape), tuple(lab.shape)
    xn, ln = ctx.name(x_slot), ctx.name("Label")
    if x.dtype.kind != "f":
        raise ctx.error(f"{x_slot} {xn} must be float32 or float64, got {x.dtype}")
    if soft:
        if lab.dtype != x.dtype:
            raise ctx.error(f"soft labels {ln} must have {x_slot}'s dtype {x.dtype}, got "
                            f"{lab.dtype}; cast them, or pass soft_label=False for class "
                            f"indices")
    elif lab.dtype.kind not in "iu":
        raise ctx.error(f"hard labels {ln} must be int64 or int32, got {lab.dtype}; pass "
                        f"soft_label=True for probability labels")
    want = "the same shape" if soft else f"the same shape except 1 at axis {axis}"
    if len(ls) != len(xs):
        raise ctx.error(f"Label {ln} of shape {ls} does not match {x_slot} {xn} of shape {xs}; "
                        f"expected {want}")
    out = []
    for d, (a, b) in enumerate(zip(xs, ls)):
        if d == axis and not soft:
            if b not in (1, -1):
                raise ctx.error(f"Label {ln} of shape {ls} must have size 1 at the class axis "
                                f"{axis} ({x_slot} {xn} is {xs})")
            out.append(1)
            continue
        if a != b and -1 not in (a, b):
            raise ctx.error(f"Label {ln} of shape {ls} does not match {x_slot} {xn} of shape "
                            f"{xs}; expected {want}")
        m = b if a == -1 else a
        out.append(1 if d == axis else m)
    return tuple(out)


def _class_axis(ctx_or_cop, shape):
    nd = len(shape)
    axis = ctx_or_cop.attrs.get("axis", -1)
    if nd == 0 or not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of range for logits of rank {nd}")
    return axis % nd


# ---------------------------------------------------------------- softmax_with_cross_entropy
def _swce_infer(ctx):
    x = ctx.input("Logits")
    try:
        axis = _class_axis(ctx, tuple(x.shape))
    except ValueError as e:
        raise ctx.error(f"{e} (Logits {ctx.name('Logits')} has shape {tuple(x.shape)})") \
            from None
    loss = _check_labels(ctx, "Logits", axis, ctx.attr("soft_label"))
    sm = loss[:axis] + (x.shape[axis],) + loss[axis + 1:]
    return {"Softmax": VarInfo(sm, x.dtype), "Loss": VarInfo(loss, x.dtype)}


def _swce_views(cop, shape_slot):
    shape = (cop.input(shape_slot) or cop.output(shape_slot)).shape
    axis = _class_axis(cop, shape)
    A, R, C = arc_view(shape, (axis,))
    return (A, R, C), cop.attrs["soft_label"], cop.attrs["ignore_index"]


# use_softmax=False (Paddle's): Logits already hold probabilities; Softmax is a copy and
# Loss = -log(Logits[Label]) (or -sum(Label * log(Logits))). Host numpy: a rare mode.
def _hard_index(lab, R, ignore):
    valid = lab != ignore
    bad = valid & ((lab < 0) | (lab >= R))
    if bad.any():
        row = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ValueError(f"softmax_with_cross_entropy: label {int(lab.reshape(-1)[row])} "
                         f"(row {row}) is outside [0, {R}) and is not ignore_index")
    return valid, np.where(valid, lab, 0)[:, None, :]


def probs_xent(x, lab, sm, loss, soft, ignore):
    sm[...] = x
    if soft:
        loss[...] = -(lab * np.log(x)).sum(axis=1)
        return
    valid, idx = _hard_index(lab, x.shape[1], ignore)
    loss[...] = np.where(valid, -np.log(np.take_along_axis(x, idx, 1)[:, 0, :]), 0.0)


def probs_xent_grad(lab, sm, d, dx, soft, ignore):
    if soft:
        dx[...] = -lab / sm * d[:, None, :]
        return
    valid, idx = _hard_index(lab, sm.shape[1], ignore)
    dx[...] = 0.0
    picked = np.take_along_axis(sm, idx, 1)[:, 0, :]
    np.put_along_axis(dx, idx, np.where(valid, -d / picked, 0.0)[:, None, :], 1)


def _swce_cpu(cop):
    arc, soft, ignore = _swce_views(cop, "Logits")
    row = (arc[0], arc[2])
    probs = not cop.attrs["use_softmax"]

    def bind(ins, outs):
        x, lab = ins["Logits"][0].reshape(arc), ins["Label"][0]
        sm, loss = outs["Softmax"][0].reshape(arc), outs["Loss"][0].reshape(row)
        if probs:
            return functools.partial(probs_xent, x, lab.reshape(arc if soft else row), sm, loss,
                                     soft, ignore)
        if soft:
            return functools.partial(swce_soft, x, lab.reshape(arc), sm, loss)
        return functools.partial(swce_hard, x, lab.reshape(row), sm, loss, ignore)
    return bind


def _no_gpu_probs(cop):
    if not cop.attrs["use_softmax"]:
        raise NotImplementedError(f"{cop.type}: use_softmax=False has no GPU kernel; run "
                                  f"the program on the CPU")


def _swce_gpu(cop):
    _no_gpu_probs(cop)
    arc, soft, ignore = _swce_views(cop, "Logits")
    row = (arc[0], arc[2])

    def bind(ins, outs):
        x, lab = ins["Logits"][0].reshape(arc), ins["Label"][0]
        sm, loss = outs["Softmax"][0].reshape(arc), outs["Loss"][0].reshape(row)
        k = gpu_util.common()
        if soft:
            return gpu_util.launch_rows(k.swce_soft_rows, row[0] * row[1], arc[1], x,
                                        lab.reshape(arc), sm, loss)
        return gpu_util.launch_rows(k.swce_hard_rows, row[0] * row[1], arc[1], x,
                                    lab.reshape(row), sm, loss, ignore, gpu_errors.error_record())
    return bind


def _swce_grad_rule(g):
    if g.dout("Loss") is not None:
        g.append("softmax_with_cross_entropy_grad",
                 {"Label": g.fwd("Label"), "Softmax": g.fwd("Softmax"),
                  "Loss@GRAD": g.dout("Loss")},
                 {"Logits@GRAD": g.dx("Logits")}, dict(g.attrs))
    if g.dout("Softmax") is not None and not g.attrs["use_softmax"]:    # Softmax = Logits
        g.append("assign", {"X": g.dout("Softmax")}, {"Out": g.dx("Logits")})
    elif g.dout("Softmax") is not None:     # Softmax used downstream too (return_softmax)
        g.append("softmax_grad", {"Out": g.fwd("Softmax"), "Out@GRAD": g.dout("Softmax")},
                 {"X@GRAD": g.dx("Logits")}, {"axis": int(g.attrs["axis"])})


def _swce_grad_infer(ctx):
    return {"Logits@GRAD": ctx.input("Softmax")}


def _swce_grad_cpu(cop):
    arc, soft, ignore = _swce_views(cop, "Softmax")
    row = (arc[0], arc[2])
    probs = not cop.attrs["use_softmax"]

    def bind(ins, outs):
        lab, sm = ins["Label"][0], ins["Softmax"][0].reshape(arc)
        d, dx = ins["Loss@GRAD"][0].reshape(row), outs["Logits@GRAD"][0].reshape(arc)
        if probs:
            return functools.partial(probs_xent_grad, lab.reshape(arc if soft else row), sm, d,
                                     dx, soft, ignore)
        if soft:
            return functools.partial(swce_soft_grad, lab.reshape(arc), sm, d, dx)
        return functools.partial(swce_hard_grad, lab.reshape(row), sm, d, dx, ignore)
    return bind


def _swce_grad_gpu(cop):
    _no_gpu_probs(cop)
    arc, soft, ignore = _swce_views(cop, "Softmax")
    row = (arc[0], arc[2])

    def bind(ins, outs):
        lab, sm = ins["Label"][0], ins["Softmax"][0].reshape(arc)
        d, dx = ins["Loss@GRAD"][0].reshape(row), outs["Logits@GRAD"][0].reshape(arc)
        if soft:
            return gpu_util.launch_rows(gpu_util.common().swce_soft_grad_rows, row[0] * row[1],
                                        arc[1], lab.reshape(arc), sm, d, dx)
        return gpu_util.launch_flat(_gk().swce_hard_grad, dx.size, lab.reshape(row), sm, d, dx,
                                    ignore)
    return bind


_SWCE_ATTRS = {"soft_label": False, "ignore_index": -100, "axis": -1, "use_softmax": True}
register_op(OpDef(
    "softmax_with_cross_entropy", (Slot("Logits"), Slot("Label", no_grad=True)),
    (Slot("Softmax"), Slot("Loss")), _swce_infer, _swce_cpu, gpu=_swce_gpu,
    attrs=dict(_SWCE_ATTRS),
    grad=_swce_grad_rule, traits=frozenset((MAY_FAIL,)),
    doc="Softmax = softmax(Logits, axis); Loss = -log_softmax(Logits)[Label] (hard labels, "
        "class axis kept with size 1; 0 where Label == ignore_index) or "
        "-sum(Label * log_softmax(Logits)) (soft labels). use_softmax=False: Logits are "
        "probabilities, Softmax = Logits, Loss = -log(Logits[Label]) (CPU only)"))
register_op(OpDef(
    "softmax_with_cross_entropy_grad", (Slot("Label"), Slot("Softmax"), Slot("Loss@GRAD")),
    (Slot("Logits@GRAD"),), _swce_grad_infer, _swce_grad_cpu, gpu=_swce_grad_gpu,
    attrs=dict(_SWCE_ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD (hard; 0 for ignored rows) or "
        "(Softmax * sum(Label) - Label) * Loss@GRAD (soft)"))


# ---------------------------------------------------------------- cross_entropy
def _xent_infer(ctx):
    x = ctx.input("X")
    if len(x.shape) == 0:
        raise ctx.error(f"X {ctx.name('X')} must have a class dim (rank >= 1), got shape ()")
    y = _check_labels(ctx, "X", len(x.shape) - 1, ctx.attr("soft_label"))
    return {"Y": VarInfo(y, x.dtype)}


def _xent_rows(cop):
    shape = cop.input("X").shape
    return numel(shape[:-1]), shape[-1]


def _xent_cpu(cop):
    N, D = _xent_rows(cop)
    soft, ignore = cop.attrs["soft_label"], cop.attrs["ignore_index"]

    def bind(ins, outs):
        x, lab, y = ins["X"][0].reshape(N, D), ins["Label"][0], outs["Y"][0].reshape(N)
        if soft:
            return functools.partial(xent_soft, x, lab.reshape(N, D), y)
        return functools.partial(xent_hard, x, lab.reshape(N), y, ignore)
    return bind


def _xent_gpu(cop):
    N, D = _xent_rows(cop)
    soft, ignore = cop.attrs["soft_label"], cop.attrs["ignore_index"]

    def bind(ins, outs):
        x, lab, y = ins["X"][0].reshape(N, D), ins["Label"][0], outs["Y"][0].reshape(N)
        if soft:
            return gpu_util.launch_rows(gpu_util.common().xent_soft_rows, N, D, x,
                                        lab.reshape(N, D), y)
        return gpu_util.launch_flat(_gk().xent_hard, N, x, lab.reshape(N), y, ignore,
                                    gpu_errors.error_record())
    return bind


def _xent_grad_rule(g):
    g.append("cross_entropy_grad",
             {"X": g.fwd("X"), "Label": g.fwd("Label"), "Y@GRAD": g.dout("Y")},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


def _xent_grad_factory(grad):
    """cross_entropy_grad's factory body: `grad(soft, n, x, label, dy, dx, *ignore)` -> the
    thunk, over X, dX as [N, D], Label as [N, D] (soft) or [N], dY as [N]."""
    def factory(cop):
        N, D = _xent_rows(cop)
        soft, ignore = cop.attrs["soft_label"], cop.attrs["ignore_index"]

        def bind(ins, outs):
            x, lab = ins["X"][0].reshape(N, D), ins["Label"][0]
            dy, dx = ins["Y@GRAD"][0].reshape(N), outs["X@GRAD"][0].reshape(N, D)
            if soft:
                return grad(True, N * D, x, lab.reshape(N, D), dy, dx)
            return grad(False, N * D, x, lab.reshape(N), dy, dx, ignore)
        return bind
    return factory


_xent_grad_cpu = _xent_grad_factory(lambda soft, n, *args: functools.partial(
    xent_soft_grad if soft else xent_hard_grad, *args))
_xent_grad_gpu = _xent_grad_factory(lambda soft, n, *args: gpu_util.launch_flat(
    _gk().xent_soft_grad if soft else _gk().xent_hard_grad, n, *args))


_XENT_ATTRS = {"soft_label": False, "ignore_index": -100}
register_op(OpDef(
    "cross_entropy", (Slot("X"), Slot("Label", no_grad=True)), (Slot("Y"),), _xent_infer,
    _xent_cpu, gpu=_xent_gpu, attrs=dict(_XENT_ATTRS), grad=_xent_grad_rule,
    traits=frozenset((MAY_FAIL,)),
    doc="Y = -log(X[Label]) (hard; 0 where Label == ignore_index) or -sum(Label * log(X)) "
        "(soft), over X's last (class) dim, which Y keeps with size 1"))
register_op(OpDef(
    "cross_entropy_grad", (Slot("X"), Slot("Label"), Slot("Y@GRAD")), (Slot("X@GRAD"),),
    lambda ctx: {"X@GRAD": ctx.input("X")}, _xent_grad_cpu, gpu=_xent_grad_gpu,
    attrs=dict(_XENT_ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="X@GRAD = -Y@GRAD / X[Label] at the label (hard) or -Y@GRAD * Label / X (soft)"))
