"""sync_batch_norm and sync_batch_norm_grad: batch_norm whose batch statistics span every
device and rank of a data-parallel run (BuildStrategy.sync_batch_norm; the
`sync_batch_norm` pass renames batch_norm ops to these).

Same slots, attributes and outputs as batch_norm / batch_norm_grad (nn/batch_norm.py), plus the
COLLECTIVE trait, so the executor hands each kernel its device's communicator as
`cop.comm` and runs them in program order with the other collectives. Training forward:

1. per channel, the local sum, sum of squares and element count (float64);
2. `cop.comm.allreduce_` sums these three rows over every device and rank (one call);
3. mean = sum / count, var = sumsq / count - mean^2 (biased, as batch_norm), then Y,
   SavedMean, SavedVariance (1/sqrt(var + eps)) and the running statistics exactly as
   batch_norm computes them — every device gets the same statistics, hence the same
   running Mean/Variance.

Backward: per channel, the local sum(dY) and sum(dY * xhat) — these are Bias@GRAD and
Scale@GRAD, kept *local* because the data-parallel rewrite sums parameter gradients over
the devices afterwards (a globally reduced value would be counted D times) — then one
allreduce of (sum dY, sum dY * xhat, count) and
    dX = Scale * inv * (dY - (sum dY + xhat * sum dY xhat) / count)
with the global sums, which is batch_norm_grad's dX on the concatenated batch.

The variance from one pass of float64 sums loses precision only when |mean| >> std
(relative error ~ 1e-16 * mean^2 / var); it buys one collective per op instead of two.

With global statistics (use_global_stats, or is_test without trainable_statistics),
and in the backward when X@GRAD is not wanted, nothing is reduced: the kernels are
batch_norm's own. Every device runs the same program, so every device makes the same
sequence of collective calls. Without a communicator (one device) the sums are the local
ones: sync_batch_norm == batch_norm up to float re-association.

GPU: CUDA kernels of the same shape as batch_norm's (nn_gpu.py: one block per channel,
float64 shared-memory trees); the (3, C) statistics are copied to the host for the
allreduce and back (a few bytes per channel), only when there is a communicator.
"""
import functools
import math

import numpy as np
from numba import float64, njit

from ..gpu import gpu_util
from ..nn import batch_norm, nn_gpu
from ..nn.batch_norm import BN_ATTRS, bn_acb, bn_uses_global_stats, bn_grad_infer, bn_infer, bn_normalize_channel
from ..registry import COLLECTIVE, NO_GRAD, OpDef, Slot, register_op, sequence


# ================================================================ CPU kernels
@njit(nogil=True, cache=True, error_model="numpy")
def sbn_local_stats(x, st):
    """st[0, c] = sum x, st[1, c] = sum x^2, st[2, c] = count, over channel c."""
    A, C, B = x.shape
    for c in range(C):
        s = 0.0
        q = 0.0
        for a in range(A):
            for b in range(B):
                v = float64(x[a, c, b])
                s += v
                q += v * v
        st[0, c] = s
        st[1, c] = q
        st[2, c] = A * B


@njit(nogil=True, cache=True, error_model="numpy")
def sbn_apply(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv,
              st, momentum, eps):
    """batch_norm's training output from the (global) sums `st`."""
    for c in range(x.shape[1]):
        n = st[2, c]
        mu = st[0, c] / n
        var = max(st[1, c] / n - mu * mu, 0.0)      # biased, as batch_norm
        bn_normalize_channel(x, c, mu, var, scale, bias, mean_in, var_in, y, mean_out,
                             var_out, saved_mean, saved_inv, momentum, eps)


@njit(nogil=True, cache=True, error_model="numpy")
def sbn_grad_local(x, saved_mean, saved_inv, dy, dscale, dbias, red, want_dscale,
                   want_dbias):
    """Local sums: Bias@GRAD = sum dY, Scale@GRAD = sum dY * xhat; `red` gets them (and
    the count) in float64 for the allreduce."""
    A, C, B = x.shape
    for c in range(C):
        mu, inv = saved_mean[c], saved_inv[c]
        sdy = 0.0
        sdyx = 0.0
        for a in range(A):
            for b in range(B):
                d = float64(dy[a, c, b])
                sdy += d
                sdyx += d * (x[a, c, b] - mu) * inv
        if want_dbias:
            dbias[c] = sdy
        if want_dscale:
            dscale[c] = sdyx
        red[0, c] = sdy
        red[1, c] = sdyx
        red[2, c] = A * B


