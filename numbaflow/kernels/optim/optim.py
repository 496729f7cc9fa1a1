"""Optimizer update ops. Each is an elementwise body over the parameter, its gradient,
its state and the (broadcast, shape (1,)) learning rate; outputs overwrite the inputs
in place (ParamOut is Param), so an update allocates nothing.
"""
from .. import scalar as S
from ..math.elementwise import elementwise_op
from ..registry import NO_GRAD, OPTIMIZER, Slot, sequence
from .multi_update import BETA_POWS, bind_beta_pows

_TRAITS = (OPTIMIZER, NO_GRAD)

elementwise_op(
    "sgd", ("Param", "Grad", "LearningRate"), lambda a, p, g, lr: p - lr * g,
    outputs=("ParamOut",), inplace={"ParamOut": "Param"}, traits=_TRAITS,
    doc="ParamOut = Param - LearningRate * Grad")


def _momentum(a, p, g, v, lr):
    v_new = a["mu"] * v + g
    if a["use_nesterov"]:
        return p - lr * (g + a["mu"] * v_new), v_new
    return p - lr * v_new, v_new


elementwise_op(
    "momentum", ("Param", "Grad", "Velocity", "LearningRate"), _momentum,
    outputs=("ParamOut", "VelocityOut"), attrs={"mu": 0.9, "use_nesterov": False},
    inplace={"ParamOut": "Param", "VelocityOut": "Velocity"}, traits=_TRAITS,
    doc="VelocityOut = mu * Velocity + Grad; ParamOut = Param - lr * VelocityOut "
        "(Nesterov: Param - lr * (Grad + mu * VelocityOut))")


def _adam(a, p, g, lr, m1, m2, b1p, b2p):
    b1, b2 = a["beta1"], a["beta2"]
    m1_new = b1 * m1 + (1.0 - b1) * g
    m2_new = b2 * m2 + (1.0 - b2) * g * g
    lr_t = lr * S.sqrt(1.0 - b2p) / (1.0 - b1p)
    p_new = p - lr_t * (m1_new / (S.sqrt(m2_new) + a["epsilon"] * S.sqrt(1.0 - b2p)))
    return p_new, m1_new, m2_new


_ADAM = elementwise_op(
    "adam", ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"),
    _adam, outputs=("ParamOut", "Moment1Out", "Moment2Out"),
    attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
    inplace={"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2"},
    traits=_TRAITS,
    doc="Adam as in Paddle: bias correction through Beta1Pow/Beta2Pow; with "
        "Beta1PowOut/Beta2PowOut (what the optimizer emits, in place, as Paddle's does) the "
        "op also writes Beta1Pow * beta1 and Beta2Pow * beta2 there after the update")

def has_beta_pows(opdef):
    """True when `opdef` advances Adam's beta powers itself (`with_beta_pows`)."""
    names = {s.name for s in opdef.outputs}
    return all(out in names for out, _, _ in BETA_POWS)


def with_beta_pows(opdef):
    """Add Paddle's optional Beta1PowOut / Beta2PowOut outputs to `opdef` (an elementwise
    Adam-like op, whose other outputs take the parameter's shape): after the elementwise
    update, one small kernel writes BetaPow * beta into both (in place when they are the
    BetaPows themselves, as in the optimizer's and Paddle's programs). Both or neither:
    an op advancing one power only would silently leave the bias correction wrong."""
    opdef.outputs += tuple(Slot(out, optional=True) for out, _, _ in BETA_POWS)
    opdef.inplace.update({out: src for out, src, _ in BETA_POWS})
    infer = opdef.infer

    def infer_pows(ctx):
        result = infer(ctx)
        result.update({out: ctx.input(src) for out, src, _ in BETA_POWS})
        return result

    def factory(base, device):
        def make(cop):
            bind = base(cop)
            given = [out for out, _, _ in BETA_POWS if cop.out_infos.get(out)]
            if len(given) == 1:
                raise ValueError(f"{cop.type}: output {given[0]} is given without the other "
                                 f"beta power's; give both Beta1PowOut and Beta2PowOut, or "
                                 f"neither")
            def bind_all(ins, outs):
                calls = [bind(ins, outs)]
                if given and outs.get(given[0]):
                    calls.append(bind_beta_pows(
                        device, cop.attrs, [ins[src] for _, src, _ in BETA_POWS],
                        [outs[out] for out, _, _ in BETA_POWS]))
                return sequence(calls)
            return bind_all
        return make
    opdef.infer = infer_pows
    opdef.cpu, opdef.gpu = factory(opdef.cpu, "cpu"), factory(opdef.gpu, "gpu")


with_beta_pows(_ADAM)
