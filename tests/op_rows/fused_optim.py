"""Table rows for the fused optimizer updates (kernels/fused/fused_optim.py): several parameters
of different shapes (a one-element one included) with their own learning rates; the
reference is the single op's float64 reference applied to each parameter."""
from numbaflow.testing.op_test import const, uniform

from . import row
from .core import adam_ref, momentum_ref, sgd_ref
from .optim_extra import adamw_ref

SHAPES = [(3, 4), (5,), (1,), (2, 1, 3)]


def per_param(shapes, make):
    return [make(s) for s in shapes]


def each(ref):
    """A fused reference: `ref` on parameter i's entries of every slot."""
    def fused(ins, a):
        n = len(ins["Param"])
        outs = [ref({k: v[i] for k, v in ins.items()}, a) for i in range(n)]
        return {k: [o[k] for o in outs] for k in outs[0]}
    return fused


BASE = {"Param": per_param(SHAPES, uniform), "Grad": per_param(SHAPES, uniform),
        "LearningRate": [const([0.1]), const([0.05]), const([0.1]), const([0.2])]}

row("fused_sgd", BASE, each(sgd_ref))
for _nest in (False, True):
    row("fused_momentum", dict(BASE, Velocity=per_param(SHAPES, uniform)), each(momentum_ref),
        f"fused_momentum-{'nesterov' if _nest else 'plain'}",
        attrs={"mu": 0.8, "use_nesterov": _nest})
row("fused_adam", dict(BASE, Moment1=per_param(SHAPES, uniform),
                       Moment2=per_param(SHAPES, lambda s: uniform(s, 0.0, 0.5)),
                       Beta1Pow=[const([0.9 ** t]) for t in (1, 2, 3, 4)],
                       Beta2Pow=[const([0.999 ** t]) for t in (1, 2, 3, 4)]),
    each(adam_ref), attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8})
for _decay in (True, False):
    row("fused_adamw", dict(BASE, Moment1=per_param(SHAPES, uniform),
                            Moment2=per_param(SHAPES, lambda s: uniform(s, 0.0, 0.5)),
                            Beta1Pow=[const([0.9 ** t]) for t in (1, 2, 3, 4)],
                            Beta2Pow=[const([0.999 ** t]) for t in (1, 2, 3, 4)]),
        each(adamw_ref), f"fused_adamw-{'decay' if _decay else 'no-decay'}",
        attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "coeff": 0.02, "lr_ratio": 0.5,
               "with_decay": _decay})