@njit(nogil=True, cache=True, error_model="numpy")
def sbn_grad_dx(x, scale, saved_mean, saved_inv, dy, dx, red):
    """dX through the batch statistics, from the global sums `red`."""
    A, C, B = x.shape
    for c in range(C):
        mu, inv = saved_mean[c], saved_inv[c]
        sdy, sdyx, n = red[0, c], red[1, c], red[2, c]
        k = scale[c] * inv
        for a in range(A):
            for b in range(B):
                xhat = (x[a, c, b] - mu) * inv
                dx[a, c, b] = k * (dy[a, c, b] - (sdy + xhat * sdyx) / n)


def _bucket(kind, C):
    # the LocalGroup keeps one MPI staging buffer per key: one per (op kind, size), apart
    # from the gradient buckets (ints)
    return (kind, C)


def _sbn_cpu(cop):
    if bn_uses_global_stats(cop.attrs):
        return batch_norm.bn_cpu(cop)          # running statistics: nothing to reduce
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    eps, mom = float(cop.attrs["epsilon"]), float(cop.attrs["momentum"])
    comm, key = cop.comm, _bucket("sync_batch_norm", acb[1])

    def bind(ins, outs):
        x = ins["X"][0].reshape(acb)
        st = np.zeros((3, acb[1]), np.float64)
        steps = [functools.partial(sbn_local_stats, x, st)]
        if comm is not None:
            steps.append(functools.partial(comm.allreduce_, (st,), key))
        steps.append(functools.partial(
            sbn_apply, x, ins["Scale"][0], ins["Bias"][0], ins["Mean"][0],
            ins["Variance"][0], outs["Y"][0].reshape(acb), outs["MeanOut"][0],
            outs["VarianceOut"][0], outs["SavedMean"][0], outs["SavedVariance"][0], st,
            mom, eps))
        return sequence(steps)
    return bind


def _sbn_grad_cpu(cop):
    if bn_uses_global_stats(cop.attrs):
        return batch_norm.bn_grad_cpu(cop)     # statistics are constants: nothing to reduce
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    comm, key = cop.comm, _bucket("sync_batch_norm_grad", acb[1])
    plain = batch_norm.bn_grad_cpu(cop)

    def bind(ins, outs):
        if not outs.get("X@GRAD"):          # Scale/Bias@GRAD are local sums anyway
            return plain(ins, outs)
        x = ins["X"][0].reshape(acb)
        C = acb[1]
        ds = outs["Scale@GRAD"][0] if outs.get("Scale@GRAD") else np.empty(C, x.dtype)
        db = outs["Bias@GRAD"][0] if outs.get("Bias@GRAD") else np.empty(C, x.dtype)
        red = np.zeros((3, C), np.float64)
        dy, mean, inv = ins["Y@GRAD"][0].reshape(acb), ins["SavedMean"][0], \
            ins["SavedVariance"][0]
        steps = [functools.partial(sbn_grad_local, x, mean, inv, dy, ds, db, red,
                                   bool(outs.get("Scale@GRAD")), bool(outs.get("Bias@GRAD")))]
        if comm is not None:
            steps.append(functools.partial(comm.allreduce_, (red,), key))
        steps.append(functools.partial(sbn_grad_dx, x, ins["Scale"][0], mean, inv, dy,
                                       outs["X@GRAD"][0].reshape(acb), red))
        return sequence(steps)
    return bind


# ================================================================ CUDA kernels
T = gpu_util.RED_THREADS
cuda = None   # numba.cuda, bound on first use (a module global: see gpu_util on why)


