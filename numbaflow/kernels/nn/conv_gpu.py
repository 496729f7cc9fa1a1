"""CUDA kernels of conv2d / depthwise_conv2d and pool2d, and their gradients: direct
kernels, one thread per output element (correctness first; no im2col, no shared-memory
tiling yet).

* conv forward: thread per Output element, looping over its group's input channels and
  the (dilated) window. depthwise_conv2d is the same kernel with groups == channels.
* conv dInput: thread per Input element, a *gather* over the output positions whose
  window covers it (ih = oh*sh - pt + i*dh solved for oh), so no two threads write the
  same element and no atomics are needed.
* conv dFilter: thread per Filter element, looping over batch and output positions.
* `fuse_relu_before_depthwise_conv`: relu(Input) is read inside the kernels, and dInput
  is masked by Input > 0, as the CPU kernel.
* pool2d: thread per Out element (the CPU kernel's window rules: clipped windows, empty
  windows output 0); pool2d_grad: thread per X element, a gather over the windows that
  contain it; max pooling gives the gradient to the window's *first* maximum in row-major
  order (the element checks that no earlier element of the window equals Out).
  NHWC runs the same loops with NHWC element strides.

All sums accumulate in float64 (the CPU kernels accumulate in float64 or BLAS's dtype).
Like gpu_util, nothing imports numba.cuda before a kernel is first needed, and the
kernels are built in one lazy builder that binds `cuda` as a module global (see gpu_util
for why, under the simulator).
"""
import functools
import math

from numba import float64

from ..gpu import gpu_util

cuda = None   # numba.cuda, bound by `kernels()` on first use


