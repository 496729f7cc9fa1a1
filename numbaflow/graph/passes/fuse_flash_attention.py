"""fuse_flash_attention: attention's `matmul -> softmax chain -> matmul` as one flash_attention.

    s = matmul_v2(q, k, trans_y=True)
    p = softmax(scale(s) + mask)   (scale and mask optional; or     flash_attention(Q=q, K=k,
        fused_softmax_mask(s, mask), as                        ->   V=v, Mask=mask, scale,
        F.scaled_dot_product_attention writes it)                   causal) -> o
    o = matmul_v2(p, v)

and the backward the gradient rules made of them (`matmul_v2_grad(p, v)` -> the softmax
chain's gradient -> `matmul_v2_grad(q, k)`) becomes one `flash_attention_grad`
(kernels/fused/flash_attention.py): the [.., Tq, Tk] scores and probabilities are never
written, in either direction, and the backward recomputes them tile by tile.

The softmax part is fuse_softmax_mask's match (the same checks: the scale has no bias,
the mask broadcasts and needs no gradient, the chain's intermediates are read by the chain
alone). A candidate is refused, with the reason, when the scores or the probabilities (or
their gradients) are fetched, persistable or read by another op (a dropout on the
weights, a second product); when the products are transposed otherwise or broadcast over
their leading dims; when a gradient chain is not the one the rules make; or on a GPU,
whose flash_attention kernel is the plain one-row-per-thread form (the unfused GEMMs are
faster there).

The pass runs before fuse_softmax_mask (compiler/pipeline.py), which would otherwise take
the softmax chain. It is off by default (BuildStrategy.fuse_flash_attention): on a CPU the
[.., Tq, Tk] blocks of the bench GPTs fit in cache, so recomputing the probabilities in the
backward costs more time than the saved traffic gives back (5-7% per step, one thread);
what it saves is memory (the GPT d512 at batch 16: 11% of the plan's peak).
"""
from . import register_pass
from .fuse_softmax_mask import match_softmax_chain
from .rewrite import Refused, Replacement, Rewrite


def _softmax_core(block, op, protected):
    """(old ops, scores, mask, attrs, probs, d_probs, d_scores) of the softmax chain at
    `op`, or None; d_probs and d_scores are None without a backward."""
    if op.type == "fused_softmax_mask":
        grads = [g for g in block.consumers(op.outputs["Out"][0])
                 if g.type == "fused_softmax_mask_grad"]
        if len(grads) > 1:
            raise Refused(f"{op.outputs['Out'][0].name} has {len(grads)} gradient ops")
        mask = (op.inputs.get("Mask") or [None])[0]
        fsm, gop, old = op, (grads[0] if grads else None), [op] + grads
    else:
        found = match_softmax_chain(block, op, protected)
        if found is None:          # a plain softmax over the last axis, or another axis
            z = op.inputs["X"][0]
            if op.attrs["axis"] not in (-1, len(z.shape) - 1) or not z.shape:
                return None
            grads = [g for g in block.consumers(op.outputs["Out"][0])
                     if g.type == "softmax_grad"]
            if len(grads) > 1:
                raise Refused(f"{op.outputs['Out'][0].name} has {len(grads)} softmax_grad ops")
            d = (grads[0].inputs["Out@GRAD"][0], grads[0].outputs["X@GRAD"][0]) if grads \
                else (None, None)
            return [op] + grads, z, None, {"scale": 1.0, "causal": False}, \
                op.outputs["Out"][0], *d
        fsm, gop, old = found.new[0], (found.new[1] if len(found.new) > 1 else None), \
            found.old
        mask = (fsm.inputs.get("Mask") or [None])[0]
    d = (gop.inputs["Out@GRAD"][0], gop.outputs["X@GRAD"][0]) if gop else (None, None)
    return old, fsm.inputs["X"][0], mask, dict(fsm.attrs), fsm.outputs["Out"][0], *d


