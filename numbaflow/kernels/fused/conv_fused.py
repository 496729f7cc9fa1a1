"""fused_conv2d: a conv2d with its epilogue, made by the conv-epilogue passes
(graph/passes/fuse_conv_epilogue.py) from the ops a network writes after a convolution:

    Output = act(conv2d(Input, Filter) + Bias)                        (Bias [M], optional)
    Output = act(batch_norm(conv2d(Input, Filter) + Bias))            (is_test batch_norm)

act is "" or "relu". The kernels are conv2d's (conv.py, conv_gpu.py): each (sample,
group) block of Output gets `o * mul + add` per channel (and the relu) right after its
GEMM wrote it (conv_epilogue.py). A folded batch_norm (the BN* inputs: its Scale, Bias,
Mean and Variance) is computed per run from those variables, so a program whose parameters
are reloaded stays right: mul = BNScale / sqrt(BNVariance + epsilon), add = (Bias - BNMean)
* mul + BNBias; its cost is one pass over M channels.

fused_conv2d_grad (no batch_norm: a folded one is inference-only) computes dInput,
dFilter and Bias@GRAD in one pass over dOut, which it first masks by Output > 0 (relu):
the bias gradient (the sum of dOut over N, OH, OW) is taken while each block of dOut is
read for the GEMMs.
"""
import functools

import numpy as np

from ..nn import conv_gpu
from ..gpu import gpu_util
from ..nn.conv import backward_thunk, forward_thunk, gpu_backward, gpu_forward, grad_out
from .conv_epilogue import fold_bn
from ..registry import NO_GRAD, FUSED, OpDef, Slot, VarInfo, get_op_def, register_op, sequence

CONV, CONV_GRAD = get_op_def("conv2d"), get_op_def("conv2d_grad")    # shapes, slots, attrs

ACTIVATIONS = ("", "relu")
BN = ("BNScale", "BNBias", "BNMean", "BNVariance")


def activation_of(attrs, op):
    act = attrs["activation"]
    if act not in ACTIVATIONS:
        raise ValueError(f"{op}: activation {act!r} is not supported; expected one of "
                         f"{ACTIVATIONS}")
    return act == "relu"


def check_channels(ctx, slots, m, dtype):
    for slot in slots:
        v = ctx.input(slot)
        if v is None:
            continue
        if len(v.shape) != 1 or (m != -1 and v.shape[0] not in (m, -1)):
            raise ctx.error(f"{slot} {ctx.name(slot)} has shape {tuple(v.shape)}; expected "
                            f"[{m}], one value per output channel")
        if v.dtype != dtype:
            raise ctx.error(f"{slot} {ctx.name(slot)} is {v.dtype}; expected {dtype}, the "
                            f"dtype of Input")


def _infer(ctx):
    out = CONV.infer(ctx)
    activation_of(ctx.attrs, ctx.op_type)
    given = [s for s in BN if ctx.input(s) is not None]
    if given and len(given) != len(BN):
        raise ctx.error(f"a folded batch_norm needs all of {BN}; got only {given}")
    check_channels(ctx, ("Bias",) + BN, ctx.input("Filter").shape[0], ctx.input("Input").dtype)
    return out


def _grad_infer(ctx):
    outs = CONV_GRAD.infer(ctx)
    w = ctx.input("Filter")
    outs["Bias@GRAD"] = VarInfo((w.shape[0],), w.dtype)
    return outs


def _grad_rule(g):
    if g.fwd("BNScale") is not None:
        raise ValueError(f"fused_conv2d with a folded batch_norm ({g.fwd('BNScale').name}) has "
                         f"no gradient: the fold is made for inference programs only; build "
                         f"the backward from the unfused program")
    act = g.attrs["activation"] != ""
    ins = {"Input": g.fwd("Input"), "Filter": g.fwd("Filter"), "Output@GRAD": g.dout("Output")}
    if act:
        ins["Output"] = g.fwd("Output")
    g.append("fused_conv2d_grad", ins,
             {"Input@GRAD": g.dx("Input"), "Filter@GRAD": g.dx("Filter"),
              "Bias@GRAD": g.dx("Bias")}, dict(g.attrs))


def bn_arrays(ins):
    return [ins[s][0] for s in BN] if ins.get("BNScale") else None


def _cpu(cop):
    act, eps = activation_of(cop.attrs, cop.type), float(cop.attrs["epsilon"])

    def bind(ins, outs):
        x, w, out = ins["Input"][0], ins["Filter"][0], outs["Output"][0]
        bias = ins["Bias"][0] if ins.get("Bias") else None
        bn = bn_arrays(ins)
        if bn is None:
            return forward_thunk(cop, x, w, out, None, bias, act)
        mul, add = np.empty(w.shape[0], x.dtype), np.empty(w.shape[0], x.dtype)
        fold = functools.partial(fold_bn, *bn, bias if bias is not None else mul,
                                 bias is not None, eps, mul, add)
        return sequence([fold, forward_thunk(cop, x, w, out, mul, add, act)])
    return bind


def _grad_cpu(cop):
    act = activation_of(cop.attrs, cop.type)

    def bind(ins, outs):
        return backward_thunk(cop, ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0],
                              grad_out(outs, "Input@GRAD"), grad_out(outs, "Filter@GRAD"),
                              ins["Output"][0] if act else None, grad_out(outs, "Bias@GRAD"),
                              act)
    return bind


def _gpu(cop):
    act, eps = activation_of(cop.attrs, cop.type), float(cop.attrs["epsilon"])

    def epilogue(ins, conv):
        bias = ins["Bias"][0] if ins.get("Bias") else None
        bn = bn_arrays(ins)
        if bn is None:
            unused = gpu_util.flat(ins["Filter"][0])
            return [conv(unused, bias if bias is not None else unused, int(bias is not None),
                         act)]
        from numba import cuda
        m = bn[0].shape[0]
        mul, add = cuda.device_array(m, bn[0].dtype), cuda.device_array(m, bn[0].dtype)
        fold = conv_gpu.launch(conv_gpu.kernels().bn_fold, m, *bn,
                               bias if bias is not None else mul, bias is not None, eps, mul, add)
        return [fold, conv(mul, add, 2, act)]
    return gpu_forward(cop, epilogue)


def _grad_gpu(cop):
    return gpu_backward(cop, "Output", activation_of(cop.attrs, cop.type))


FUSED_ATTRS = dict(CONV.attrs, activation="", epsilon=1e-5)
register_op(OpDef(
    "fused_conv2d", CONV.inputs + (Slot("Bias", optional=True),)
    + tuple(Slot(s, optional=True, no_grad=True) for s in BN),
    (Slot("Output"),), _infer, _cpu, gpu=_gpu, attrs=FUSED_ATTRS, grad=_grad_rule,
    traits=frozenset({FUSED}),
    doc="act(conv2d(Input, Filter) + Bias), or with an is_test batch_norm folded in "
        "(BN* inputs); made by the fuse_conv_bias / fold_conv_batch_norm passes"))
register_op(OpDef(
    "fused_conv2d_grad", CONV.inputs + (Slot("Output", optional=True), Slot("Output@GRAD")),
    CONV_GRAD.outputs + (Slot("Bias@GRAD", optional=True),), _grad_infer, _grad_cpu, gpu=_grad_gpu,
    attrs=FUSED_ATTRS, traits=frozenset({NO_GRAD, FUSED})))
