"""`conv2d_transpose` (Paddle's op: Input NCHW, Filter [C_in, C_out / groups, kh, kw]) and
its gradient, run on conv2d's kernels rather than new arithmetic.

A transposed convolution is the adjoint of the convolution y = conv2d(o, W) that maps an
(N, C_out, OH, OW) tensor o to the (N, C_in, H, W) input x with the same strides, paddings,
dilations, groups and W read as conv2d's [M = C_in, C_in/groups = C_out/groups, kh, kw]
filter. So, with that conv2d (`_adjoint`, a ConcreteOp):

* Output = conv2d's Input@GRAD with Output@GRAD = Input  (conv.backward_thunk, dx only)
* Input@GRAD = conv2d(Output@GRAD, Filter)                (conv.forward_thunk)
* Filter@GRAD = conv2d's Filter@GRAD with Input = Output@GRAD and Output@GRAD = Input.

Output size (Paddle's conv2d_transpose): OH = (H - 1) * sh - pt - pb + dh * (kh - 1) + 1
+ output_padding[0], or `output_size` when given (it must lie in [that without
output_padding, + sh)). output_padding must be smaller than the stride (else the adjoint
convolution would not map OH back to H). padding_algorithm "SAME" pads as Paddle's
UpdatePaddingAndDilation (total max((ceil(H / s) - 1) * s + k - H, 0), smaller half first,
dilation 1); "VALID" pads nothing.
"""
import functools

from . import conv, conv_gpu
from ..gpu import gpu_util
from ..registry import NO_GRAD, ConcreteOp, OpDef, Slot, VarInfo, register_op, run_calls


def _list2(v):
    v = [int(d) for d in (v if isinstance(v, (list, tuple)) else [v])]
    return v * 2 if len(v) == 1 else v


