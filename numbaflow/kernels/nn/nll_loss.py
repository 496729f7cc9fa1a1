"""`nll_loss` (Paddle's op behind F.nll_loss / nn.NLLLoss) and its gradient.

X is (N, C) or (N, C, H, W) log-probabilities, Label (N,) or (N, H, W) int64 classes,
Weight an optional (C,). Each position p with class c = Label[p] != ignore_index loses
-Weight[c] * X[n, c, p] (Weight 1 when absent) and adds Weight[c] to Total_weight.
reduction 'none': Out has Label's shape (0 at ignored positions); 'sum': Out is the 0-D
sum; 'mean': the sum / Total_weight (Paddle's weighted mean). The gradient is
-Weight[c] * Out@GRAD (/ Total_weight for 'mean') at the label, 0 elsewhere.

A label outside [0, C) that is not ignore_index raises ValueError on the CPU; on a GPU
it counts 0 and goes into the device's error record, raised as the same message after the
run (gpu_errors). The GPU forward is one thread walking the positions in the CPU's order
(a loss reads N * H * W values once; its sum then equals the CPU's); the gradient is a
thread per X element.
"""
import functools

import numpy as np
from numba import njit

from ..gpu import gpu_errors, gpu_util
from ..gpu.gpu_errors import ERR_NLL, ERROR_MESSAGES, DataError
from ..registry import MAY_FAIL, NO_GRAD, OpDef, Slot, VarInfo, register_op

cuda = None   # numba.cuda, bound by `kernels()` on first use
_MODES = {"none": 0, "sum": 1, "mean": 2}
_MSG = ERROR_MESSAGES[ERR_NLL][1]


@njit(nogil=True, cache=True, error_model="numpy")
def nll_fwd(x, lab, w, out, tw, ignore, mode):
    N, C, S = x.shape
    acc, total = 0.0, 0.0
    for n in range(N):
        for s in range(S):
            c = lab[n, s]
            v = 0.0
            if c != ignore:
                if c < 0 or c >= C:
                    raise DataError(_MSG, c, n * S + s, C)
                v = -x[n, c, s] * w[c]
                total += w[c]
            if mode == 0:
                out[n * S + s] = v
            acc += v
    tw[0] = total
    if mode != 0:
        out[0] = acc / total if mode == 2 else acc


def grad_at(lab, w, tw, dout, ignore, mode, n, c, s, S):
    """X@GRAD[n, c, s] (plain Python: compiled for the CPU and as a CUDA device function)."""
    if lab[n, s] != c or c == ignore:
        return 0.0
    d = -w[c] * (dout[n * S + s] if mode == 0 else dout[0])
    return d / tw[0] if mode == 2 else d


_grad_at = njit(nogil=True, cache=True, error_model="numpy")(grad_at)


@njit(nogil=True, cache=True, error_model="numpy")
def nll_bwd(lab, w, tw, dout, dx, ignore, mode):
    N, C, S = dx.shape
    for n in range(N):
        for c in range(C):
            for s in range(S):
                dx[n, c, s] = _grad_at(lab, w, tw, dout, ignore, mode, n, c, s, S)


@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def fwd(x, lab, w, out, tw, ignore, mode, err):
        N, C, S = x.shape
        if cuda.grid(1) != 0:
            return
        acc, total = 0.0, 0.0
        for i in range(N * S):                 # position i = n * S + s, as the CPU's order
            n, s = i // S, i % S
            c = lab[n, s]
            ok = c != ignore and 0 <= c < C
            if c != ignore and not ok and \
                    cuda.atomic.compare_and_swap(err, 0, gpu_errors.ERR_NLL) == 0:
                err[1], err[2], err[3] = c, i, C
            v = -x[n, c, s] * w[c] if ok else 0.0
            total += w[c] if ok else 0.0
            if mode == 0:
                out[i] = v
            acc += v
        tw[0] = total
        if mode != 0:
            out[0] = acc / total if mode == 2 else acc

    at = cuda.jit(device=True)(grad_at)

    @cuda.jit(cache=True)
    def bwd(lab, w, tw, dout, dx, ignore, mode):
        N, C, S = dx.shape
        for i in range(cuda.grid(1), N * C * S, cuda.gridsize(1)):
            n, c, s = i // (C * S), (i // S) % C, i % S
            dx[n, c, s] = at(lab, w, tw, dout, ignore, mode, n, c, s, S)

    return gpu_util.Kernels(fwd=fwd, bwd=bwd)