@gpu_util.lazy
def gpu_kernels():
    global cuda
    from numba import cuda

    shared = nn_gpu.kernels()      # batch_norm's per-channel pieces: one copy of the maths
    tree_sum, channel_total, channel_sums, store_stats, normalize, grad_x = (
        shared.tree_sum, shared.channel_total, shared.channel_sums, shared.store_stats,
        shared.normalize, shared.grad_x)

    @cuda.jit(cache=True)
    def stats(x, st):
        sh = cuda.shared.array(T, float64)
        tid, nt = cuda.threadIdx.x, cuda.blockDim.x
        A, C, B = x.shape
        cnt = A * B
        for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
            s = channel_total(x, c, sh, tid, nt)
            acc = 0.0
            for k in range(tid, cnt, nt):
                a = k // B
                v = float64(x[a, c, k - a * B])
                acc += v * v
            sh[tid] = acc
            cuda.syncthreads()
            q = tree_sum(sh, tid)
            if tid == 0:
                st[0, c] = s
                st[1, c] = q
                st[2, c] = cnt

    @cuda.jit(cache=True)
    def apply(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv,
              st, momentum, eps):
        tid, nt = cuda.threadIdx.x, cuda.blockDim.x
        C = x.shape[1]
        for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
            n = st[2, c]
            mu = st[0, c] / n
            var = max(st[1, c] / n - mu * mu, 0.0)
            inv = 1.0 / math.sqrt(var + eps)
            if tid == 0:
                store_stats(c, mu, var, inv, momentum, mean_in, var_in, mean_out, var_out,
                            saved_mean, saved_inv)
            normalize(x, scale, bias, y, c, mu, inv, tid, nt)

    @cuda.jit(cache=True)
    def grad_local(x, saved_mean, saved_inv, dy, dscale, dbias, red, want_dscale,
                   want_dbias):
        sh = cuda.shared.array(T, float64)
        tid, nt = cuda.threadIdx.x, cuda.blockDim.x
        A, C, B = x.shape
        for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
            sdy, sdyx = channel_sums(x, dy, c, float64(saved_mean[c]), float64(saved_inv[c]),
                                     sh, tid, nt)
            if tid == 0:
                if want_dbias:
                    dbias[c] = sdy
                if want_dscale:
                    dscale[c] = sdyx
                red[0, c] = sdy
                red[1, c] = sdyx
                red[2, c] = A * B

    @cuda.jit(cache=True)
    def grad_dx(x, scale, saved_mean, saved_inv, dy, dx, red):
        tid, nt = cuda.threadIdx.x, cuda.blockDim.x
        C = x.shape[1]
        for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
            grad_x(x, scale, dy, dx, c, float64(saved_mean[c]), float64(saved_inv[c]),
                   red[0, c], red[1, c], red[2, c], tid, nt)

    return gpu_util.Kernels(stats=stats, apply=apply, grad_local=grad_local, grad_dx=grad_dx)


class _HostAllreduce:
    """A thunk step: the device's (3, C) float64 sums to the host, summed over every
    device and rank there, and back."""

    def __init__(self, comm, dev, key):
        self.comm, self.dev, self.key = comm, dev, key
        self.host = np.empty(dev.shape, dev.dtype)

    def __call__(self):
        self.dev.copy_to_host(self.host)
        self.comm.allreduce_((self.host,), self.key)
        self.dev.copy_to_device(self.host)


def _sbn_gpu(cop):
    if bn_uses_global_stats(cop.attrs):
        return batch_norm.bn_gpu(cop)
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    eps, mom = float(cop.attrs["epsilon"]), float(cop.attrs["momentum"])
    comm, key = cop.comm, _bucket("sync_batch_norm", acb[1])

    def bind(ins, outs):
        k = gpu_kernels()
        x = ins["X"][0].reshape(acb)
        st = cuda.device_array((3, acb[1]), np.float64)
        steps = [nn_gpu.channel_launch(k.stats, acb, x, st)]
        if comm is not None:
            steps.append(_HostAllreduce(comm, st, key))
        steps.append(nn_gpu.channel_launch(
            k.apply, acb, x, ins["Scale"][0], ins["Bias"][0], ins["Mean"][0],
            ins["Variance"][0], outs["Y"][0].reshape(acb), outs["MeanOut"][0],
            outs["VarianceOut"][0], outs["SavedMean"][0], outs["SavedVariance"][0], st,
            mom, eps))
        return sequence(steps)
    return bind


