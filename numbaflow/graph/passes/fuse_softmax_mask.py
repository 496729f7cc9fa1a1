"""fuse_softmax_mask: hand-written attention's `scale -> + mask -> softmax` as one op.

    s = scale(x, a)            (optional)      fused_softmax_mask(X=x, Mask=m, scale=a)
    z = elementwise_add(s, m)  (optional)  ->      -> y
    y = softmax(z, axis=-1)

and the gradient chain the backward made of them (`softmax_grad -> elementwise_add_grad
-> scale`) becomes one `fused_softmax_mask_grad` (kernels/fused/softmax_mask.py): the score tensor
is read and written once instead of three times each way, and the `scale` ops of the
chain (one forward, one backward per attention layer) are folded into it.

A candidate is refused, with the reason, when an intermediate (the scaled or the masked
scores, or their gradients) is fetched, persistable or read by any other op; when the
scale has a bias; when the mask does not broadcast over the scores' leading dims with
their last dim, has another dtype, or needs a gradient; or when the backward chain is
not the one the gradient rules make.

The pass is a match + replacement (rewrite.py): CompiledProgram's pipeline applies it to a
program, and, on by default, the executor to the op list of a plain `Executor.run(program)`
(the user's program stays as it was).
"""
from ...kernels.registry import broadcast_shapes
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite


def _mask_fits(mask, scores, add):
    if mask.dtype != scores.dtype or not mask.shape or mask.shape[-1] != scores.shape[-1]:
        return False
    if len(mask.shape) > len(scores.shape) or \
            (add.attrs.get("axis", -1) not in (-1, len(scores.shape) - len(mask.shape))):
        return False
    try:
        return _same_shape(broadcast_shapes(mask.shape, scores.shape), scores.shape)
    except ValueError:
        return False


def _same_shape(a, b):
    """Equal shapes, a -1 (unknown) dim matching any size."""
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b))


def _made_by_scale(block, var):
    p = block.producer(var)
    return p is not None and p.type == "scale"


def _only_readers(block, var, allowed):
    return all(any(op is a for a in allowed) for op in block.consumers(var))


def match_softmax_chain(block, sm, protected):
    """The Replacement for softmax op `sm`, None, or Refused (fuse_flash_attention starts
    from this match: it takes the chain in with the products around it)."""
    z, y = sm.inputs["X"][0], sm.outputs["Out"][0]
    if sm.attrs["axis"] not in (-1, len(z.shape) - 1) or not z.shape:
        return None           # not over the last axis: not attention's softmax
    fwd, scores, mask, add, sc = [sm], z, None, None, None
    p = block.producer(z)
    if p is not None and p.type == "elementwise_add" and len(block.producers(z)) == 1:
        a, b = p.inputs["X"][0], p.inputs["Y"][0]
        pairs = [(a, b), (b, a)]
        if _made_by_scale(block, b):        # `mask + scale(scores)`: b holds the scores
            pairs.reverse()
        for s_var, m_var in pairs:
            if _same_shape(s_var.shape, z.shape) and _mask_fits(m_var, s_var, p):
                add, scores, mask = p, s_var, m_var
                break
        else:
            raise Refused(f"{z.name} = {a.name} + {b.name}: no operand is a mask that "
                          f"broadcasts over the other's leading dims with its last dim")
        fwd.insert(0, add)
    p = block.producer(scores)
    if p is not None and p.type == "scale" and len(block.producers(scores)) == 1:
        if p.attrs["bias"] != 0.0:
            raise Refused(f"scale -> {scores.name} has a bias ({p.attrs['bias']})")
        sc = p
        fwd.insert(0, sc)
    if len(fwd) == 1:
        return None           # a plain softmax: nothing to fold
    x = sc.inputs["X"][0] if sc else scores
    mids = ([scores] if sc else []) + ([z] if add else [])
    for v in mids:
        if v.name in protected or v.persistable:
            raise Refused(f"{v.name} is fetched, fed or persistable")
    # backward: softmax_grad(y) -> dz; add_grad(dz) -> ds; scale(ds) -> dx
    sgrads = [o for o in block.consumers(y) if o.type == "softmax_grad"]
    if len(sgrads) > 1:
        raise Refused(f"{y.name} has {len(sgrads)} softmax_grad ops")
    bwd, g_out, dx = [], None, None
    if sgrads:
        g = sgrads[0]
        bwd, g_out, d = [g], g.inputs["Out@GRAD"][0], g.outputs["X@GRAD"][0]
        if add is not None:
            ag = [o for o in block.consumers(d) if o.type == "elementwise_add_grad"]
            mslot = "Y" if add.inputs["Y"][0] is mask else "X"
            sslot = "X" if mslot == "Y" else "Y"
            if len(ag) != 1 or len(block.consumers(d)) != 1 or \
                    ag[0].inputs[sslot][0] is not scores or ag[0].inputs[mslot][0] is not mask:
                raise Refused(f"the gradient {d.name} is not read by the add's gradient alone")
            if ag[0].outputs.get(mslot + "@GRAD"):
                raise Refused(f"the mask {mask.name} needs a gradient")
            if not ag[0].outputs.get(sslot + "@GRAD"):
                raise Refused(f"{ag[0].type} computes no gradient of {scores.name}")
            mids.append(d)
            bwd.append(ag[0])
            d = ag[0].outputs[sslot + "@GRAD"][0]
        if sc is not None:
            readers = block.consumers(d)
            if len(readers) != 1 or readers[0].type != "scale" or \
                    readers[0].attrs["scale"] != sc.attrs["scale"] or \
                    readers[0].attrs["bias"] != 0.0:
                raise Refused(f"the gradient {d.name} is not read by the scale's gradient alone")
            mids.append(d)
            bwd.append(readers[0])
            d = readers[0].outputs["Out"][0]
        dx = d
    allowed = fwd + bwd
    for v in mids:
        if v.name in protected or v.persistable or not _only_readers(block, v, allowed):
            raise Refused(f"{v.name} is fetched, persistable or read by another op")
    attrs = {"scale": float(sc.attrs["scale"]) if sc else 1.0, "causal": False}
    ins = {"X": [x]} if mask is None else {"X": [x], "Mask": [mask]}
    new = [block.make_op("fused_softmax_mask", ins, {"Out": [y]}, attrs)]
    new[0].role = sm.role
    at = [sm]
    if bwd:
        gop = block.make_op("fused_softmax_mask_grad", {"Out": [y], "Out@GRAD": [g_out]},
                             {"X@GRAD": [dx]}, attrs)
        gop.role = bwd[-1].role
        new.append(gop)
        at.append(bwd[-1])
    return Replacement(fwd + bwd, new, at)


@register_pass
class FuseSoftmaxMask(Rewrite):
    """`softmax(scale(x) + mask)` and its gradient chain -> fused_softmax_mask (+ grad)."""
    name = "fuse_softmax_mask"
    anchors = ("softmax",)

    def match(self, block, op):
        return match_softmax_chain(block, op, self.protected)
