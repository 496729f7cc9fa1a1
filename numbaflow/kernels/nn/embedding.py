"""lookup_table_v2 (the embedding lookup) and its gradient (Paddle's ops).

lookup_table_v2 follows Paddle's LookupTableV2 CPU kernels: rows whose id equals
`padding_idx` (-1 = none) are zero and get no gradient; any other id outside
[0, vocab) raises ValueError (MAY_FAIL); the dense W@GRAD accumulates repeated ids.

The CUDA kernels are in nn_gpu.py; out-of-range ids go into the device's error record there.
"""
import functools

from numba import njit

from . import nn_gpu
from ..gpu.gpu_errors import ERR_LOOKUP, ERR_LOOKUP_GRAD, ERROR_MESSAGES, DataError
from ..registry import MAY_FAIL, NO_GRAD, OpDef, Slot, VarInfo, register_op

_LOOKUP_MSG = ERROR_MESSAGES[ERR_LOOKUP][1]      # an id out of range (DataError formats it)
_LOOKUP_GRAD_MSG = ERROR_MESSAGES[ERR_LOOKUP_GRAD][1]


@njit(nogil=True, cache=True, error_model="numpy")
def lookup_fwd(w, ids, out, padding_idx):
    V, D = w.shape
    for i in range(ids.size):
        k = ids[i]
        if k == padding_idx and padding_idx != -1:   # -1: no padding row
            for j in range(D):
                out[i, j] = 0.0
        elif k < 0 or k >= V:
            raise DataError(_LOOKUP_MSG, k, i, V)
        else:
            for j in range(D):
                out[i, j] = w[k, j]


@njit(nogil=True, cache=True, error_model="numpy")
def lookup_bwd(ids, dout, dw, padding_idx):
    V, D = dw.shape
    for r in range(V):
        for j in range(D):
            dw[r, j] = 0.0
    for i in range(ids.size):
        k = ids[i]
        if k == padding_idx and padding_idx != -1:   # -1: no padding row
            continue
        if k < 0 or k >= V:
            raise DataError(_LOOKUP_GRAD_MSG, k, i, V)
        for j in range(D):
            dw[k, j] += dout[i, j]


def _lookup_infer(ctx):
    w, ids = ctx.input("W"), ctx.input("Ids")
    wn, idn = ctx.name("W"), ctx.name("Ids")
    if len(w.shape) != 2:
        raise ctx.error(f"W {wn} must be 2-D (vocab, dim), got shape {tuple(w.shape)}")
    if w.dtype.kind != "f":
        raise ctx.error(f"W {wn} must be float32 or float64, got {w.dtype}")
    if ids.dtype.kind not in "iu":
        raise ctx.error(f"Ids {idn} must be int64 (or int32), got {ids.dtype}; cast them "
                        f"with paddle.cast(ids, 'int64')")
    pad = int(ctx.attr("padding_idx"))
    if pad != -1 and w.shape[0] != -1 and not 0 <= pad < w.shape[0]:
        raise ctx.error(f"padding_idx {pad} is outside [0, {w.shape[0]}) (W {wn} has "
                        f"{w.shape[0]} rows); -1 means no padding")
    return {"Out": VarInfo(tuple(ids.shape) + (w.shape[1],), w.dtype)}


def _lookup_cpu(cop):
    pad = int(cop.attrs["padding_idx"])

    def bind(ins, outs):
        w, ids = ins["W"][0], ins["Ids"][0]
        return functools.partial(lookup_fwd, w, ids.reshape(-1),
                                 outs["Out"][0].reshape(ids.size, w.shape[1]), pad)
    return bind


def _lookup_grad_rule(g):
    g.append("lookup_table_v2_grad",
             {"W": g.fwd("W"), "Ids": g.fwd("Ids"), "Out@GRAD": g.dout("Out")},
             {"W@GRAD": g.dx("W")}, dict(g.attrs))


def _lookup_grad_cpu(cop):
    pad = int(cop.attrs["padding_idx"])

    def bind(ins, outs):
        ids, dw = ins["Ids"][0], outs["W@GRAD"][0]
        return functools.partial(lookup_bwd, ids.reshape(-1),
                                 ins["Out@GRAD"][0].reshape(ids.size, dw.shape[1]), dw, pad)
    return bind


LOOKUP_ATTRS = {"padding_idx": -1, "is_sparse": False}
register_op(OpDef(
    "lookup_table_v2", (Slot("W"), Slot("Ids", no_grad=True)), (Slot("Out"),), _lookup_infer,
    _lookup_cpu, gpu=lambda cop: nn_gpu.lookup_forward(int(cop.attrs["padding_idx"])),
    attrs=dict(LOOKUP_ATTRS), grad=_lookup_grad_rule,
    traits=frozenset((MAY_FAIL,)),
    doc="Out[..., :] = W[Ids[...], :]; zero rows where Ids == padding_idx; ids outside "
        "[0, vocab) raise ValueError"))
register_op(OpDef(
    "lookup_table_v2_grad", (Slot("W"), Slot("Ids"), Slot("Out@GRAD")), (Slot("W@GRAD"),),
    lambda ctx: {"W@GRAD": ctx.input("W")}, _lookup_grad_cpu,
    gpu=lambda cop: nn_gpu.lookup_backward(int(cop.attrs["padding_idx"])),
    attrs=dict(LOOKUP_ATTRS),
    traits=frozenset((NO_GRAD, MAY_FAIL)),
    doc="W@GRAD (dense) = sum of Out@GRAD rows per id, none for padding_idx"))