def dims(n):
    """(blocks, threads) of a grid-stride loop over n items: gpu_util.launch_dims with no
    more threads per block than n needs (rounded to a warp), which matters to the simulator
    and costs nothing on hardware."""
    return gpu_util.launch_dims(n, min(gpu_util.THREADS, max(32, -(-n // 32) * 32)))


def split_nchw(o, C, H, W):
    """(n, c, h, w) of element o of a row-major [N, C, H, W]: a CUDA device function in
    the kernel builders that index by position (`cuda.jit(device=True)(split_nchw)`)."""
    w = o % W
    t = o // W
    h = t % H
    t //= H
    return t // C, t % C, h, w


def launch(kernel, n, *args):
    """A thunk launching the grid-stride `kernel` over n items with `args`."""
    return functools.partial(kernel[dims(n)], *args)


@gpu_util.lazy
def kernels():
    global cuda
    from numba import cuda
    nchw = cuda.jit(device=True)(split_nchw)

    # ------------------------------------------------------------ convolution
    # x / w / out are flat; xshape, oshape are the (n, c, d, h, w) shapes of the input-
    # and output-shaped buffers and xs, os their element strides (2-D: d == 1; NDHWC and
    # NCDHW run the same code); w is [M, C / groups, kd, kh, kw]; geo = conv_geometry's.
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
    def conv_fwd(x, w, out, xshape, oshape, xs, os, groups, geo, relu, mul, add, epi, act):
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geo
        C, D, H, W = xshape[1], xshape[2], xshape[3], xshape[4]
        Cg, Mg = C // groups, oshape[1] // groups
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
                                v = float64(x[at(xs, n, c0 + cc, z, y, u)])
                                if relu and not v > 0:
                                    v = 0.0
                                acc += v * float64(w[(((m * Cg + cc) * kd + i) * kh + j) * kw + l])
            if epi == 2:            # the epilogue: conv.epilogue's modes
                acc = acc * float64(mul[m])
            if epi > 0:
                acc += float64(add[m])
            if act and not acc > 0:
                acc = 0.0
            out[at(os, n, m, a, b, e)] = acc

    @cuda.jit(cache=True)
    def conv_dinput(x, w, d, dx, xshape, oshape, xs, os, groups, geo, relu, fwd_out, act):
        # a gather over the output positions whose window covers the element
        kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geo
        OD, OH, OW = oshape[2], oshape[3], oshape[4]
        Cg, Mg = xshape[1] // groups, oshape[1] // groups
        for o in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
            n, c, z, y, u = split(o, xshape)
            xi = at(xs, n, c, z, y, u)
            if relu and not x[xi] > 0:
                dx[xi] = 0.0
                continue
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
                            oi = at(os, n, m, ta // sd, tb // sh, te // sw)
                            if not act or fwd_out[oi] > 0:     # act: relu's mask
                                acc += float64(w[(((m * Cg + cc) * kd + i) * kh + j) * kw + l]) * \
                                    float64(d[oi])
            dx[xi] = acc

    @cuda.jit(cache=True)
    def conv_dfilter(x, d, dwt, xshape, oshape, xs, os, groups, geo, relu, fwd_out, act):
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
                            oi = at(os, n, m, a, b, e)
                            if u >= 0 and u < W and (not act or fwd_out[oi] > 0):
                                v = float64(x[at(xs, n, c, z, y, u)])
                                if relu and not v > 0:
                                    v = 0.0
                                acc += v * float64(d[oi])
            dwt[o] = acc

    @cuda.jit(cache=True)
    def conv_dbias(d, fwd_out, db, act):
        # thread per channel: the sum over N, OH, OW of dOut (masked by o > 0 with act)
        N, M, OH, OW = d.shape
        for m in range(cuda.grid(1), M, cuda.gridsize(1)):
            acc = 0.0
            for n in range(N):
                for oh in range(OH):
                    for ow in range(OW):
                        if not act or fwd_out[n, m, oh, ow] > 0:
                            acc += float64(d[n, m, oh, ow])
            db[m] = acc

    @cuda.jit(cache=True)
    def bn_fold(scale, shift, mean, var, bias, has_bias, eps, mul, add):
        # thread per channel: batch_norm(conv + bias) = conv * mul + add
        for m in range(cuda.grid(1), mul.size, cuda.gridsize(1)):
            r = float64(scale[m]) / math.sqrt(float64(var[m]) + eps)
            b = float64(bias[m]) if has_bias else 0.0
            mul[m] = r
            add[m] = (b - float64(mean[m])) * r + float64(shift[m])

    # ------------------------------------------------------------ pooling
    # x / out / dout / dx are flat; xs, os are the (n, c, h, w) element strides of the
    # input- and output-shaped buffers (NCHW or NHWC); g = (kh, kw, sh, sw, pt, pb, pl, pr)
    @cuda.jit(cache=True)
    def pool_fwd(x, out, shape, oshape, xs, os, g, is_max, exclusive):
        N, C, H, W = shape
        OH, OW = oshape[2], oshape[3]
        kh, kw, sh, sw, pt, pb, pl, pr = g
        for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            n, c, oh, ow = nchw(o, C, OH, OW)
            base = n * xs[0] + c * xs[1]
            oi = n * os[0] + c * os[1] + oh * os[2] + ow * os[3]
            h0 = oh * sh - pt
            h1 = min(h0 + kh, H + pb)
            hs, he = max(h0, 0), min(h1, H)
            w0 = ow * sw - pl
            w1 = min(w0 + kw, W + pr)
            ws, we = max(w0, 0), min(w1, W)
            if he <= hs or we <= ws:               # window entirely in the padding
                out[oi] = 0.0
            elif is_max:
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
                size = (he - hs) * (we - ws) if exclusive else (h1 - h0) * (w1 - w0)
                out[oi] = s / size

    @cuda.jit(cache=True)
    def pool_bwd(x, out, dout, dx, shape, oshape, xs, os, g, is_max, exclusive):
        N, C, H, W = shape
        OH, OW = oshape[2], oshape[3]
        kh, kw, sh, sw, pt, pb, pl, pr = g
        for o in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
            n, c, h_, w_ = nchw(o, C, H, W)
            base = n * xs[0] + c * xs[1]
            obase = n * os[0] + c * os[1]
            xi = base + h_ * xs[2] + w_ * xs[3]
            xv = x[xi]
            # windows covering h_: oh*sh - pt <= h_ < oh*sh - pt + kh (h_ < H <= H + pb)
            t_h, t_w = h_ + pt - kh + 1, w_ + pl - kw + 1
            oh_lo = 0 if t_h <= 0 else (t_h + sh - 1) // sh
            ow_lo = 0 if t_w <= 0 else (t_w + sw - 1) // sw
            oh_hi = min(OH - 1, (h_ + pt) // sh)
            ow_hi = min(OW - 1, (w_ + pl) // sw)
            acc = 0.0
            for oh in range(oh_lo, oh_hi + 1):
                h0 = oh * sh - pt
                h1 = min(h0 + kh, H + pb)
                hs, he = max(h0, 0), min(h1, H)
                for ow in range(ow_lo, ow_hi + 1):
                    w0 = ow * sw - pl
                    w1 = min(w0 + kw, W + pr)
                    ws, we = max(w0, 0), min(w1, W)
                    oi = obase + oh * os[2] + ow * os[3]
                    if is_max:
                        m = out[oi]
                        if xv != m:
                            continue
                        first = True            # no earlier element of the window == m
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
                        size = (he - hs) * (we - ws) if exclusive else (h1 - h0) * (w1 - w0)
                        acc += float64(dout[oi]) / size
            dx[xi] = acc

    return gpu_util.Kernels(conv_fwd=conv_fwd, conv_dinput=conv_dinput, conv_dfilter=conv_dfilter,
                            conv_dbias=conv_dbias, bn_fold=bn_fold,
                            pool_fwd=pool_fwd, pool_bwd=pool_bwd)


# ---------------------------------------------------------------- factories
def layout(shape, last):
    """(NCDHW-ordered shape, NCDHW-ordered element strides) of a C-contiguous buffer of a
    4-D or 5-D shape (`last`: channels last); a 4-D one has depth 1 (stride 0)."""
    s = gpu_util.c_strides(shape)
    order = (0, len(shape) - 1, *range(1, len(shape) - 1)) if last else range(len(shape))
    shape, s = [shape[i] for i in order], [s[i] for i in order]
    if len(shape) == 4:
        shape.insert(2, 1)
        s.insert(2, 0)
    return tuple(shape), tuple(s)


def conv_frame(x_shape, w_shape, out_shape, last=False):
    """The conv kernels' (xshape, oshape, xs, os, groups) for an input-shaped buffer, a
    filter [M, C / groups, ...] and an output-shaped buffer."""
    (xshape, xs), (oshape, os) = layout(x_shape, last), layout(out_shape, last)
    return xshape, oshape, xs, os, xshape[1] // w_shape[1]


def conv_geometry(kernel, strides, pads, dilations):
    """The kernels' 12 window ints (kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw) from
    the 2 or 3 per-dimension ones (paddings: those before each dimension)."""
    lead = (1,) * (3 - len(kernel))
    return (*lead, *kernel, *lead, *strides, *(0,) * len(lead), *pads, *lead, *dilations)


def _geo(k):
    return conv_geometry((k["kh"], k["kw"]), (k["sh"], k["sw"]), (k["pt"], k["pl"]),
                         (k["dh"], k["dw"]))


def conv_forward(k, relu_in, epilogue=None, last=False):
    """The gpu factory body of conv2d / depthwise_conv2d / conv3d; k is conv.geometry(cop)
    or conv3d's 12 window ints, `last` channels last. `epilogue(ins, (mul, add, epi, act)
    -> launch) -> [launches]`: fused_conv2d's (conv_fused.py), which binds the per-channel
    arrays; without one, Filter stands in for the unused arrays."""
    geo = k if isinstance(k, tuple) else _geo(k)

    def bind(ins, outs):
        x, w, out, f = ins["Input"][0], ins["Filter"][0], outs["Output"][0], gpu_util.flat
        frame = conv_frame(x.shape, w.shape, out.shape, last)

        def conv(mul, add, epi, act):
            return launch(kernels().conv_fwd, out.size, f(x), f(w), f(out), *frame, geo,
                          relu_in, mul, add, epi, act)
        if epilogue is None:
            return conv(f(w), f(w), 0, False)
        return gpu_util.sequence(epilogue(ins, conv))
    return bind


def conv_backward(k, relu_in, out=None, act=False, last=False):
    """The gpu factory body of conv2d_grad / depthwise_conv2d_grad / conv3d_grad (either
    output may be absent), and of fused_conv2d_grad: `out`, the input slot holding Output
    (read with `act`, relu); Bias@GRAD when bound."""
    geo = k if isinstance(k, tuple) else _geo(k)

    def bind(ins, outs):
        x, w, d, f = ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0], gpu_util.flat
        o = ins[out][0] if act else d          # d stands in when there is no relu mask
        args = conv_frame(x.shape, w.shape, d.shape, last) + (geo, relu_in, f(o), act)
        calls = []
        if outs.get("Input@GRAD"):
            dx = outs["Input@GRAD"][0]
            calls.append(launch(kernels().conv_dinput, dx.size, f(x), f(w), f(d), f(dx), *args))
        if outs.get("Filter@GRAD"):
            dw = outs["Filter@GRAD"][0]
            calls.append(launch(kernels().conv_dfilter, dw.size, f(x), f(d), f(dw), *args))
        if outs.get("Bias@GRAD"):
            db = outs["Bias@GRAD"][0]
            calls.append(launch(kernels().conv_dbias, db.size, d, o, db, act))
        return gpu_util.sequence(calls)
    return bind


def _strides(shape, nhwc):
    """Element strides of a C-contiguous buffer of `shape`, in (n, c, h, w) order."""
    s = gpu_util.c_strides(shape)
    return (s[0], s[3], s[1], s[2]) if nhwc else tuple(s)


def _nchw_shape(shape, nhwc):
    return (shape[0], shape[3], shape[1], shape[2]) if nhwc else tuple(shape)


def pool_forward(geo, nhwc, is_max, exclusive):
    """The gpu factory body of pool2d; geo = (kh, kw, sh, sw, pt, pb, pl, pr)."""
    def bind(ins, outs):
        x, out = ins["X"][0], outs["Out"][0]
        return launch(kernels().pool_fwd, out.size, gpu_util.flat(x), gpu_util.flat(out),
                      _nchw_shape(x.shape, nhwc), _nchw_shape(out.shape, nhwc),
                      _strides(x.shape, nhwc), _strides(out.shape, nhwc), geo, is_max,
                      exclusive)
    return bind


def pool_backward(geo, nhwc, is_max, exclusive):
    """The gpu factory body of pool2d_grad."""
    def bind(ins, outs):
        x, out, d, dx = ins["X"][0], ins["Out"][0], ins["Out@GRAD"][0], outs["X@GRAD"][0]
        f = gpu_util.flat
        return launch(kernels().pool_bwd, dx.size, f(x), f(out), f(d), f(dx),
                      _nchw_shape(x.shape, nhwc), _nchw_shape(out.shape, nhwc),
                      _strides(x.shape, nhwc), _strides(out.shape, nhwc), geo, is_max,
                      exclusive)
    return bind
