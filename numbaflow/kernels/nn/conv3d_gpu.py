"""CUDA kernels of conv3d and conv3d_grad (conv3d.py's op): direct kernels as conv_gpu.py's
2-D ones, on flat buffers with (n, c, d, h, w) element strides so NCDHW and NDHWC run the
same code.

* forward: thread per Output element, over its group's input channels and the window;
* dInput: thread per Input element, a gather over the output positions whose window covers
  it (z = a*sd - pd + i*dd solved for a), so no two threads write one element;
* dFilter: thread per Filter element, over the batch and the output positions.

Sums accumulate in float64. `geo` is conv3d.geometry's (kd, kh, kw, sd, sh, sw, pd, ph,
pw, dd, dh, dw).
"""
from numba import float64

from ..gpu import gpu_util
from .conv_gpu import launch

cuda = None   # numba.cuda, bound by `kernels()` on first use


@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda

    @cuda.jit(device=True)
    def split(o, shape):
        """(n, c, d, h, w) of element o, row-major over the NCDHW-ordered shape."""
        w = o % shape[4]
        t = o // shape[4]
        h = t % shape[3]
        t //= shape[3]
        d = t % shape[2]
        t //= shape[2]
        return t // shape[1], t % shape[1], d, h, w

    @cuda.jit(device=True)
    def at(s, n, c, d, h, w):
        return n * s[0] + c * s[1] + d * s[2] + h * s[3] + w * s[4]

    @cuda.jit(cache=True)
    def fwd(x, w, out, xshape, oshape, xs, os, groups, geo):
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geo
        C, D, H, W = xshape[1], xshape[2], xshape[3], xshape[4]
        M = oshape[1]
        Cg, Mg = C // groups, M // groups
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            n, m, a, b, e = split(o, oshape)
            c0 = (m // Mg) * Cg
            acc = 0.0
            for cc in range(Cg):
                for i in range(kd):
                    z = a * sd - pd + i * dd
                    if z < 0 or z >= D:
                        continue
                    for j in range(kh):
                        y = b * sh - ph + j * dh
                        if y < 0 or y >= H:
                            continue
                        for l in range(kw):
                            u = e * sw - pw + l * dw
                            if u >= 0 and u < W:
                                acc += float64(x[at(xs, n, c0 + cc, z, y, u)]) * \
                                    float64(w[(((m * Cg + cc) * kd + i) * kh + j) * kw + l])
            out[at(os, n, m, a, b, e)] = acc

    @cuda.jit(cache=True)
    def dinput(w, d, dx, xshape, oshape, xs, os, groups, geo):
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geo
        C = xshape[1]
        OD, OH, OW = oshape[2], oshape[3], oshape[4]
        Cg, Mg = C // groups, oshape[1] // groups
        for o in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
            n, c, z, y, u = split(o, xshape)
            g = c // Cg
            cc = c - g * Cg
            acc = 0.0
            for i in range(kd):
                ta = z + pd - i * dd             # = a * sd for the output planes covering z
                if ta < 0 or ta % sd != 0 or ta // sd >= OD:
                    continue
                for j in range(kh):
                    tb = y + ph - j * dh
                    if tb < 0 or tb % sh != 0 or tb // sh >= OH:
                        continue
                    for l in range(kw):
                        te = u + pw - l * dw
                        if te < 0 or te % sw != 0 or te // sw >= OW:
                            continue
                        for mm in range(Mg):
                            m = g * Mg + mm
                            acc += float64(w[(((m * Cg + cc) * kd + i) * kh + j) * kw + l]) * \
                                float64(d[at(os, n, m, ta // sd, tb // sh, te // sw)])
            dx[at(xs, n, c, z, y, u)] = acc

    @cuda.jit(cache=True)
    def dfilter(x, d, dwt, xshape, oshape, xs, os, groups, geo):
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geo
        N, C, D, H, W = xshape
        M, OD, OH, OW = oshape[1], oshape[2], oshape[3], oshape[4]
        Cg, Mg = C // groups, M // groups
        wshape = (M, Cg, kd, kh, kw)
        for o in range(cuda.grid(1), dwt.size, cuda.gridsize(1)):
            m, cc, i, j, l = split(o, wshape)
            c = (m // Mg) * Cg + cc
            acc = 0.0
            for n in range(N):
                for a in range(OD):
                    z = a * sd - pd + i * dd
                    if z < 0 or z >= D:
                        continue
                    for b in range(OH):
                        y = b * sh - ph + j * dh
                        if y < 0 or y >= H:
                            continue
                        for e in range(OW):
                            u = e * sw - pw + l * dw
                            if u >= 0 and u < W:
                                acc += float64(x[at(xs, n, c, z, y, u)]) * \
                                    float64(d[at(os, n, m, a, b, e)])
            dwt[o] = acc

    return gpu_util.Kernels(fwd=fwd, dinput=dinput, dfilter=dfilter)


def layout(shape, last):
    """(NCDHW-ordered shape, NCDHW-ordered element strides) of a C-contiguous buffer."""
    s = gpu_util.c_strides(shape)
    if last:
        return (shape[0], shape[4], shape[1], shape[2], shape[3]), (s[0], s[4], s[1], s[2], s[3])
    return tuple(shape), tuple(s)


def _args(x, out, last):
    (xshape, xs), (oshape, os) = layout(x.shape, last), layout(out.shape, last)
    return xshape, oshape, xs, os


def forward(last, groups, geo):
    """The gpu factory body of conv3d."""
    def bind(ins, outs):
        x, w, out, f = ins["Input"][0], ins["Filter"][0], outs["Output"][0], gpu_util.flat
        return launch(kernels().fwd, out.size, f(x), f(w), f(out), *_args(x, out, last),
                      groups, geo)
    return bind


def backward(last, groups, geo):
    """The gpu factory body of conv3d_grad (either output may be absent)."""
    def bind(ins, outs):
        x, w, d, f = ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0], gpu_util.flat
        args = _args(x, d, last) + (groups, geo)
        calls = []
        if outs.get("Input@GRAD"):
            dx = outs["Input@GRAD"][0]
            calls.append(launch(kernels().dinput, dx.size, f(w), f(d), f(dx), *args))
        if outs.get("Filter@GRAD"):
            dw = outs["Filter@GRAD"][0]
            calls.append(launch(kernels().dfilter, dw.size, f(x), f(d), f(dw), *args))
        return gpu_util.sequence(calls)
    return bind