def _sbn_grad_gpu(cop):
    if bn_uses_global_stats(cop.attrs):
        return batch_norm.bn_grad_gpu(cop)
    acb = bn_acb(cop.input("X").shape, cop.attrs["data_layout"])
    comm, key = cop.comm, _bucket("sync_batch_norm_grad", acb[1])
    plain = batch_norm.bn_grad_gpu(cop)

    def bind(ins, outs):
        if not outs.get("X@GRAD"):
            return plain(ins, outs)
        k = gpu_kernels()
        x = ins["X"][0].reshape(acb)
        C = acb[1]
        ds = outs["Scale@GRAD"][0] if outs.get("Scale@GRAD") else cuda.device_array(1, x.dtype)
        db = outs["Bias@GRAD"][0] if outs.get("Bias@GRAD") else cuda.device_array(1, x.dtype)
        red = cuda.device_array((3, C), np.float64)
        dy, mean, inv = ins["Y@GRAD"][0].reshape(acb), ins["SavedMean"][0], \
            ins["SavedVariance"][0]
        steps = [nn_gpu.channel_launch(k.grad_local, acb, x, mean, inv, dy, ds, db, red,
                         bool(outs.get("Scale@GRAD")), bool(outs.get("Bias@GRAD")))]
        if comm is not None:
            steps.append(_HostAllreduce(comm, red, key))
        steps.append(nn_gpu.channel_launch(k.grad_dx, acb, x, ins["Scale"][0], mean, inv, dy,
                             outs["X@GRAD"][0].reshape(acb), red))
        return sequence(steps)
    return bind


# ================================================================ registration
def _sbn_grad_rule(g):
    g.append("sync_batch_norm_grad",
             {"X": g.fwd("X"), "Scale": g.fwd("Scale"), "Bias": g.fwd("Bias"),
              "SavedMean": g.fwd("SavedMean"), "SavedVariance": g.fwd("SavedVariance"),
              "Y@GRAD": g.dout("Y")},
             {"X@GRAD": g.dx("X"), "Scale@GRAD": g.dx("Scale"), "Bias@GRAD": g.dx("Bias")},
             dict(g.attrs))


register_op(OpDef(
    "sync_batch_norm",
    (Slot("X"), Slot("Scale"), Slot("Bias"), Slot("Mean", no_grad=True),
     Slot("Variance", no_grad=True)),
    (Slot("Y"), Slot("MeanOut"), Slot("VarianceOut"), Slot("SavedMean"),
     Slot("SavedVariance")),
    bn_infer, _sbn_cpu, gpu=_sbn_gpu, attrs=dict(BN_ATTRS), grad=_sbn_grad_rule,
    inplace={"MeanOut": "Mean", "VarianceOut": "Variance"},
    traits=frozenset((COLLECTIVE,)),
    doc="batch_norm whose batch mean/variance are computed over every device and rank of "
        "a data-parallel run (one allreduce of per-channel sum, sum of squares, count)"))
register_op(OpDef(
    "sync_batch_norm_grad",
    (Slot("X"), Slot("Scale"), Slot("Bias", optional=True), Slot("SavedMean"),
     Slot("SavedVariance"), Slot("Y@GRAD")),
    (Slot("X@GRAD", optional=True), Slot("Scale@GRAD", optional=True),
     Slot("Bias@GRAD", optional=True)),
    bn_grad_infer, _sbn_grad_cpu, gpu=_sbn_grad_gpu, attrs=dict(BN_ATTRS),
    traits=frozenset((NO_GRAD, COLLECTIVE)),
    doc="batch_norm_grad with sum(dY) and sum(dY * xhat) reduced over every device for "
        "X@GRAD; Scale@GRAD and Bias@GRAD are the local sums (the data-parallel rewrite "
        "sums them)"))
