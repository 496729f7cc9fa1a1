"""The cost rule every fusion pass asks before it rewrites: does this fusion pay?

One model for all passes (issue 22 item 4: a fusion flag must never slow a program). A
candidate replaces some ops by one; each side is priced by what its kernels do:

* memory traffic: the bytes an op's kernel reads and writes. An elementwise op (or a
  fused group) is traced from its scalar bodies, so only the inputs the generated loop
  really loads count; an output that is an input passed through is a copy (read + write);
  an output summed down to a smaller shape costs a full-size scratch buffer, written and
  read back, when the loop computes it. Any other op reads every input and writes every
  output once;
* dispatch: one step of the plan's op loop per op and one call (a launch, on a GPU) per
  kernel the bound op makes, plus a sequence cost when an op strings several kernels
  together in Python (`run_calls`: a head GEMM, a tail reduction, a sum-down after the
  loop).

time = bytes / bandwidth + ops * op_s + calls * call_s + sequenced * sequence_s (RATES,
per kind of device), and a candidate fires only when the fused side is faster. A refusal keeps both sides' numbers
("saves 1.2 KB and 1 op, costs 30.0 KB and 1 sequence: -1.1 us"), so `compiled.passes`
and `explain` show why a flag left a candidate alone.

The constants were measured on the development machine (2 cores, 1 thread, per-op thread
CPU time of the issue-22 models' ops, op by op, 2026-11-25): the CPU bandwidth from the
GPT's [2048, 512] float32 elementwise_add (8.4 MB in 330 us); op and call costs from the
architecture notes (a plan step ~0.1 us of Python, an njit dispatch ~0.27 us); the
sequence cost from the CNN's small fused groups, which ran 1.3-1.5 us slower than their
parts while moving the same bytes. A compiled segment makes the CPU's dispatch costs
nearly free, so the model errs towards not fusing where only dispatch is at stake. A dimension the
program leaves open (-1, the batch) counts as UNKNOWN_DIM.
"""
from dataclasses import dataclass

import numpy as np

from ...kernels.codegen.render import inputs_used
from ...kernels.fused.fused_elementwise import Group, make_ops
from ...kernels.registry import ELEMENTWISE, OPTIMIZER, VarInfo, get_op_def, numel

UNKNOWN_DIM = 64


@dataclass(frozen=True)
class Rates:
    """Seconds per unit of a Price on one kind of device."""
    bytes_per_s: float
    op_s: float
    call_s: float
    sequence_s: float


RATES = {
    "cpu": Rates(bytes_per_s=25e9, op_s=0.15e-6, call_s=0.3e-6, sequence_s=1.4e-6),
    # not measured here (no GPU lent): copy bandwidth of SPEC's H100 row, a kernel launch
    # of a few us; a sequence of launches costs only its launches
    "gpu": Rates(bytes_per_s=2e12, op_s=0.15e-6, call_s=4e-6, sequence_s=0.0),
}


@dataclass(frozen=True)
class Price:
    """What some ops cost: bytes moved through memory, ops in the plan, kernel calls, and
    how many of the ops string several kernels together in Python."""
    bytes: int = 0
    ops: int = 0
    calls: int = 0
    sequenced: int = 0

    def __add__(self, other):
        return Price(self.bytes + other.bytes, self.ops + other.ops,
                     self.calls + other.calls, self.sequenced + other.sequenced)

    def seconds(self, rates):
        """The estimated time of these ops per run at `rates`."""
        return (self.bytes / rates.bytes_per_s + self.ops * rates.op_s
                + self.calls * rates.call_s + self.sequenced * rates.sequence_s)


@dataclass(frozen=True)
class Verdict:
    """A candidate's prices before (its ops) and after (the fused ops), at `rates`."""
    before: Price
    after: Price
    rates: Rates

    @property
    def saved_s(self):
        return self.before.seconds(self.rates) - self.after.seconds(self.rates)

    @property
    def pays(self):
        return self.saved_s > 0

    def __str__(self):
        b, a = self.before, self.after
        gains, costs = [], []
        for what, d in (("", b.bytes - a.bytes), ("op", b.ops - a.ops),
                        ("call", b.calls - a.calls), ("sequence", b.sequenced - a.sequenced)):
            if d:
                text = fmt_bytes(abs(d)) if not what else f"{abs(d)} {what}{'s' * (abs(d) > 1)}"
                (gains if d > 0 else costs).append(text)
        return (f"saves {' and '.join(gains) or 'nothing'}, costs {' and '.join(costs) or 'nothing'}"
                f": {self.saved_s * 1e6:+.1f} us per run")


