"""Paddle's elementwise loss ops and their gradient ops, as scalar bodies: huber_loss
(F.smooth_l1_loss), bce_loss (F.binary_cross_entropy), kldiv_loss (F.kl_div). Op names,
slots and attributes are Paddle 2.6's (python/paddle/nn/functional/loss.py and the phi
kernels), so a Paddle-saved program with these ops loads and runs, and numbaflow's
programs save as Paddle writes them. The reductions ('mean', 'sum', ...) are separate ops
after these, as Paddle 2.6's functionals build them.

- huber_loss: Residual = Y - X; Out = 0.5 r^2 where |r| <= delta, else delta (|r| - delta/2).
  Its gradient op reads only Residual and Out@GRAD, as Paddle's.
- bce_loss: Out = -(Label log X + (1 - Label) log(1 - X)) with each log clipped at -100;
  Paddle's gradient (X - Label) / max(X (1 - X), 1e-12) * Out@GRAD. (Paddle's CPU kernel
  also raises on an X outside [0, 1]; here such an X gives NaN.)
- kldiv_loss: Loss = Target (log Target - X) where Target > 0, else 0; gradient
  -Target * Loss@GRAD where Target > 0. Only Paddle 2.6's reduction='none' (what its
  F.kl_div writes) runs: a program with another reduction is refused when built.
"""
from .. import scalar as S
from ..math.elementwise import elementwise_op, grad_rule
from ..registry import NO_GRAD, Slot


# ---------------------------------------------------------------- huber_loss
def _huber(a, x, y):
    r = y - x
    ar, d = S.abs_(r), a["delta"]
    return S.where(ar <= d, 0.5 * r * r, d * (ar - 0.5 * d)), r


def _huber_grad(a, r, dout):
    d = a["delta"]
    g = S.where(S.abs_(r) <= d, r, d * S.sign(r)) * dout
    return -g, g


elementwise_op("huber_loss", ("X", "Y"), _huber, outputs=("Out", "Residual"),
               attrs={"delta": 1.0},
               grad=grad_rule("huber_loss_grad", ("X", "Y"), reads=("Residual",)),
               doc="Residual = Y - X; Out = 0.5 r^2 where |r| <= delta, else "
                   "delta * (|r| - 0.5 delta)")
elementwise_op("huber_loss_grad", ("Residual", "Out@GRAD"), _huber_grad,
               outputs=(Slot("X@GRAD", optional=True), Slot("Y@GRAD", optional=True)),
               attrs={"delta": 1.0}, traits=(NO_GRAD,),
               doc="g = r where |r| <= delta, else delta * sign(r); X@GRAD = -g * Out@GRAD, "
                   "Y@GRAD = g * Out@GRAD")


# ---------------------------------------------------------------- bce_loss
def _bce(a, x, label):
    log_p = S.maximum(S.log(x), -100.0)
    log_q = S.maximum(S.log(1.0 - x), -100.0)
    return (label - 1.0) * log_q - label * log_p


def _bce_grad(a, x, label, dout):
    return dout * (x - label) / S.maximum((1.0 - x) * x, 1e-12)


elementwise_op("bce_loss", ("X", Slot("Label", no_grad=True)), _bce,
               grad=grad_rule("bce_loss_grad", reads=("X", "Label")),
               doc="Out = -(Label * max(log X, -100) + (1 - Label) * max(log(1 - X), -100))")
elementwise_op("bce_loss_grad", ("X", "Label", "Out@GRAD"), _bce_grad,
               outputs=(Slot("X@GRAD"),), out_like={"X@GRAD": "X"}, traits=(NO_GRAD,),
               doc="X@GRAD = Out@GRAD * (X - Label) / max(X * (1 - X), 1e-12)")


# ---------------------------------------------------------------- kldiv_loss
def _only_none(a):
    if a["reduction"] != "none":
        return (f"reduction {a['reduction']!r} is not supported, only 'none' (Paddle 2.6's "
                f"F.kl_div writes 'none' and reduces with separate ops): rebuild the program "
                f"with paddle.nn.functional.kl_div")
    return None


def _kldiv(a, x, target):
    return S.where(target > 0.0, target * (S.log(S.maximum(target, 1e-30)) - x), 0.0)


def _kldiv_grad(a, x, target, dout):
    return S.where(target > 0.0, -target * dout, 0.0)


elementwise_op("kldiv_loss", ("X", Slot("Target", no_grad=True)), _kldiv,
               outputs=("Loss",), attrs={"reduction": "mean"}, check=_only_none,
               grad=grad_rule("kldiv_loss_grad", outputs=("Loss",), reads=("X", "Target")),
               doc="Loss = Target * (log Target - X) where Target > 0, else 0 "
                   "(reduction='none' only)")
elementwise_op("kldiv_loss_grad", ("X", "Target", "Loss@GRAD"), _kldiv_grad,
               outputs=(Slot("X@GRAD"),), attrs={"reduction": "mean"}, check=_only_none,
               out_like={"X@GRAD": "X"}, traits=(NO_GRAD,),
               doc="X@GRAD = -Target * Loss@GRAD where Target > 0, else 0")
