"""CUDA kernels of batch_norm, dropout and lookup_table_v2, and their gradients.

* batch_norm: one block per channel (blocks stride over channels). The block's threads
  sum x (then (x - mean)^2: the CPU kernel's two passes) over the channel's A*B elements
  and combine the per-thread partials with a shared-memory tree in float64; thread 0
  writes the channel's statistics (reading the running Mean/Variance before writing
  MeanOut/VarianceOut, which may be the same buffers), then all threads write Y.
  batch_norm_grad: the same shape, two trees (sum dY, sum dY * xhat), then dX.
* dropout: the uniform numbers are drawn on the *host* from the very numpy Generator
  stream the CPU kernel uses (dropout.UniformDraws) and copied to the device each run;
  this is the one documented exception to "data never leaves the device inside a
  thunk": it makes CPU and GPU runs with one seed draw the same mask. The mask and Out
  are computed by a flat kernel.
* lookup_table_v2: one thread per Out element; the grad one thread per (vocab row, dim)
  looping over all ids in order, so it is deterministic and needs no atomics. A kernel
  cannot raise: ids outside [0, vocab) give zero rows and no gradient, and go into the
  device's error record, which the executor raises as the CPU kernel's ValueError.

Kernels are built lazily, next to the tree device function they call (see gpu_util on
why, under the simulator).
"""
import functools
import math

import numpy as np
from numba import float64

from ..gpu import gpu_errors, gpu_util
from .conv_gpu import launch

cuda = None   # numba.cuda, bound by `kernels()` on first use

T = gpu_util.RED_THREADS    # most threads per block of the per-channel kernels (power of 2)
MAX_CHANNEL_BLOCKS = 4096


