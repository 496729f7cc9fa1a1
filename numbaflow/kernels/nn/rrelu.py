"""rrelu and rrelu_grad (Paddle's ops behind F.rrelu / nn.RReLU).

Out = X where X >= 0, X * Noise elsewhere. Noise (X's shape and dtype; Paddle's
intermediate output) is 1 where X >= 0 and the slope elsewhere: in training a uniform draw
in [lower, upper) per element, at test (is_test) the fixed (lower + upper) / 2, as
paddle/phi/kernels/cpu/rrelu_kernel.cc. X@GRAD = Out@GRAD * Noise (an elementwise op). Paddle's inference exports drop
the Noise output; the kernels then write it to a scratch buffer.

The draws come from dropout's `UniformDraws` (one generator per bound op, seeded from
`numbaflow.seed`'s sequence when one is set), on the host for the CUDA kernel too, so CPU
and GPU give one Noise for one seed. At test every "draw" is 0.5: one kernel serves both.
"""
import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..math.elementwise import elementwise_op, grad_rule
from ..registry import NO_GRAD, RANDOM, OpDef, Slot, numel, register_op
from ..tensor.creation import next_op_seed
from .conv_gpu import launch
from .dropout import UniformDraws

cuda = None   # numba.cuda, bound by `kernels()` on first use


@njit(nogil=True, cache=True, error_model="numpy")
def rrelu_fwd(x, u, noise, out, lower, span):
    for i in range(x.size):
        noise[i] = 1.0 if x[i] >= 0.0 else lower + span * u[i]
        out[i] = x[i] * noise[i]


@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(cache=True)
    def fwd(x, u, noise, out, lower, span):
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            noise[i] = 1.0 if x[i] >= 0.0 else lower + span * u[i]
            out[i] = x[i] * noise[i]

    return gpu_util.Kernels(fwd=fwd)


def _draws(cop):
    """() -> the run's uniform numbers: a new draw per run in training, 0.5s at test."""
    n = numel(cop.input("X").shape)
    if cop.attrs["is_test"]:
        half = np.full(n, 0.5)
        return lambda: half
    return UniformDraws(n, {"seed": next_op_seed(), "fix_seed": False})


def _span(attrs):
    return float(attrs["lower"]), float(attrs["upper"]) - float(attrs["lower"])


def _cpu(cop):
    draws, (lower, span) = _draws(cop), _span(cop.attrs)

    def bind(ins, outs):
        x, out = ins["X"][0].reshape(-1), outs["Out"][0].reshape(-1)
        noise = outs["Noise"][0].reshape(-1) if outs.get("Noise") else np.empty_like(x)
        return lambda: rrelu_fwd(x, draws(), noise, out, lower, span)
    return bind


def _gpu(cop):
    draws, (lower, span) = _draws(cop), _span(cop.attrs)

    def bind(ins, outs):
        f = gpu_util.flat
        fwd, x, test = kernels().fwd, f(ins["X"][0]), cop.attrs["is_test"]
        # at test the 0.5s once; in training each run's draw, copied in by run()
        u = gpu_util.to_device(draws()) if test else cuda.device_array(x.size, np.float64)
        noise = f(outs["Noise"][0]) if outs.get("Noise") else cuda.device_array_like(x)
        kernel = launch(fwd, x.size, x, u, noise, f(outs["Out"][0]), lower, span)
        if test:
            return kernel

        def run():
            u.copy_to_device(draws())
            kernel()
        return run
    return bind


def _infer(ctx):
    x, lower, upper = ctx.input("X"), ctx.attr("lower"), ctx.attr("upper")
    if not 0.0 <= lower <= upper <= 1.0:
        raise ctx.error(f"needs 0 <= lower <= upper <= 1, got lower {lower}, upper {upper}")
    if x.dtype.kind != "f":
        raise ctx.error(f"X {ctx.name('X')} must be float32 or float64, got {x.dtype}")
    return {"Out": x, "Noise": x}


ATTRS = {"lower": 0.125, "upper": 1.0 / 3.0, "is_test": False}
# Noise is optional: Paddle's inference exports drop it (an intermediate output)
register_op(OpDef("rrelu", (Slot("X"),), (Slot("Out"), Slot("Noise", optional=True)), _infer,
                  _cpu, gpu=_gpu,
                  attrs=dict(ATTRS), traits=frozenset((RANDOM,)),
                  grad=grad_rule("rrelu_grad", reads=("X", "Noise")),
                  doc="Out = X if X >= 0 else X * slope: uniform in [lower, upper) in "
                      "training, (lower + upper) / 2 at test; Noise = 1 or the slope"))
elementwise_op("rrelu_grad", ("X", "Noise", "Out@GRAD"), lambda a, x, noise, d: d * noise,
               outputs=(Slot("X@GRAD"),), attrs=dict(ATTRS), out_like={"X@GRAD": "X"},
               traits=(NO_GRAD,), doc="X@GRAD = Out@GRAD * Noise")
