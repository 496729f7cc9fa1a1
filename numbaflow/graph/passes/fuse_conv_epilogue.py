"""The convolution's epilogue: what a network does to each conv2d output, done by the
conv's kernel as it writes that output (kernels/fused/conv_fused.py, op fused_conv2d).

fuse_conv_bias (training and inference programs):

    c = conv2d(x, w)                                   y = fused_conv2d(x, w, Bias=b,
    z = elementwise_add(c, b, axis=1)       ->                          activation)
    y = relu(z)                 (optional)

and the backward chain the gradient rules made of them (`relu_grad -> elementwise_add_grad
-> conv2d_grad`) -> one fused_conv2d_grad, which computes the bias gradient in the
conv's own pass over dOut: c and its gradient are never written, z (with the relu) and
its gradient neither.

fold_conv_batch_norm (inference programs only): `conv2d [-> + bias] -> batch_norm ->
[relu]` with a batch_norm that uses its running statistics (is_test, as
`clone(for_test=True)` makes it) -> one fused_conv2d with the batch_norm's Scale, Bias,
Mean and Variance as inputs: the kernel folds them per run (so newly loaded parameters
are used), nothing is folded at compile time.

A candidate is refused, with the reason, when an intermediate (or its gradient) is
fetched, persistable or read by any op outside the chain; when the bias is not one value
per output channel added on axis 1; when the backward chain is not the one the gradient
rules make; or when the cost rule says the fusion does not pay.

Both passes are a match + replacement (rewrite.py): CompiledProgram's pipeline applies
them to a program, and, on by default, the executor to the op list of a plain
`Executor.run(program)`.
"""
from ...kernels.nn.batch_norm import bn_uses_global_stats
from ...kernels.registry import get_op_def
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite, first_output, grad_reader, sole_reader

BN_SLOTS = {"BNScale": "Scale", "BNBias": "Bias", "BNMean": "Mean", "BNVariance": "Variance"}


def _forward(block, cv, fold_bn):
    """The forward chain after conv2d `cv`: (add, bn, relu, output, intermediates)."""
    c = cv.outputs["Output"][0]
    m = cv.inputs["Filter"][0].shape[0]
    add = bn = relu = None
    last, mids = c, []
    p = sole_reader(block, c, ("elementwise_add",))
    if p is not None and p.inputs["X"][0] is c:
        b = p.inputs["Y"][0]
        if tuple(b.shape) != (m,) or b.dtype != c.dtype or p.attrs.get("axis", -1) != 1:
            raise Refused(f"{c.name} + {b.name}: not one bias value per output channel "
                           f"(shape {tuple(b.shape)}, axis {p.attrs.get('axis', -1)})")
        add, last = p, p.outputs["Out"][0]
        mids.append(c)
    p = sole_reader(block, last, ("batch_norm",)) if fold_bn else None
    if p is not None:
        if not bn_uses_global_stats(p.attrs) or p.attrs["data_layout"] != "NCHW":
            raise Refused(f"batch_norm of {last.name} computes batch statistics (not is_test) "
                           f"or is not NCHW")
        for slot, into in (("MeanOut", "Mean"), ("VarianceOut", "Variance")):
            if first_output(p, slot) is not None and first_output(p, slot) is not p.inputs[into][0]:
                raise Refused(f"batch_norm's {slot} is not its {into}")
        bn, mids = p, mids + [last] + [v for s in ("SavedMean", "SavedVariance")
                                       if (v := first_output(p, s)) is not None]
        last = p.outputs["Y"][0]
    if add is None and bn is None:
        return None             # nothing to fold
    p = sole_reader(block, last, ("relu",))
    if p is not None:
        relu, mids = p, mids + [last]
        last = p.outputs["Out"][0]
    return add, bn, relu, last, mids