@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    tree, SUM = gpu_util.common().tree, gpu_util.SUM     # the one block reduction

    @cuda.jit(device=True)
    def tree_sum(sh, tid):
        """Sum sh[0:blockDim] into sh[0] and return it to every thread (sh is free after)."""
        return tree(sh, tid, SUM)

    # ------------------------------------------------------------ batch_norm
    # The per-channel pieces that batch_norm's kernels and sync_batch_norm's (sync_bn.py)
    # share: one block handles channel c of the (A, C, B) view.
    @cuda.jit(device=True)
    def channel_total(x, c, sh, tid, nt):
        """The sum of channel c of x (every thread gets it)."""
        A, C, B = x.shape
        acc = 0.0
        for k in range(tid, A * B, nt):
            a = k // B
            acc += float64(x[a, c, k - a * B])
        sh[tid] = acc
        cuda.syncthreads()
        return tree_sum(sh, tid)

    @cuda.jit(device=True)
    def channel_sums(x, dy, c, mu, inv, sh, tid, nt):
        """(sum dY, sum dY * xhat) over channel c (every thread gets them)."""
        A, C, B = x.shape
        sdy = channel_total(dy, c, sh, tid, nt)
        acc = 0.0
        for k in range(tid, A * B, nt):
            a = k // B
            b = k - a * B
            acc += float64(dy[a, c, b]) * (float64(x[a, c, b]) - mu) * inv
        sh[tid] = acc
        cuda.syncthreads()
        return sdy, tree_sum(sh, tid)

    @cuda.jit(device=True)
    def store_stats(c, mu, var, inv, momentum, mean_in, var_in, mean_out, var_out, saved_mean,
                    saved_inv):
        """Channel c's running statistics (momentum-averaged; in place is safe: the one
        reader of mean_in / var_in) and its saved mean and 1 / std."""
        mean_out[c] = momentum * float64(mean_in[c]) + (1.0 - momentum) * mu
        var_out[c] = momentum * float64(var_in[c]) + (1.0 - momentum) * var
        saved_mean[c] = mu
        saved_inv[c] = inv

    @cuda.jit(device=True)
    def normalize(x, scale, bias, y, c, mu, inv, tid, nt):
        """Y = (X - mu) * inv * Scale + Bias over channel c."""
        A, C, B = x.shape
        kk = float64(scale[c]) * inv
        bc = float64(bias[c])
        for k in range(tid, A * B, nt):
            a = k // B
            b = k - a * B
            y[a, c, b] = (float64(x[a, c, b]) - mu) * kk + bc

    @cuda.jit(device=True)
    def grad_x(x, scale, dy, dx, c, mu, inv, sdy, sdyx, n, tid, nt):
        """dX = Scale * inv * (dY - (sum dY + xhat * sum dY xhat) / n) over channel c."""
        A, C, B = x.shape
        kk = float64(scale[c]) * inv
        for k in range(tid, A * B, nt):
            a = k // B
            b = k - a * B
            xhat = (float64(x[a, c, b]) - mu) * inv
            dx[a, c, b] = kk * (float64(dy[a, c, b]) - (sdy + xhat * sdyx) / n)

    @cuda.jit(cache=True)
    def bn_fwd(x, scale, bias, mean_in, var_in, y, mean_out, var_out, saved_mean, saved_inv,
               momentum, eps, use_global):
        sh = cuda.shared.array(T, float64)
        tid, nt = cuda.threadIdx.x, cuda.blockDim.x
        A, C, B = x.shape
        cnt = A * B
        for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
            if use_global:
                mu = float64(mean_in[c])
                var = float64(var_in[c])
            else:
                mu = channel_total(x, c, sh, tid, nt) / cnt
                acc = 0.0
                for k in range(tid, cnt, nt):
                    a = k // B
                    dv = float64(x[a, c, k - a * B]) - mu
                    acc += dv * dv
                sh[tid] = acc
                cuda.syncthreads()
                var = tree_sum(sh, tid) / cnt        # biased, as Paddle
            inv = 1.0 / math.sqrt(var + eps)
            if tid == 0 and use_global:
                mean_out[c] = mean_in[c]
                var_out[c] = var_in[c]
                saved_mean[c] = mu
                saved_inv[c] = inv
            elif tid == 0:
                store_stats(c, mu, var, inv, momentum, mean_in, var_in, mean_out, var_out,
                            saved_mean, saved_inv)
            normalize(x, scale, bias, y, c, mu, inv, tid, nt)

    @cuda.jit(cache=True)
    def bn_bwd(x, scale, saved_mean, saved_inv, dy, dx, dscale, dbias, use_global,
               want_dx, want_dscale, want_dbias):
        sh = cuda.shared.array(T, float64)
        tid, nt = cuda.threadIdx.x, cuda.blockDim.x
        A, C, B = x.shape
        for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
            mu, inv = float64(saved_mean[c]), float64(saved_inv[c])
            sdy, sdyx = channel_sums(x, dy, c, mu, inv, sh, tid, nt)
            if tid == 0:
                if want_dbias:
                    dbias[c] = sdy
                if want_dscale:
                    dscale[c] = sdyx
            if want_dx:
                if use_global:          # statistics are constants: dX = Scale * inv * dY
                    grad_x(x, scale, dy, dx, c, mu, inv, 0.0, 0.0, 1.0, tid, nt)
                else:
                    grad_x(x, scale, dy, dx, c, mu, inv, sdy, sdyx, float64(A * B), tid, nt)

    # ------------------------------------------------------------ dropout
    @cuda.jit(cache=True)
    def dropout_train(x, u, mask, out, p, keep_scale):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            if u[i] < p:
                mask[i] = 0
                out[i] = 0.0
            else:
                mask[i] = 1
                out[i] = float64(x[i]) * keep_scale

    @cuda.jit(cache=True)
    def dropout_test(x, mask, out, factor):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            mask[i] = 1
            out[i] = float64(x[i]) * factor

    @cuda.jit(cache=True)
    def dropout_bwd(mask, dout, dx, factor):
        for i in range(cuda.grid(1), dx.shape[0], cuda.gridsize(1)):
            dx[i] = float64(dout[i]) * factor if mask[i] else 0.0

    # ------------------------------------------------------------ lookup_table_v2
    @cuda.jit(cache=True)
    def lookup_fwd(w, ids, out, padding_idx, err):
        V, D = w.shape
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            i = o // D
            j = o - i * D
            k = ids[i]
            # padding rows are zero; so are out-of-range ids, which go into the record
            if (k < 0 or k >= V) and (k != padding_idx or padding_idx == -1):
                out[i, j] = 0.0
                if cuda.atomic.compare_and_swap(err, 0, gpu_errors.ERR_LOOKUP) == 0:
                    err[1], err[2], err[3] = k, i, V
            elif k == padding_idx and padding_idx != -1:
                out[i, j] = 0.0
            else:
                out[i, j] = w[k, j]

    @cuda.jit(cache=True)
    def lookup_bwd(ids, dout, dw, padding_idx, err):
        V, D = dw.shape
        for i in range(cuda.grid(1), ids.shape[0], cuda.gridsize(1)):
            k = ids[i]
            if (k < 0 or k >= V) and (k != padding_idx or padding_idx == -1):
                if cuda.atomic.compare_and_swap(err, 0, gpu_errors.ERR_LOOKUP_GRAD) == 0:
                    err[1], err[2], err[3] = k, i, V
        for o in range(cuda.grid(1), dw.size, cuda.gridsize(1)):
            r = o // D
            j = o - r * D
            acc = 0.0
            if r != padding_idx or padding_idx == -1:
                for i in range(ids.shape[0]):     # in id order: deterministic
                    if ids[i] == r:
                        acc += float64(dout[i, j])
            dw[r, j] = acc

    return gpu_util.Kernels(tree_sum=tree_sum, channel_total=channel_total,
                        channel_sums=channel_sums, store_stats=store_stats, normalize=normalize,
                        grad_x=grad_x, bn_fwd=bn_fwd, bn_bwd=bn_bwd,
                        dropout_train=dropout_train, dropout_test=dropout_test,
                        dropout_bwd=dropout_bwd, lookup_fwd=lookup_fwd, lookup_bwd=lookup_bwd)