def _one(ops, what):
    if len(ops) != 1:
        raise Refused(f"{what}: found {len(ops)}")
    return ops[0]


def _match(block, op, protected, device):
    core = _softmax_core(block, op, protected)
    if core is None:
        return None
    old, s, mask, attrs, p, dp, ds = core
    qk = block.producer(s)
    if qk is None or qk.type != "matmul_v2" or qk.attrs["trans_x"] or not qk.attrs["trans_y"]:
        return None                # not attention's scores
    q, k = qk.inputs["X"][0], qk.inputs["Y"][0]
    pvs = [o for o in block.consumers(p) if o.type == "matmul_v2" and o.inputs["X"][0] is p]
    pv = _one(pvs, f"products reading the probabilities {p.name}")
    v = pv.inputs["Y"][0]
    if pv.attrs["trans_x"] or pv.attrs["trans_y"]:
        raise Refused(f"{pv.type} -> {pv.outputs['Out'][0].name} reads a transposed operand")
    if len(q.shape) < 3 or not (tuple(q.shape[:-2]) == tuple(k.shape[:-2]) ==
                                tuple(v.shape[:-2])):
        raise Refused(f"q {q.name} {q.shape}, k {k.name} {k.shape}, v {v.name} {v.shape}: "
                      f"the products broadcast over their leading dims")
    if device != "cpu":
        raise Refused("on a GPU the flash_attention kernel is the plain one-row-per-thread "
                      "form; the unfused GEMMs are faster")
    fwd, bwd = [qk] + [o for o in old if o.role == qk.role] + [pv], []
    pv_grads = [o for o in block.consumers(p) if o.type == "matmul_v2_grad"]
    if pv_grads or dp is not None:
        pg = _one(pv_grads, f"gradients of the product {pv.outputs['Out'][0].name}")
        if dp is None or pg.inputs["Y"][0] is not v or \
                (pg.outputs.get("X@GRAD") or [None])[0] is not dp:
            raise Refused(f"the gradient of {p.name} is not the softmax chain's input")
        qg = _one([o for o in block.consumers(ds) if o.type == "matmul_v2_grad"],
                  f"gradients of the scores {s.name}")
        if qg.inputs["X"][0] is not q or qg.inputs["Y"][0] is not k:
            raise Refused(f"{qg.type} of {s.name} does not read q {q.name} and k {k.name}")
        bwd = [pg] + [o for o in old if o.role != qk.role] + [qg]
    group = fwd + bwd
    for var in [s, p] + ([dp, ds] if bwd else []):
        if var.name in protected or var.persistable or \
                not all(any(r is o for o in group) for r in block.consumers(var)):
            raise Refused(f"{var.name} is fetched, persistable or read by another op")
    ins = {"Q": [q], "K": [k], "V": [v]}
    if mask is not None:
        ins["Mask"] = [mask]
    out = pv.outputs["Out"]
    new = [block.make_op("flash_attention", ins, {"Out": out}, attrs)]
    new[0].role = pv.role
    at = [pv]
    if bwd:
        grads = {slot + "@GRAD": o.outputs[src + "@GRAD"]
                 for slot, o, src in (("Q", qg, "X"), ("K", qg, "Y"), ("V", pg, "Y"))
                 if o.outputs.get(src + "@GRAD")}
        gop = block.make_op("flash_attention_grad",
                            dict(ins, Out=out, **{"Out@GRAD": pg.inputs["Out@GRAD"]}),
                            grads, attrs)
        gop.role = pg.role
        new.append(gop)
        at.append(pg)
    return Replacement(group, new, at)


@register_pass
class FuseFlashAttention(Rewrite):
    """`matmul(softmax(scale(q k^T) + mask), v)` and its gradients -> flash_attention (+ grad)."""
    name = "fuse_flash_attention"
    anchors = ("softmax", "fused_softmax_mask")

    def match(self, block, op):
        return _match(block, op, self.protected, self.device)
