"""Graph passes: small objects that rewrite one Program in place.

A pass is `run(program) -> changed`. A fusion (any rewrite of some ops into others) is a
`Rewrite` (rewrite.py): it states what it matches and what it puts in its place, and one
driver applies it, to a program or to a plain program's plan op list. `apply_passes`
runs a list of passes and verifies the IR after each one that changed something. Which
passes a BuildStrategy turns on, and in what order, is the compiler's pass table
(compiler/pipeline.py): nothing here knows BuildStrategy. Passes edit the IR only through
the Block's mutators (`replace_ops`, `remove_ops`, `insert_before`, `replace_uses`,
`set_input`, ...: program.py), which keep the producer/consumer maps (`block.consumers(v)`,
`block.producer(v)`) and the program version right; `verify` checks the maps. A pass that
sees a candidate it will not rewrite says why with `refuse` (a Rewrite's match raises
`Refused`; logged at debug level on the "numbaflow.passes" logger and kept in
`pass.refusals`), so a fusion flag never silently does nothing.

>>> g = static.Graph(main)              # a private copy of `main`
>>> g.apply_pass("fuse_elewise_add_act")
True
"""
import logging

from ..verify import verify

log = logging.getLogger("numbaflow.passes")

_PASSES = {}


def register_pass(cls):
    """Class decorator: make `cls` available by `cls.name` (to static.Graph.apply_pass)."""
    if cls.name in _PASSES:
        raise ValueError(f"pass {cls.name!r} is registered twice")
    _PASSES[cls.name] = cls
    return cls


def get_pass(name, **options):
    """A new instance of the pass called `name`."""
    try:
        cls = _PASSES[name]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(name, list(_PASSES), n=3)
        raise ValueError(f"unknown pass {name!r}" + (f"; did you mean {close}?" if close else "")
                         + f". Passes: {sorted(_PASSES)}") from None
    return cls(**options)


def all_pass_names():
    return sorted(_PASSES)


class Pass:
    """Base of every pass. `protected`: names of variables that must stay in the graph
    (fed and fetched ones): a pass may not fuse them away. `cost_rule`: a fusion pass
    rewrites a candidate only where the cost rule (cost.py) says it pays; False fuses every
    candidate that is correct (the rewrite's mechanics alone, e.g. in its tests)."""
    name = ""
    cost_rule = True

    def __init__(self, protected=(), device="cpu", cost_rule=None):
        self.protected = frozenset(protected)
        self.device = device
        if cost_rule is not None:
            self.cost_rule = bool(cost_rule)
        self.refusals = []          # [(what, reason)]
        self.changed = False        # set by apply_passes

    def run(self, program):
        raise NotImplementedError

    def refuse(self, what, reason):
        self.refusals.append((what, reason))
        log.debug("%s: not rewriting %s: %s", self.name, what, reason)

    def pays(self, what, old_ops, new_ops):
        """True when replacing `old_ops` by `new_ops` (an op or a list) pays by the cost
        rule (or the rule is off); otherwise the candidate is refused with the rule's
        numbers."""
        if not self.cost_rule:
            return True
        verdict = judge(old_ops, new_ops, self.device)
        if not verdict.pays:
            self.refuse(what, f"fusing does not pay: {verdict}")
        return verdict.pays


# ---------------------------------------------------------------- helpers for pattern passes
def remove_unused_vars(block, names):
    """Drop the variables called `names` that no op references any more."""
    for n in names:
        v = block.vars.get(n)
        if v is not None and not v.persistable and not block.is_used(v):
            block.remove_var(n)


def apply_passes(program, passes, protected=(), device="cpu"):
    """Run `passes` (Pass objects, or names made with `protected` and `device`) on
    `program` in order, verifying after each change. Returns the passes run (each with
    its `changed` and `refusals`)."""
    done = []
    for p in passes:
        if isinstance(p, str):
            p = get_pass(p, protected=protected, device=device)
        p.changed = bool(p.run(program))
        if p.changed:
            verify(program)
            log.debug("pass %s changed the program", p.name)
        done.append(p)
    return done


from .cost import judge  # noqa: E402
from . import fuse_elewise_add_act, auto_fusion  # noqa: E402,F401
from . import fuse_relu_depthwise_conv, fuse_optimizer_ops, fuse_sgd_gemm  # noqa: E402,F401
from . import sync_batch_norm  # noqa: E402,F401
from . import fuse_softmax_mask, fuse_flash_attention  # noqa: E402,F401
from . import fuse_conv_epilogue, fuse_gemm_epilogue, recompute_elementwise  # noqa: E402,F401
from . import nchwc_layout  # noqa: E402,F401
from .rewrite import Refused, Replacement, Rewrite  # noqa: E402,F401