def channel_launch(kernel, acb, *args):
    """A thunk launching `kernel` with one block per channel of the (A, C, B) view `acb`
    (blocks stride over the channels past MAX_CHANNEL_BLOCKS): a power-of-two block of at
    most T threads, no more than a channel's A*B elements need. batch_norm's and
    sync_batch_norm's kernels (sync_bn.py) all launch this way."""
    blocks = max(1, min(MAX_CHANNEL_BLOCKS, acb[1]))
    threads = min(T, max(gpu_util.MIN_ROW_THREADS,
                         1 << max(0, acb[0] * acb[2] - 1).bit_length()))
    return functools.partial(gpu_util.configured(kernel, blocks, threads), *args)


# ---------------------------------------------------------------- batch_norm
def bn_forward(acb, use_global, momentum, eps):
    """The gpu factory body of batch_norm on the (A, C, B) view `acb` of X."""
    def bind(ins, outs):
        return channel_launch(
            kernels().bn_fwd, acb, ins["X"][0].reshape(acb), ins["Scale"][0],
            ins["Bias"][0], ins["Mean"][0], ins["Variance"][0], outs["Y"][0].reshape(acb),
            outs["MeanOut"][0], outs["VarianceOut"][0], outs["SavedMean"][0],
            outs["SavedVariance"][0], momentum, eps, use_global)
    return bind


def bn_backward(acb, use_global):
    """The gpu factory body of batch_norm_grad (any of its outputs may be absent)."""
    def bind(ins, outs):
        from numba import cuda
        x = ins["X"][0].reshape(acb)
        # absent outputs get tiny placeholders the kernel does not write
        dx = outs["X@GRAD"][0].reshape(acb) if outs.get("X@GRAD") else \
            cuda.device_array((1, 1, 1), x.dtype)
        ds = outs["Scale@GRAD"][0] if outs.get("Scale@GRAD") else cuda.device_array(1, x.dtype)
        db = outs["Bias@GRAD"][0] if outs.get("Bias@GRAD") else cuda.device_array(1, x.dtype)
        return channel_launch(
            kernels().bn_bwd, acb, x, ins["Scale"][0], ins["SavedMean"][0],
            ins["SavedVariance"][0], ins["Y@GRAD"][0].reshape(acb), dx, ds, db, use_global,
            bool(outs.get("X@GRAD")), bool(outs.get("Scale@GRAD")),
            bool(outs.get("Bias@GRAD")))
    return bind


# ---------------------------------------------------------------- dropout
class DropoutRun:
    """The bound training thunk: host uniform draws (the CPU kernel's stream, see the
    module doc) copied into a bind-time device buffer, then the mask kernel."""

    def __init__(self, draws, x, mask, out, p, keep_scale):
        from numba import cuda
        self.draws = draws                  # dropout.UniformDraws: the host stream
        self.u = cuda.device_array(draws.u.shape, np.float64)
        self.kernel = launch(kernels().dropout_train, x.size, gpu_util.flat(x), self.u,
                             gpu_util.flat(mask), gpu_util.flat(out), p, keep_scale)

    def __call__(self):
        self.u.copy_to_device(self.draws())
        self.kernel()


def dropout_test(x, mask, out, factor):
    return launch(kernels().dropout_test, x.size, gpu_util.flat(x), gpu_util.flat(mask),
                  gpu_util.flat(out), factor)


def dropout_grad(mask, dout, dx, factor):
    return launch(kernels().dropout_bwd, dx.size, gpu_util.flat(mask), gpu_util.flat(dout),
                  gpu_util.flat(dx), factor)


# ---------------------------------------------------------------- lookup_table_v2
def lookup_forward(pad):
    def bind(ins, outs):
        w, ids, out = ins["W"][0], ins["Ids"][0], outs["Out"][0]
        return launch(kernels().lookup_fwd, out.size, w, gpu_util.flat(ids),
                      out.reshape(ids.size, w.shape[1]), pad, gpu_errors.error_record())
    return bind


def lookup_backward(pad):
    def bind(ins, outs):
        ids, dw = ins["Ids"][0], outs["W@GRAD"][0]
        return launch(kernels().lookup_bwd, max(dw.size, ids.size), gpu_util.flat(ids),
                      ins["Out@GRAD"][0].reshape(ids.size, dw.shape[1]), dw, pad,
                      gpu_errors.error_record())
    return bind
