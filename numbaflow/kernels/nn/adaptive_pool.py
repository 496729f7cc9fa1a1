"""The kernels of `pool2d` with `adaptive=True` (the OpDef is pool.py's; it binds these).

Paddle's adaptive bins (paddle/phi/kernels/funcs/pooling.h, AdaptStartIndex /
AdaptEndIndex): output cell i of an axis of input size H and output size OH covers
[floor(i * H / OH), ceil((i + 1) * H / OH)). `ksize` is the output size; strides,
paddings and ceil_mode are ignored. Avg divides by the bin's size; max gives the gradient
to the bin's *first* maximum in row-major order (as the non-adaptive kernels).

The CPU kernels run on (N, C, H, W) views (NHWC inputs are transposed views); the CUDA
kernels read flat buffers with (n, c, h, w) element strides, as conv_gpu's pool kernels:
forward is a thread per Out element, backward a thread per X element gathering over the
(at most two per axis, when bins overlap) bins that contain it.
"""
import functools

from numba import float64, njit

from ..gpu import gpu_util
from .conv_gpu import launch as _launch, split_nchw

cuda = None   # numba.cuda, bound by `kernels()` on first use


@njit(nogil=True, cache=True, inline="always")
def _bin(o, size, osize):
    return (o * size) // osize, -((-(o + 1) * size) // osize)


@njit(nogil=True, cache=True, error_model="numpy")
def adaptive_fwd(x, out, is_max):
    N, C, H, W = x.shape
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                hs, he = _bin(oh, H, OH)
                for ow in range(OW):
                    ws, we = _bin(ow, W, OW)
                    if is_max:
                        m = x[n, c, hs, ws]
                        for h in range(hs, he):
                            for w in range(ws, we):
                                m = max(m, x[n, c, h, w])
                        out[n, c, oh, ow] = m
                    else:
                        s = 0.0
                        for h in range(hs, he):
                            for w in range(ws, we):
                                s += x[n, c, h, w]
                        out[n, c, oh, ow] = s / ((he - hs) * (we - ws))


@njit(nogil=True, cache=True, error_model="numpy")
def adaptive_bwd(x, out, dout, dx, is_max):
    N, C, H, W = x.shape
    OH, OW = out.shape[2], out.shape[3]
    for n in range(N):
        for c in range(C):
            for h in range(H):
                for w in range(W):
                    dx[n, c, h, w] = 0.0
            for oh in range(OH):
                hs, he = _bin(oh, H, OH)
                for ow in range(OW):
                    ws, we = _bin(ow, W, OW)
                    d = dout[n, c, oh, ow]
                    if is_max:
                        m, done = out[n, c, oh, ow], False
                        for h in range(hs, he):
                            for w in range(ws, we):
                                if x[n, c, h, w] == m:
                                    dx[n, c, h, w] += d
                                    done = True
                                    break
                            if done:
                                break
                    else:
                        g = d / ((he - hs) * (we - ws))
                        for h in range(hs, he):
                            for w in range(ws, we):
                                dx[n, c, h, w] += g


def _nchw(a, nhwc):
    return a.transpose(0, 3, 1, 2) if nhwc else a


def cpu_forward(nhwc, is_max):
    def bind(ins, outs):
        return functools.partial(adaptive_fwd, _nchw(ins["X"][0], nhwc),
                                 _nchw(outs["Out"][0], nhwc), is_max)
    return bind


def cpu_backward(nhwc, is_max):
    def bind(ins, outs):
        v = [_nchw(ins[s][0], nhwc) for s in ("X", "Out", "Out@GRAD")]
        return functools.partial(adaptive_bwd, *v, _nchw(outs["X@GRAD"][0], nhwc), is_max)
    return bind


# ---------------------------------------------------------------- CUDA
@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda
    nchw = cuda.jit(device=True)(split_nchw)

    @cuda.jit(device=True)
    def dbin(o, size, osize):
        return (o * size) // osize, -((-(o + 1) * size) // osize)

    @cuda.jit(cache=True)
    def fwd(x, out, shape, oshape, xs, os, is_max):
        N, C, H, W = shape
        OH, OW = oshape[2], oshape[3]
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            n, c, oh, ow = nchw(o, C, OH, OW)
            base = n * xs[0] + c * xs[1]
            oi = n * os[0] + c * os[1] + oh * os[2] + ow * os[3]
            hs, he = dbin(oh, H, OH)
            ws, we = dbin(ow, W, OW)
            if is_max:
                m = x[base + hs * xs[2] + ws * xs[3]]
                for h in range(hs, he):
                    for w in range(ws, we):
                        v = x[base + h * xs[2] + w * xs[3]]
                        m = v if v > m else m
                out[oi] = m
            else:
                s = 0.0
                for h in range(hs, he):
                    for w in range(ws, we):
                        s += float64(x[base + h * xs[2] + w * xs[3]])
                out[oi] = s / ((he - hs) * (we - ws))

    @cuda.jit(cache=True)
    def bwd(x, out, dout, dx, shape, oshape, xs, os, is_max):
        N, C, H, W = shape
        OH, OW = oshape[2], oshape[3]
        for o in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
            n, c, h_, w_ = nchw(o, C, H, W)
            base = n * xs[0] + c * xs[1]
            obase = n * os[0] + c * os[1]
            xi = base + h_ * xs[2] + w_ * xs[3]
            xv = x[xi]
            acc = 0.0
            # bins containing h_: floor(h_ * OH / H) <= oh <= ceil((h_ + 1) * OH / H) - 1
            for oh in range((h_ * OH) // H, min(OH, -((-(h_ + 1) * OH) // H))):
                hs, he = dbin(oh, H, OH)
                if h_ < hs or h_ >= he:
                    continue
                for ow in range((w_ * OW) // W, min(OW, -((-(w_ + 1) * OW) // W))):
                    ws, we = dbin(ow, W, OW)
                    if w_ < ws or w_ >= we:
                        continue
                    oi = obase + oh * os[2] + ow * os[3]
                    if is_max:
                        m = out[oi]
                        if xv != m:
                            continue
                        first = True            # no earlier element of the bin == m
                        for h in range(hs, h_ + 1):
                            for w in range(ws, we if h < h_ else w_):
                                if x[base + h * xs[2] + w * xs[3]] == m:
                                    first = False
                                    break
                            if not first:
                                break
                        if first:
                            acc += float64(dout[oi])
                    else:
                        acc += float64(dout[oi]) / ((he - hs) * (we - ws))
            dx[xi] = acc

    return gpu_util.Kernels(fwd=fwd, bwd=bwd)


def _geometry(x, out, nhwc):
    def nchw(s):
        return (s[0], s[3], s[1], s[2]) if nhwc else tuple(s)
    xs, os = gpu_util.c_strides(x.shape), gpu_util.c_strides(out.shape)
    return nchw(x.shape), nchw(out.shape), nchw(xs), nchw(os)


def gpu_forward(nhwc, is_max):
    def bind(ins, outs):
        x, out = ins["X"][0], outs["Out"][0]
        f = gpu_util.flat
        return _launch(kernels().fwd, out.size, f(x), f(out), *_geometry(x, out, nhwc), is_max)
    return bind


def gpu_backward(nhwc, is_max):
    def bind(ins, outs):
        x, out, d, dx = ins["X"][0], ins["Out"][0], ins["Out@GRAD"][0], outs["X@GRAD"][0]
        f = gpu_util.flat
        return _launch(kernels().bwd, dx.size, f(x), f(out), f(d), f(dx),
                       *_geometry(x, out, nhwc), is_max)
    return bind
