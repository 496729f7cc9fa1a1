"""Keep a CPU inference program's activations in channel blocks between its convolutions.

Matches, over the whole block, the convolutions that fused_conv2d_nchwc can run (conv2d or
fused_conv2d, float32, 3x3 or 1x1, stride 1 or 2, padding at most 1, channels multiples of
the block: `conv_blocked.conv_fits`) and the relu / elementwise_add ops whose inputs those
convolutions (or earlier such ops) made; in their place:

    x -> conv -> relu -> conv -> + -> relu -> pool      (NCHW everywhere)
    x -> nchwc_pack -> fused_conv2d_nchwc -> relu -> fused_conv2d_nchwc -> + -> relu
      -> nchwc_unpack -> pool                           (blocked in between)

A variable a taken op writes becomes a new blocked variable (`name.nchwc`); where something
else still reads the NCHW one (an op left alone, a fetch, the Scope) an nchwc_unpack writes
it right after; an NCHW input of a taken convolution is packed once, before its first
blocked reader. So each convolution reads its input without repacking it and writes its
output in the layout the next one reads (kernels/fused/conv_blocked.py). The rewrite does
not change the maths: every element is computed by the same tile as conv2d's NCHWc path,
in the same order.

Refused, saying why, on a GPU (the blocked ops have CPU kernels only). Inference programs
only (its pipeline row): a training program's gradient ops read the NCHW activations.
"""
from ...kernels.fused.conv_blocked import blocked_shape, conv_fits
from ...kernels.registry import get_op_def
from ..nodes import Variable
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite

CONVS = ("conv2d", "fused_conv2d")


def why_not_blocked(op):
    """None when convolution `op` can run on blocked activations, else the reason."""
    x, w = op.inputs["Input"][0], op.inputs["Filter"][0]
    if len(x.shape) != 4 or min(x.shape[1:]) < 0:
        return f"Input {x.name} {tuple(x.shape)}: needs known channels, height and width"
    m, c, kh, kw = w.shape
    return conv_fits(op.attrs, x.shape[1], m, x.shape[2], x.shape[3], kh, kw, x.dtype)


def _takes(op, blocked):
    """True when `op` joins the blocked region, given the blocked variables so far."""
    if op.type in CONVS:
        return why_not_blocked(op) is None
    ins = [v for vs in op.inputs.values() for v in vs]
    if op.type == "relu" or op.type == "elementwise_add":
        return all(v.name in blocked for v in ins) and len({v.shape for v in ins}) == 1
    return False


def _match(block, ops, protected):
    blocked, region, packs = {}, [], set()

    def block_var(v):
        if v.name not in blocked:
            blocked[v.name] = Variable(block, v.name + ".nchwc", blocked_shape(*v.shape),
                                       v.dtype, stop_gradient=True)
        return blocked[v.name]
    for op in ops:
        if not _takes(op, blocked):
            continue
        if op.type in CONVS and op.inputs["Input"][0].name not in blocked:
            packs.add(op.inputs["Input"][0].name)
            block_var(op.inputs["Input"][0])
        region.append(op)
        block_var(op.output_vars()[0])
    if not region:
        return None
    taken = {id(op) for op in region}
    # the readers among `ops`: a plain run's plan holds ops (fused_conv2d) its block does not
    read_outside = {v.name for op in ops if id(op) not in taken for v in op.input_vars()}
    new, at, packed = [], [], set()

    def add(op_type, ins, outs, attrs, where):
        made = block.make_op(op_type, ins, outs, attrs)
        made.role = where.role
        new.append(made)
        at.append(where)
    conv_attrs = get_op_def("fused_conv2d_nchwc").attrs
    for op in region:
        out = op.output_vars()[0]
        if op.type in CONVS:
            x = op.inputs["Input"][0]
            if x.name in packs and x.name not in packed:
                packed.add(x.name)
                add("nchwc_pack", {"X": [x]}, {"Out": [blocked[x.name]]}, {}, op)
            ins = dict(op.inputs, Input=[blocked[x.name]])
            add("fused_conv2d_nchwc", ins, {"Output": [blocked[out.name]]},
                {k: v for k, v in op.attrs.items() if k in conv_attrs}, op)
        else:
            add(op.type, {s: [blocked[v.name] for v in vs] for s, vs in op.inputs.items()},
                {"Out": [blocked[out.name]]}, op.attrs, op)
        if out.name in protected or out.persistable or out.name in read_outside:
            add("nchwc_unpack", {"X": [blocked[out.name]]}, {"Out": [out]}, {}, op)
    return Replacement(region, new, at, vars=list(blocked.values()),
                       what=f"{len(region)} ops from {region[0].type} -> {out.name}")


@register_pass
class NchwcLayout(Rewrite):
    """The convolutions of a CPU inference program (and the relu / residual adds between
    them) on activations kept in channel blocks: packed once, unpacked where read."""
    name = "nchwc_layout"
    cost_rule = False           # a layout change the op-count model cannot price: measured

    def candidates(self, block, ops):
        return [ops] if any(op.type in CONVS for op in ops) else []

    def what(self, ops):
        return f"the {sum(op.type in CONVS for op in ops)} convolutions of the block"

    def match(self, block, ops):
        if self.device != "cpu":
            if any(op.type in CONVS and why_not_blocked(op) is None for op in ops):
                raise Refused(f"the device is {self.device!r}: the blocked convolutions have "
                              f"CPU kernels only (the program keeps fused_conv2d)")
            return None
        return _match(block, ops, self.protected)