def fmt_bytes(n):
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _shape(shape):
    return tuple(UNKNOWN_DIM if d < 0 else d for d in shape)


def info(v):
    """The VarInfo of variable `v` with its open dimensions set to UNKNOWN_DIM."""
    return VarInfo(_shape(v.shape), np.dtype(v.dtype))


def nbytes(v):
    """Bytes of variable `v` (or a VarInfo)."""
    i = v if isinstance(v, VarInfo) else info(v)
    return numel(i.shape) * i.dtype.itemsize


def plain_price(op):
    """Any op: every input read, every output written, one kernel call."""
    return Price(sum(nbytes(v) for v in op.input_vars()) +
                 sum(nbytes(v) for v in op.output_vars()), 1, 1, 0)


def group_price(group):
    """A `kernels.fused_elementwise.Group`: the head's and tail's kernels, the generated
    loop (the inputs it loads, the outputs it stores) and the sum-downs after it."""
    total = Price(ops=1)
    for st in (group.head, group.tail):
        if st is not None:
            refs = [r for rs in list(st.ins.values()) + list(st.outs.values()) for r in rs]
            total += Price(sum(nbytes(group.values[r]) for r in refs), 0, 1, 0)
    outs = group.kernel_outputs()
    syms, leaves, _ = group.trace(outs)
    full = numel(group.full) * group.float_dtype().itemsize
    loaded = inputs_used([s for s in syms if s.op != "in"])     # by the loop itself
    moved = sum(nbytes(VarInfo(shape, group.values[r].dtype))
                for k, (r, shape) in enumerate(leaves) if k in loaded)
    computed, post = False, 0
    for r, sym in zip(outs, syms):
        small = group.out_shape(r) != tuple(group.full)
        if sym.op == "in":          # passed through: a copy or sum of the input
            post += 1
            moved += nbytes(group.values[r]) + (full if small else nbytes(group.values[r]))
        else:
            computed = True
            if small:               # computed full-size into scratch, summed down after
                post += 1
                moved += 2 * full + nbytes(group.values[r])
            else:
                moved += nbytes(group.values[r])
    calls = int(computed) + post + total.calls
    return Price(moved + total.bytes, 1, calls, int(calls > 1))


def _as_group(op):
    """`op`, an elementwise op with a scalar body, as a one-op Group (None: it is not)."""
    if op.type == "fused_elementwise":
        return Group(op.attrs["ops"], [info(v) for v in op.input_vars()])
    opdef = get_op_def(op.type)
    # an optimizer update is never part of a generated group (it writes in place), and
    # adam's body does not compute its Beta1PowOut/Beta2PowOut: priced as a plain op
    if opdef.body is None or not opdef.has(ELEMENTWISE) or opdef.has(OPTIMIZER):
        return None
    xs, ins, outs = [], {}, {}
    for slot, vs in op.inputs.items():
        ins[slot] = []
        for v in vs:
            ins[slot].append(("x", len(xs)))
            xs.append(info(v))
    n = 0
    for slot, vs in op.outputs.items():
        outs[slot] = [("out", n + k) for k in range(len(vs))]
        n += len(vs)
    return Group(make_ops([(op.type, op.attrs, ins, outs)]), xs)


def price(op):
    """What op `op` costs per run (see the module docstring)."""
    try:
        group = _as_group(op)
    except ValueError:
        group = None
    return group_price(group) if group is not None else plain_price(op)


def judge(old_ops, new_ops, device="cpu"):
    """The Verdict of replacing `old_ops` by `new_ops` (an op or a list of ops) on a
    `device` ("cpu" or "gpu")."""
    if not isinstance(new_ops, (list, tuple)):
        new_ops = [new_ops]
    before, after = Price(), Price()
    for op in old_ops:
        before += price(op)
    for op in new_ops:
        after += price(op)
    return Verdict(before, after, RATES["gpu" if device == "gpu" else "cpu"])