def geometry(attrs, x_shape, w_shape, err=ValueError):
    """(conv2d attrs of the adjoint convolution, output spatial dims [OH, OW])."""
    (sh, sw), pads, (dh, dw) = conv.conv_params(attrs, "conv2d_transpose")
    algo = attrs["padding_algorithm"]
    H, W = x_shape[2], x_shape[3]
    kh, kw = w_shape[2], w_shape[3]
    if algo == "VALID":
        pads = (0, 0, 0, 0)
    elif algo == "SAME":
        if H < 0 or W < 0:
            raise err(f"padding 'SAME' needs known spatial dims; Input is {tuple(x_shape)}")
        pads = []
        for size, k, s in ((H, kh, sh), (W, kw, sw)):
            total = max(((size + s - 1) // s - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        dh = dw = 1
    elif algo != "EXPLICIT":
        raise err(f"padding_algorithm must be 'EXPLICIT', 'SAME' or 'VALID', got {algo!r}")
    pt, pb, pl, pr = pads
    extra = _list2(attrs["output_padding"] or [0])
    size = [int(d) for d in (attrs["output_size"] or [])]
    out = []
    for i, (n, k, s, d, p0, p1) in enumerate(((H, kh, sh, dh, pt, pb), (W, kw, sw, dw, pl, pr))):
        if n < 0:
            out.append(-1)
            continue
        base = (n - 1) * s - p0 - p1 + d * (k - 1) + 1
        if size:
            if len(size) != 2 or not base <= size[i] < base + s:
                raise err(f"output_size {size} is not reachable: with Input spatial "
                          f"{[H, W]}, the output dim {i} lies in [{base}, {base + s}) (stride "
                          f"{s}); give one in that range")
            o = size[i]
        else:
            if not 0 <= extra[i] < s:
                raise err(f"output_padding {extra} must be >= 0 and smaller than the stride "
                          f"{[sh, sw]}")
            o = base + extra[i]
        if o <= 0:
            raise err(f"output size {o} (dim {i}) is not positive: Input spatial {[H, W]}, "
                      f"kernel {[kh, kw]}, stride {[sh, sw]}, paddings {list(pads)}")
        out.append(o)
    adj = {"strides": [sh, sw], "paddings": [pt, pb, pl, pr], "dilations": [dh, dw],
           "groups": int(attrs["groups"]), "data_format": "NCHW"}
    return adj, out


def _infer(ctx):
    x, w = ctx.input("Input"), ctx.input("Filter")
    xn, wn = ctx.name("Input"), ctx.name("Filter")
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ctx.error(f"Input {xn} {tuple(x.shape)} and Filter {wn} {tuple(w.shape)} must "
                        f"both be 4-D: NCHW and [in_channels, out_channels/groups, kh, kw]")
    if x.dtype != w.dtype or x.dtype.kind != "f":
        raise ctx.error(f"Input {xn} ({x.dtype}) and Filter {wn} ({w.dtype}) must have the "
                        f"same float dtype")
    if ctx.attr("data_format") not in ("NCHW", "AnyLayout"):
        raise ctx.error(f"data_format {ctx.attr('data_format')!r} is not supported; only 'NCHW'")
    groups = int(ctx.attr("groups"))
    if groups < 1 or w.shape[0] % groups:
        raise ctx.error(f"groups={groups} must be >= 1 and divide Filter {wn}'s "
                        f"{w.shape[0]} input channels")
    if x.shape[1] != -1 and x.shape[1] != w.shape[0]:
        raise ctx.error(f"channel mismatch: Input {xn} has {x.shape[1]} channels, Filter {wn} "
                        f"{tuple(w.shape)} expects {w.shape[0]} (Filter is [in_channels, "
                        f"out_channels/groups, kh, kw])")
    _, (oh, ow) = geometry(ctx.attrs, x.shape, w.shape, ctx.error)
    return {"Output": VarInfo((x.shape[0], w.shape[1] * groups, oh, ow), x.dtype)}


def _adjoint(cop):
    """The conv2d ConcreteOp whose Input has this op's Output shape (see the docstring)."""
    x, w = cop.input("Input"), cop.input("Filter")
    adj, (oh, ow) = geometry(cop.attrs, x.shape, w.shape)
    shape = (x.shape[0], w.shape[1] * adj["groups"], oh, ow)
    return ConcreteOp("conv2d", adj, {"Input": [VarInfo(shape, x.dtype)], "Filter": [w]},
                      {"Output": [x]})


def _cpu(cop):
    adj = _adjoint(cop)

    def bind(ins, outs):
        x, w, out = ins["Input"][0], ins["Filter"][0], outs["Output"][0]
        # conv2d's dInput only: its Input (read for dFilter alone) is `out` for the shape
        return conv.backward_thunk(adj, out, w, x, dx=out)
    return bind


def _grad_rule(g):
    g.append(g.op.type + "_grad",
             {"Input": g.fwd("Input"), "Filter": g.fwd("Filter"), "Output@GRAD": g.dout("Output")},
             {"Input@GRAD": g.dx("Input"), "Filter@GRAD": g.dx("Filter")}, dict(g.attrs))


def _grad_infer(ctx):
    out = _infer(ctx)["Output"].shape
    d = ctx.input("Output@GRAD")
    if len(d.shape) != 4 or any(a != b and -1 not in (a, b) for a, b in zip(d.shape, out)):
        raise ctx.error(f"Output@GRAD {ctx.name('Output@GRAD')} has shape {tuple(d.shape)}, "
                        f"but the transposed convolution's Output has shape {out}")
    return {"Input@GRAD": ctx.input("Input"), "Filter@GRAD": ctx.input("Filter")}


def _grad_cpu(cop):
    adj = _adjoint(cop)

    def bind(ins, outs):
        x, w, d = ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0]
        dx, dw = conv.grad_out(outs, "Input@GRAD"), conv.grad_out(outs, "Filter@GRAD")
        calls = []
        if dx is not None:
            calls.append(conv.forward_thunk(adj, d, w, dx))
        if dw is not None:
            calls.append(conv.backward_thunk(adj, d, w, x, dw=dw))
        return functools.partial(run_calls, tuple(calls))
    return bind


# ---------------------------------------------------------------- GPU (conv_gpu's kernels)
def _gpu_geo(cop):
    a, _ = geometry(cop.attrs, cop.input("Input").shape, cop.input("Filter").shape)
    return conv_gpu.conv_geometry(cop.input("Filter").shape[2:], a["strides"][:2],
                                  (a["paddings"][0], a["paddings"][2]), a["dilations"][:2])


def _gpu(cop):
    # the transposed conv's forward is the conv's dInput gather (Output in dx's place)
    geo = _gpu_geo(cop)

    def bind(ins, outs):
        x, w, out, f = ins["Input"][0], ins["Filter"][0], outs["Output"][0], gpu_util.flat
        return conv_gpu.launch(conv_gpu.kernels().conv_dinput, out.size, f(out), f(w), f(x),
                               f(out), *conv_gpu.conv_frame(out.shape, w.shape, x.shape), geo,
                               False, f(x), False)
    return bind


def _grad_gpu(cop):
    geo = _gpu_geo(cop)

    def bind(ins, outs):
        x, w, d, f = ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0], gpu_util.flat
        k, calls = conv_gpu.kernels(), []
        frame = conv_gpu.conv_frame(d.shape, w.shape, x.shape)
        if outs.get("Input@GRAD"):
            dx, fw = outs["Input@GRAD"][0], f(w)
            calls.append(conv_gpu.launch(k.conv_fwd, dx.size, f(d), fw, f(dx), *frame, geo,
                                         False, fw, fw, 0, False))
        if outs.get("Filter@GRAD"):
            dw = outs["Filter@GRAD"][0]
            calls.append(conv_gpu.launch(k.conv_dfilter, dw.size, f(d), f(x), f(dw), *frame,
                                         geo, False, f(x), False))
        return gpu_util.sequence(calls)
    return bind


ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
         "output_padding": [], "output_size": [], "padding_algorithm": "EXPLICIT",
         "data_format": "NCHW"}
# depthwise_conv2d_transpose: the op Paddle appends when groups == in_channels and each
# group has one output channel (its CPU build); the same computation.
for _type in ("conv2d_transpose", "depthwise_conv2d_transpose"):
    register_op(OpDef(
        _type, (Slot("Input"), Slot("Filter")), (Slot("Output"),), _infer, _cpu,
        gpu=_gpu, attrs=ATTRS, grad=_grad_rule,
        doc="2-D transposed convolution, NCHW, Filter [C_in, C_out/groups, kh, kw]; no bias"))
    register_op(OpDef(
        _type + "_grad", (Slot("Input"), Slot("Filter"), Slot("Output@GRAD")),
        (Slot("Input@GRAD", optional=True), Slot("Filter@GRAD", optional=True)), _grad_infer,
        _grad_cpu, gpu=_grad_gpu, attrs=ATTRS, traits=frozenset({NO_GRAD})))