def _views(cop, ins, x_arr):
    """X as (N, C, S), Label as (N, S), Weight (ones when absent), the mode number."""
    shape = cop.input("X").shape
    n, c = shape[0], shape[1]
    w = ins["Weight"][0] if ins.get("Weight") else np.ones(c, x_arr.dtype)
    return (x_arr.reshape(n, c, -1), ins["Label"][0].reshape(n, -1), w,
            _MODES[cop.attrs["reduction"]])


def _weights_on_device(w):
    return w if hasattr(w, "copy_to_host") else gpu_util.to_device(w)


def _cpu(cop):
    def bind(ins, outs):
        x, lab, w, mode = _views(cop, ins, ins["X"][0])
        return functools.partial(nll_fwd, x, lab, w, outs["Out"][0].reshape(-1),
                                 outs["Total_weight"][0].reshape(1), cop.attrs["ignore_index"],
                                 mode)
    return bind


def _gpu(cop):
    def bind(ins, outs):
        x, lab, w, mode = _views(cop, ins, ins["X"][0])
        return gpu_util.launch_flat(kernels().fwd, 1, x, lab, _weights_on_device(w),
                                    gpu_util.flat(outs["Out"][0]),
                                    gpu_util.flat(outs["Total_weight"][0]),
                                    cop.attrs["ignore_index"], mode, gpu_errors.error_record())
    return bind


def _grad_args(cop, ins, outs):
    x, lab, w, mode = _views(cop, ins, outs["X@GRAD"][0])
    return lab, w, ins["Total_weight"][0].reshape(1), ins["Out@GRAD"][0].reshape(-1), x, \
        cop.attrs["ignore_index"], mode


def _grad_cpu(cop):
    return lambda ins, outs: functools.partial(nll_bwd, *_grad_args(cop, ins, outs))


def _grad_gpu(cop):
    def bind(ins, outs):
        lab, w, tw, d, dx, ignore, mode = _grad_args(cop, ins, outs)
        return gpu_util.launch_flat(kernels().bwd, dx.size, lab, _weights_on_device(w), tw,
                                    d, dx, ignore, mode)
    return bind


def _infer(ctx):
    x, lab = ctx.input("X"), ctx.input("Label")
    if len(x.shape) not in (2, 4) or tuple(lab.shape) != (x.shape[0],) + tuple(x.shape[2:]) \
            and -1 not in lab.shape + x.shape:
        raise ctx.error(f"X must be (N, C) or (N, C, H, W) and Label (N,) or (N, H, W), got "
                        f"{tuple(x.shape)} and {tuple(lab.shape)}")
    if ctx.attr("reduction") not in _MODES:
        raise ctx.error(f"reduction must be one of {list(_MODES)}, got "
                        f"{ctx.attr('reduction')!r}")
    out = tuple(lab.shape) if ctx.attr("reduction") == "none" else ()
    return {"Out": VarInfo(out, x.dtype), "Total_weight": VarInfo((), x.dtype)}


def _grad_rule(g):
    w = g.fwd("Weight")
    g.append("nll_loss_grad", {"X": g.fwd("X"), "Label": g.fwd("Label"),
                               "Total_weight": g.fwd("Total_weight"),
                               "Out@GRAD": g.dout("Out"), **({"Weight": w} if w else {})},
             {"X@GRAD": g.dx("X")}, dict(g.attrs))


ATTRS = {"ignore_index": -100, "reduction": "mean"}
register_op(OpDef(
    "nll_loss", (Slot("X"), Slot("Label", no_grad=True),
                 Slot("Weight", optional=True, no_grad=True)),
    (Slot("Out"), Slot("Total_weight")), _infer, _cpu, gpu=_gpu, attrs=ATTRS, grad=_grad_rule,
    traits=frozenset((MAY_FAIL,)),
    doc="-Weight[c] * X[n, c, ...] at c = Label[n, ...], reduced ('none', 'sum', weighted "
        "'mean'); Total_weight = the sum of the picked weights"))
register_op(OpDef(
    "nll_loss_grad", (Slot("X"), Slot("Label"), Slot("Weight", optional=True),
                      Slot("Total_weight"), Slot("Out@GRAD")), (Slot("X@GRAD"),),
    lambda ctx: {"X@GRAD": ctx.input("X")}, _grad_cpu, gpu=_grad_gpu, attrs=dict(ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="X@GRAD = -Weight[c] * Out@GRAD (/ Total_weight for 'mean') at the label, else 0"))