def _backward(block, cv, add, relu, y):
    """The gradient chain (relu_grad, add_grad, conv_grad, dOut, intermediates) of a
    conv + bias [+ relu]; all None when the program has no backward for it."""
    c = cv.outputs["Output"][0]
    rg = grad_reader(block, y, "relu_grad", "Out") if relu is not None else None
    ag = grad_reader(block, c, "elementwise_add_grad", "X")
    if rg is None and ag is None:
        return None, None, None, None, []
    mids, d = [], None
    if relu is not None:
        if rg is None or ag is None:
            raise Refused("relu_grad and elementwise_add_grad are not both there")
        d, dz = rg.inputs["Out@GRAD"][0], rg.outputs["X@GRAD"][0]
        if ag.inputs["Out@GRAD"][0] is not dz:
            raise Refused(f"the add's gradient does not read relu_grad's {dz.name}")
        mids.append(dz)
    else:
        d = ag.inputs["Out@GRAD"][0]
    if ag.inputs["Y"][0] is not add.inputs["Y"][0]:
        raise Refused(f"{ag.type} does not belong to the bias add")
    dc = first_output(ag, "X@GRAD")
    cg = None
    if dc is not None:
        cg = grad_reader(block, dc, "conv2d_grad", "Output@GRAD")
        same = cg is not None and cg.attrs == cv.attrs and all(
            cg.inputs[s][0] is cv.inputs[s][0] for s in ("Input", "Filter"))
        if not same:
            raise Refused(f"{dc.name} is not read by the conv's conv2d_grad")
        mids.append(dc)
    return rg, ag, cg, d, mids


def _match_one(block, cv, protected, fold_bn):
    found = _forward(block, cv, fold_bn)
    if found is None:
        return None
    add, bn, relu, y, mids = found
    fwd = [o for o in (cv, add, bn, relu) if o is not None]
    rg = ag = cg = d = None
    if bn is None:
        rg, ag, cg, d, gmids = _backward(block, cv, add, relu, y)
        mids += gmids
    elif any(op.type.endswith("_grad") for v in mids + [y] for op in block.consumers(v)):
        raise Refused("the chain has gradient ops (a program that trains)")
    if fold_bn and bn is None:
        return None             # fuse_conv_bias's candidate
    bwd = [o for o in (rg, ag, cg) if o is not None]
    for v in mids:
        readers = [op for op in block.consumers(v) if not any(op is o for o in fwd + bwd)]
        if v.name in protected or v.persistable or readers:
            raise Refused(f"{v.name} is fetched, persistable or read by another op "
                           f"({[o.type for o in readers]})")
    names = get_op_def("fused_conv2d").attrs
    attrs = {k: v for k, v in cv.attrs.items() if k in names}
    attrs["activation"] = "relu" if relu is not None else ""
    ins = {"Input": cv.inputs["Input"], "Filter": cv.inputs["Filter"]}
    if add is not None:
        ins["Bias"] = add.inputs["Y"]
    if bn is not None:
        ins.update({s: bn.inputs[b] for s, b in BN_SLOTS.items()})
        attrs["epsilon"] = float(bn.attrs["epsilon"])
    new = [block.make_op("fused_conv2d", ins, {"Output": [y]}, attrs)]
    new[0].role = cv.role
    at = [cv]
    if bwd:
        gins = {"Input": cv.inputs["Input"], "Filter": cv.inputs["Filter"],
                "Output@GRAD": [d]}
        if relu is not None:
            gins["Output"] = [y]
        gouts = {"Bias@GRAD": ag.outputs.get("Y@GRAD") or []}
        if cg is not None:
            gouts.update({s: cg.outputs.get(s) or [] for s in ("Input@GRAD", "Filter@GRAD")})
        gop = block.make_op("fused_conv2d_grad", gins,
                            {k: v for k, v in gouts.items() if v}, attrs)
        gop.role = bwd[0].role
        new.append(gop)
        at.append(bwd[0])       # its inputs exist there, its outputs are read later
    return Replacement(fwd + bwd, new, at)


class _ConvEpilogue(Rewrite):
    anchors = ("conv2d",)
    fold_bn = False

    def match(self, block, op):
        return _match_one(block, op, self.protected, self.fold_bn)


@register_pass
class FuseConvBias(_ConvEpilogue):
    """`relu(conv2d(x, w) + b)` (relu optional) and its gradient chain -> fused_conv2d."""
    name = "fuse_conv_bias"


@register_pass
class FoldConvBatchNorm(_ConvEpilogue):
    """`relu(batch_norm(conv2d(x, w) + b))` with an is_test batch_norm (bias and relu
    optional) -> fused_conv2d with the batch_norm's variables (inference programs)."""
    name = "fold_conv_batch_norm"
    fold_bn = True
