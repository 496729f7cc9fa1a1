"""fuse_gemm_epilogue: an fc layer's product, bias and activation as one op
(kernels/fused/gemm_epilogue.py; Paddle's pass and BuildStrategy flag of that name).

    c = mul(x, w) | matmul_v2(x, w)                      y = fused_gemm_epilogue(x, w, b,
    z = elementwise_add(c, b)                  ->                 activation)
    y = gelu(z) | relu(z)            (optional)                 (ReserveSpace: z, gelu only)

and the backward chain the gradient rules made of them (`<act>_grad -> elementwise_add_grad
-> mul_grad | matmul_v2_grad`) -> one fused_gemm_epilogue_grad, which applies the
activation's gradient and sums the bias gradient in one pass over dOut before its two
GEMMs: c and its gradient are never written; z (relu) or the activation's gradient gets
dOut's buffer.

A candidate is refused, with the reason, when the product is not a plain 2-D weight
(mul with y_num_col_dims 1; matmul_v2 with trans_x or a batched Y); when the add is not
one bias value per output column on the last axis; when an intermediate (or its
gradient) is fetched, persistable or read outside the chain; or when the backward chain
is not the one the gradient rules make.
"""
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite, first_output, grad_reader, sole_reader

ACTS = ("gelu", "relu")
GRADS = {"mul": "mul_grad", "matmul_v2": "matmul_v2_grad"}


def _product(op):
    """(x_num_col_dims, trans_y) of the product `op` as fused_gemm_epilogue takes it."""
    x, w = op.inputs["X"][0], op.inputs["Y"][0]
    if len(w.shape) != 2:
        raise Refused(f"the weight {w.name} is not 2-D (shape {tuple(w.shape)})")
    if op.type == "mul":
        if op.attrs["y_num_col_dims"] != 1:
            raise Refused(f"mul with y_num_col_dims={op.attrs['y_num_col_dims']}")
        return op.attrs["x_num_col_dims"], False
    if op.attrs.get("trans_x") or len(x.shape) < 2:
        raise Refused(f"matmul_v2 with trans_x or a 1-D X {x.name}")
    return len(x.shape) - 1, bool(op.attrs.get("trans_y"))


def _forward(block, mm):
    """(add, act, y, mids) after product `mm`, or None when no bias add follows."""
    c = mm.outputs["Out"][0]
    add = sole_reader(block, c, ("elementwise_add",))
    if add is None or add.inputs["X"][0] is not c:
        return None
    b = add.inputs["Y"][0]
    n = c.shape[-1]
    if tuple(b.shape) != (n,) or add.attrs.get("axis", -1) not in (-1, len(c.shape) - 1):
        raise Refused(f"{c.name} + {b.name}: not one bias value per output column on the "
                      f"last axis (shape {tuple(b.shape)}, axis {add.attrs.get('axis', -1)})")
    if c.dtype not in ("float32", "float64") or b.dtype != c.dtype:
        raise Refused(f"dtypes {c.dtype} / {b.dtype}: not one float32 / float64")
    z = add.outputs["Out"][0]
    act = sole_reader(block, z, ACTS)
    if act is None:
        return add, None, z, [c]
    return add, act, act.outputs["Out"][0], [c] + ([z] if act.type == "relu" else [])


def _backward(block, mm, add, act, y):
    """(grad ops, dOut, DPreAct var or None, outputs, mids); ([], ...) without a backward."""
    c, z = mm.outputs["Out"][0], add.outputs["Out"][0]
    ag = grad_reader(block, z, "gelu_grad", "X") if act is not None and act.type == "gelu" \
        else grad_reader(block, y, "relu_grad", "Out") if act is not None else None
    bg = grad_reader(block, c, "elementwise_add_grad", "X")
    if ag is None and bg is None:
        return [], None, None, {}, []
    if (act is not None and ag is None) or bg is None:
        raise Refused("the activation's and the add's gradient ops are not both there")
    d = (ag or bg).inputs["Out@GRAD"][0]
    dz = first_output(ag, "X@GRAD") if ag is not None else None
    mids = []
    if ag is not None:
        if dz is None or bg.inputs["Out@GRAD"][0] is not dz:
            raise Refused("the add's gradient does not read the activation's gradient")
    if bg.inputs["Y"][0] is not add.inputs["Y"][0]:
        raise Refused(f"{bg.type} does not belong to the bias add")
    dc = first_output(bg, "X@GRAD")
    if dc is None:
        raise Refused(f"the gradient of {c.name} is not computed")
    mg = grad_reader(block, dc, GRADS[mm.type], "Out@GRAD")
    if mg is None or mg.attrs != mm.attrs or any(
            mg.inputs[s][0] is not mm.inputs[s][0] for s in ("X", "Y")):
        raise Refused(f"{dc.name} is not read by the product's {GRADS[mm.type]}")
    mids.append(dc)
    outs = {"X@GRAD": mg.outputs.get("X@GRAD") or [], "Y@GRAD": mg.outputs.get("Y@GRAD") or [],
            "Bias@GRAD": bg.outputs.get("Y@GRAD") or []}
    return [o for o in (ag, bg, mg) if o is not None], d, dz, outs, mids


@register_pass
class FuseGemmEpilogue(Rewrite):
    """`act(mul(x, w) + b)` (act: gelu, relu or none) and its gradient chain ->
    fused_gemm_epilogue and fused_gemm_epilogue_grad."""
    name = "fuse_gemm_epilogue"
    anchors = tuple(GRADS)

    def match(self, block, mm):
        found = _forward(block, mm)
        if found is None:
            return None
        xn, trans_y = _product(mm)
        add, act, y, mids = found
        if act is None:     # the bias alone: measured no gain (docs/architecture.md)
            return None
        approximate = act is not None and bool(act.attrs.get("approximate", False))
        bwd, d, dz, gouts, gmids = _backward(block, mm, add, act, y)
        fwd = [o for o in (mm, add, act) if o is not None]
        checked = mids + gmids + ([dz] if dz is not None else [])
        for v in checked:
            readers = [op for op in block.consumers(v) if not any(op is o for o in fwd + bwd)]
            if v.name in self.protected or v.persistable or readers:
                raise Refused(f"{v.name} is fetched, persistable or read by another op "
                              f"({[o.type for o in readers]})")
        kind = act.type if act is not None else "none"
        attrs = {"x_num_col_dims": xn, "trans_y": trans_y, "activation": kind,
                 "approximate": approximate}
        z = add.outputs["Out"][0]
        outs = {"Out": [y]}
        if kind == "gelu":
            outs["ReserveSpace"] = [z]
        ins = {"X": mm.inputs["X"], "Y": mm.inputs["Y"], "Bias": add.inputs["Y"]}
        new = [block.make_op("fused_gemm_epilogue", ins, outs, attrs)]
        new[0].role = mm.role
        at = [mm]
        if bwd:
            gins = dict(ins, **{"Out@GRAD": [d]})
            if kind != "none":
                gins["ReserveSpace" if kind == "gelu" else "Out"] = [z if kind == "gelu" else y]
                gouts["DPreAct"] = [dz]
            gop = block.make_op("fused_gemm_epilogue_grad", gins,
                                {k: v for k, v in gouts.items() if v}, attrs)
            gop.role = bwd[0].role
            new.append(gop)
            at.append(bwd[0])
        return Replacement(fwd + bwd, new, at)
