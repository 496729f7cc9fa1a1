"""2-D convolution (NCHW): `conv2d` with its gradient, and what `depthwise_conv2d`
(depthwise.py) shares with it: attributes, shape inference, geometry, GPU kernels.

conv2d runs im2col + BLAS (conv_im2col.py): per (sample, group) the receptive fields are
unrolled into a columns buffer (allocated once at bind time) and multiplied by the group's
filters with a GEMM (math/gemm_cpu.gemm: numpy's OpenBLAS, at 16-64 output channels up to
1.8x faster than scipy's that np.dot calls in njit); with several threads the samples are
split between them. 1x1 convolutions with stride 1 and no padding multiply the input
planes directly (they already are the columns). float32 3x3 convolutions of 16-64 channels
run a direct kernel in 8-channel blocks instead (conv_nchwc.py; `use_nchwc` says where, from
a measured table), and so does their input gradient at stride 1 (a forward convolution of
dOut with the flipped, transposed filters).

`fuse_relu_before_depthwise_conv` (set by a fusion pass, as Paddle's GPU pass does)
applies relu to Input inside the kernel; the grad then masks Input@GRAD by Input > 0.

Bias is not part of these ops: layers add it with `elementwise_add(axis=1)`, as Paddle;
fused_conv2d (conv_fused.py) runs these kernels with an epilogue (conv_epilogue.py) that
adds it (and a relu, a folded batch_norm) as each output block is written.

The CUDA kernels (direct: thread per output / dInput / dFilter element) are in conv_gpu.py.
"""
import functools

import numpy as np

from . import conv_gpu
from . import conv_im2col as cpu
from . import conv_nchwc
from ..math.gemm_cpu import blas_scalars
from ..registry import NO_GRAD, OpDef, Slot, VarInfo, register_op, run_calls


# ---------------------------------------------------------------- attributes and shapes
def _pair(v, what, op):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    if len(v) == 1:
        v = v * 2
    if len(v) != 2:
        raise ValueError(f"{op}: {what} must have 1 or 2 elements, got {v}")
    return int(v[0]), int(v[1])


def conv_params(attrs, op="conv2d"):
    """(sh, sw), (pt, pb, pl, pr), (dh, dw) from the op's attrs, validated."""
    sh, sw = _pair(attrs["strides"], "strides", op)
    dh, dw = _pair(attrs["dilations"], "dilations", op)
    p = [int(x) for x in (attrs["paddings"] if isinstance(attrs["paddings"], (list, tuple))
                          else [attrs["paddings"]])]
    if len(p) == 1:
        p = p * 4
    elif len(p) == 2:
        p = [p[0], p[0], p[1], p[1]]
    elif len(p) != 4:
        raise ValueError(f"{op}: paddings must be [p], [pad_h, pad_w] or [top, bottom, left, "
                         f"right], got {attrs['paddings']}")
    if min(sh, sw) < 1 or min(dh, dw) < 1:
        raise ValueError(f"{op}: strides {[sh, sw]} and dilations {[dh, dw]} must be >= 1")
    if min(p) < 0:
        raise ValueError(f"{op}: paddings {p} must be >= 0")
    if attrs.get("data_format", "NCHW") not in ("NCHW", "AnyLayout"):
        raise ValueError(f"{op}: data_format {attrs['data_format']!r} is not supported; only "
                         f"'NCHW' is (transpose NHWC input with paddle.transpose first)")
    return (sh, sw), tuple(p), (dh, dw)


def _out_dim(n, k, s, p0, p1, d):
    return -1 if n < 0 else (n + p0 + p1 - (d * (k - 1) + 1)) // s + 1


def conv_infer(ctx):
    x, w = ctx.input("Input"), ctx.input("Filter")
    xn, wn = ctx.name("Input"), ctx.name("Filter")
    op = ctx.op_type
    try:
        (sh, sw), (pt, pb, pl, pr), (dh, dw) = conv_params(ctx.attrs, op)
    except ValueError as e:
        raise ValueError(f"{e} (Input {xn}, Filter {wn})") from None
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ctx.error(f"Input {xn} {tuple(x.shape)} and Filter {wn} {tuple(w.shape)} must "
                        f"both be 4-D: NCHW and [out_channels, in_channels/groups, kh, kw]")
    if x.dtype != w.dtype or x.dtype.kind != "f":
        raise ctx.error(f"Input {xn} ({x.dtype}) and Filter {wn} ({w.dtype}) must have the "
                        f"same float dtype")
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    groups = int(ctx.attr("groups"))
    if groups < 1:
        raise ctx.error(f"groups must be >= 1, got {groups}")
    if op.startswith("depthwise") and (cg != 1 or (c != -1 and groups != c)):
        raise ctx.error(f"a depthwise conv needs groups == in_channels and Filter {wn} of shape "
                        f"[channels * multiplier, 1, kh, kw]; got groups={groups}, Input {xn} "
                        f"{tuple(x.shape)}, Filter {tuple(w.shape)}")
    if c != -1:
        if c % groups:
            raise ctx.error(f"groups={groups} does not divide the {c} channels of Input {xn}")
        if cg * groups != c:
            raise ctx.error(f"channel mismatch: Input {xn} has {c} channels, but Filter {wn} "
                            f"{tuple(w.shape)} expects {cg} per group x groups={groups} = "
                            f"{cg * groups}")
    if m % groups:
        raise ctx.error(f"groups={groups} does not divide the {m} output channels (filters) of "
                        f"Filter {wn}")
    for size, k, d, p0, p1, what in ((h, kh, dh, pt, pb, "height"), (wd, kw, dw, pl, pr, "width")):
        if size != -1 and d * (k - 1) + 1 > size + p0 + p1:
            raise ctx.error(f"the (dilated) kernel {what} {d * (k - 1) + 1} is larger than the "
                            f"padded input {what} {size} + {p0 + p1} of Input {xn}; use a "
                            f"smaller kernel or more padding")
    oh, ow = _out_dim(h, kh, sh, pt, pb, dh), _out_dim(wd, kw, sw, pl, pr, dw)
    return {"Output": VarInfo((n, m, oh, ow), x.dtype)}


def conv_grad_infer(ctx):
    # the forward's checks, and Output@GRAD must have the forward's Output shape: the
    # kernels index by these shapes (a mismatch would read and write out of bounds)
    out = conv_infer(ctx)["Output"].shape
    d = ctx.input("Output@GRAD")
    if len(d.shape) != 4 or any(a != b and -1 not in (a, b) for a, b in zip(d.shape, out)):
        raise ctx.error(f"Output@GRAD {ctx.name('Output@GRAD')} has shape {tuple(d.shape)}, "
                        f"but the convolution's Output has shape {out}")
    return {"Input@GRAD": ctx.input("Input"), "Filter@GRAD": ctx.input("Filter")}


def conv_grad_rule(g):
    g.append(g.op.type + "_grad",
             {"Input": g.fwd("Input"), "Filter": g.fwd("Filter"), "Output@GRAD": g.dout("Output")},
             {"Input@GRAD": g.dx("Input"), "Filter@GRAD": g.dx("Filter")}, dict(g.attrs))


def geometry(cop):
    """Everything a kernel specialises on, from the concrete shapes."""
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = conv_params(cop.attrs, cop.type)
    n, c, h, wd = cop.input("Input").shape
    m, cg, kh, kw = cop.input("Filter").shape
    oh, ow = _out_dim(h, kh, sh, pt, pb, dh), _out_dim(wd, kw, sw, pl, pr, dw)
    return dict(n=n, c=c, h=h, w=wd, m=m, cg=cg, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw,
                pt=pt, pb=pb, pl=pl, pr=pr, dh=dh, dw=dw, groups=int(cop.attrs["groups"]))




def zero(a):
    a[...] = 0


def _is_1x1(k):
    return (k["kh"] == k["kw"] == 1 and k["sh"] == k["sw"] == 1
            and k["pt"] == k["pb"] == k["pl"] == k["pr"] == 0)


def _views(k, x, w, d):
    """(x5, w3, out4) views of Input, Filter and Output (or its gradient)."""
    G = k["groups"]
    x5 = x.reshape(k["n"], G, k["c"] // G, k["h"], k["w"])
    w3 = w.reshape(G, k["m"] // G, k["cg"] * k["kh"] * k["kw"])
    d4 = d.reshape(k["n"], G, k["m"] // G, k["oh"] * k["ow"])
    return x5, w3, d4


def _padded_plane(k, dtype, T):
    """T zero-bordered planes of im2col / col2im, flat: (T, Cg, (H + pt + pb) * Wp)."""
    return np.zeros((T, k["cg"], (k["h"] + k["pt"] + k["pb"]) * _wp(k)), dtype)


def _wp(k):
    """The padded plane's width."""
    return k["w"] + k["pl"] + k["pr"]


def _geo_args(k):
    """The trailing geometry arguments of the im2col kernels."""
    return (k["kh"], k["kw"], k["sh"], k["sw"], k["dh"], k["dw"], k["pt"], k["pl"],
            k["oh"], k["ow"], _wp(k))


# a chunk's columns stay near this many elements (512 KB of f32, an L2: conv_im2col.py)
CHUNK_ELEMS = 1 << 17


def chunk_samples(k, T):
    """Samples per GEMM chunk: as many as keep the columns near CHUNK_ELEMS, at least one,
    and no more than leave each of the T workers a chunk."""
    per_sample = k["cg"] * k["kh"] * k["kw"] * k["oh"] * k["ow"]
    return max(1, min(CHUNK_ELEMS // per_sample, -(-k["n"] // T)))


def _scratch(k, T, S, rows, dtype):
    """T flat scratch buffers of rows x (S samples' output positions)."""
    return np.empty((T, rows * S * k["oh"] * k["ow"]), dtype)


def no_epilogue(k, dtype):
    """The empty (G, 0) per-channel array of a kernel argument the epilogue does not use."""
    return np.zeros((k["groups"], 0), dtype)


def _threads(k):
    """Threads splitting the op's samples (1: the serial kernels)."""
    work = k["n"] * k["m"] * k["oh"] * k["ow"] * k["cg"] * k["kh"] * k["kw"]
    return cpu.parallel_threads(work, k["n"])


def forward_thunk(cop, x, w, out, mul=None, add=None, act=False):
    """The forward kernel of `cop`'s path (1x1 / im2col in chunks of samples) on the op's
    threads, bound to Input `x`, Filter `w` and Output `out`, with the epilogue
    `out = act(out * mul + add)` (mul, add: per output channel, (M,) arrays or None)."""
    k = geometry(cop)
    T = _threads(k)
    x5, w3, out4 = _views(k, x, w, out)
    none = no_epilogue(k, x.dtype)
    epi = 0 if add is None else 1 if mul is None else 2
    mul2 = none if mul is None else mul.reshape(w3.shape[:2])
    add2 = none if add is None else add.reshape(w3.shape[:2])
    epi_args = (mul2, add2, epi, int(act))
    ab = blas_scalars(x.dtype)
    if use_nchwc(k, x.dtype):
        return _nchwc_thunk(k, T, x, w, out4, epi_args)
    if _is_1x1(k):
        x4 = x5.reshape(x5.shape[:3] + (-1,))
        return cpu.bind_workers(cpu.conv1x1_fwd, (x4, w3, out4, ab, *epi_args), [()] * T)
    S = chunk_samples(k, T)
    own = zip(_scratch(k, T, S, w3.shape[2], x.dtype), _scratch(k, T, S, w3.shape[1], x.dtype),
              _padded_plane(k, x.dtype, T))
    return cpu.bind_workers(cpu.conv_fwd, (x5, w3, out4, ab, *epi_args, *_geo_args(k), S), own)


# Which forward kernel, by shape: the table measured by tools/conv_blas_ab.py (NCHWc against
# im2col + GEMM, docs/architecture.md "Activation memory"); the first conv (3 channels), 1x1
# convs, other dtypes, groups and dilations stay on im2col + GEMM.
NCHWC_CHANNELS = (16, 64)
NCHWC_MIN_BATCH = 8         # from here: stride 2 and 64 channels too
NCHWC_SMALL_BATCH_CHANNELS = 32


def use_nchwc(k, dtype):
    """True where conv2d's forward runs conv_nchwc's direct kernel (the rule above)."""
    lo, hi = NCHWC_CHANNELS
    if not (dtype == np.float32 and k["groups"] == 1 and k["kh"] == k["kw"] == 3
            and k["dh"] == k["dw"] == 1 and k["m"] % conv_nchwc.LANES == 0
            and lo <= k["c"] <= hi and k["sh"] == k["sw"] and k["sh"] in (1, 2)):
        return False
    if k["n"] >= NCHWC_MIN_BATCH:
        return True
    return k["sh"] == 1 and k["c"] <= NCHWC_SMALL_BATCH_CHANNELS


def _nchwc_thunk(k, T, x, w, out4, epi_args):
    """The filters packed in L-channel blocks (when they changed since the last call), then T
    workers of conv_nchwc.nchwc_fwd over the samples."""
    L = conv_nchwc.LANES
    ob = conv_nchwc.tile_blocks(k["m"])
    NC = conv_nchwc.SHAPES[ob]
    cb = -(-k["c"] // L)
    hp = k["h"] + k["pt"] + k["pb"]
    tiles = -(-k["ow"] // NC)
    wpa = max(_wp(k), (tiles * NC - 1) * k["sw"] + (k["kw"] - 1) * k["dw"] + 1)
    wb, pack = conv_nchwc.filter_packing(w)
    taps = conv_nchwc.tap_offsets(cb, k["kh"], k["kw"], k["dh"], k["dw"], hp, wpa)
    own = zip(np.zeros((T, cb, hp, wpa, L), np.float32),
              np.empty((T, k["m"] // L, k["oh"] + 2, k["ow"] + 2, L), np.float32))
    out = out4.reshape(k["n"], k["m"], k["oh"], k["ow"])
    mul2, add2, epi, act = epi_args     # the tile applies act(. * mul + add) to every block
    mul = mul2.reshape(-1) if epi == 2 else np.ones(k["m"], np.float32)
    add = add2.reshape(-1) if epi >= 1 else np.zeros(k["m"], np.float32)
    workers = cpu.bind_workers(conv_nchwc.nchwc_fwd, (
        x, wb, out, mul, add, act, k["sh"], k["sw"], k["pt"], k["pl"], taps, ob), own)
    return functools.partial(run_calls, (pack, workers))


def _transposed(k):
    """The geometry of dInput = conv(dOut, Filter flipped and transposed) at stride 1:
    Filter[m, c, i, j] -> [c, m, kh-1-i, kw-1-j], padding kh-1-pt (and so on)."""
    return dict(k, c=k["m"], h=k["oh"], w=k["ow"], m=k["c"], cg=k["m"], oh=k["h"],
                ow=k["w"], pt=k["kh"] - 1 - k["pt"], pb=k["kh"] - 1 - k["pb"],
                pl=k["kw"] - 1 - k["pl"], pr=k["kw"] - 1 - k["pr"])


def _nchwc_dx_thunk(k, T, w, d, dx):
    """dInput of a stride-1 conv as the NCHWc forward of dOut with the flipped, transposed
    filters (copied per call: a view of Filter bound once)."""
    kt = _transposed(k)
    flipped = w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
    wt = np.empty(flipped.shape, np.float32)
    dx4 = dx.reshape(k["n"], 1, k["c"], k["h"] * k["w"])
    none = no_epilogue(kt, np.float32)
    return functools.partial(run_calls, (functools.partial(np.copyto, wt, flipped),
                                         _nchwc_thunk(kt, T, d, wt, dx4, (none, none, 0, 0))))


DW_CHUNKS = 8       # nchwc_dw's fixed sample chunks (partials), whatever the workers


def _nchwc_dw_thunk(k, T, x, d, dw):
    """dFilter by conv_nchwc's dw tile: T workers fill DW_CHUNKS chunks' partials, summed."""
    L = conv_nchwc.LANES
    cb, mb, Q = -(-k["c"] // L), k["m"] // L, min(k["n"], DW_CHUNKS)
    T = min(T, Q)
    parts = np.empty((Q, mb, cb, k["kh"], k["kw"], L, L), np.float32)
    own = zip(np.zeros((T, cb, k["h"] + k["pt"] + k["pb"], _wp(k), L), np.float32),
              np.empty((T, mb, k["oh"], k["ow"], L), np.float32))
    workers = cpu.bind_workers(conv_nchwc.nchwc_dw, (x, d.reshape(
        k["n"], k["m"], k["oh"], k["ow"]), k["sh"], k["sw"], k["pt"], k["pl"], parts), own)
    return functools.partial(run_calls, (workers,
                                         functools.partial(conv_nchwc.unpack_dw, parts, dw)))


def _use_nchwc_dx(k, dtype):
    """dInput through the NCHWc kernel: stride 1, paddings within the kernel, and the
    transposed convolution one that use_nchwc picks."""
    return (k["sh"] == k["sw"] == 1 and max(k["pt"], k["pb"]) < k["kh"]
            and max(k["pl"], k["pr"]) < k["kw"] and use_nchwc(_transposed(k), dtype))


def backward_thunk(cop, x, w, d, dx=None, dw=None, out=None, db=None, act=False):
    """The backward kernel of `cop`'s path bound to Input `x`, Filter `w`, Output@GRAD `d`
    and the gradients wanted (dx, dw, the bias gradient db: None when not); with `act`
    (relu) d is first masked by Output `out` > 0. Over T > 1 threads each worker sums its
    samples' dFilter / bias gradient into its own partial, added up after. Where
    _use_nchwc_dx says so (no act), dInput is a forward NCHWc convolution of dOut first."""
    k = geometry(cop)
    T = _threads(k)
    if dw is not None and db is None and not act and use_nchwc(k, x.dtype):
        mine = _nchwc_dw_thunk(k, T, x, d, dw)
        if dx is None:
            return mine
        return functools.partial(run_calls, (backward_thunk(cop, x, w, d, dx), mine))
    if dx is not None and not act and _use_nchwc_dx(k, x.dtype):
        first = _nchwc_dx_thunk(k, T, w, d, dx)
        if dw is None and db is None:
            return first
        return functools.partial(run_calls, (first, backward_thunk(cop, x, w, d, None, dw, out,
                                                                   db, act)))
    x5, w3, d4 = _views(k, x, w, d)
    dt = x.dtype
    need_dx, need_dw, need_db = dx is not None, dw is not None, db is not None
    dx5 = dx.reshape(x5.shape) if need_dx else np.empty((0,) * 5, dt)
    dw3 = dw.reshape(w3.shape) if need_dw else np.empty((0,) * 3, dt)
    db2 = db.reshape(w3.shape[:2]) if need_db else no_epilogue(k, dt)
    # per worker: its partials (one worker: the gradients themselves) and scratch
    dw_parts = dw3[None] if T == 1 else np.empty((T,) + dw3.shape, dt)
    db_parts = db2[None] if T == 1 else np.empty((T,) + db2.shape, dt)
    tmpw = np.empty((T,) + w3.shape[1:], dt)
    dm = np.empty((T,) + (d4.shape[2:] if act else (0, 0)), dt)
    o4 = out.reshape(d4.shape) if act else d4
    flags = (need_dx, need_dw, need_db, bool(act))
    ab = blas_scalars(dt)
    if _is_1x1(k):
        flat = x5.shape[:3] + (-1,)
        dx4 = dx5.reshape(flat) if need_dx else np.empty((0,) * 4, dt)
        call = cpu.bind_workers(cpu.conv1x1_bwd, (x5.reshape(flat), w3, ab, d4, dx4, o4, *flags),
                                zip(dw_parts, db_parts, tmpw, dm))
    else:
        S = chunk_samples(k, T)
        K, Mg = w3.shape[2], w3.shape[1]
        cols = _scratch(k, T, S, K, dt)
        dcols = _scratch(k, T, S, K, dt) if need_dx else cols
        own = zip(dw_parts, db_parts, cols, dcols, _scratch(k, T, S, Mg, dt), tmpw, dm,
                  _padded_plane(k, dt, T), _padded_plane(k, dt, T))
        call = cpu.bind_workers(cpu.conv_bwd, (x5, w3, ab, d4, dx5, o4, *flags, *_geo_args(k), S),
                                own)
    if T == 1:
        return call
    calls = [call] + [functools.partial(cpu.sum_partials, parts.reshape(T, -1), out.reshape(-1))
                      for parts, out, need in ((dw_parts, dw3, need_dw), (db_parts, db2, need_db))
                      if need]
    return functools.partial(run_calls, tuple(calls))


def grad_out(outs, slot):
    """The array of optional output `slot`, or None when the op does not compute it."""
    return outs[slot][0] if outs.get(slot) and outs[slot][0].size > 0 else None


def _conv_cpu(cop):
    def bind(ins, outs):
        return forward_thunk(cop, ins["Input"][0], ins["Filter"][0], outs["Output"][0])
    return bind


def _conv_grad_cpu(cop):
    def bind(ins, outs):
        return backward_thunk(cop, ins["Input"][0], ins["Filter"][0], ins["Output@GRAD"][0],
                              grad_out(outs, "Input@GRAD"), grad_out(outs, "Filter@GRAD"))
    return bind


# ---------------------------------------------------------------- GPU (conv_gpu.py)
def _relu_in(cop):
    return bool(cop.attrs.get("fuse_relu_before_depthwise_conv", False))


def gpu_forward(cop, epilogue=None):
    """The GPU factory body of `cop`'s forward (conv_gpu.conv_forward's `epilogue`)."""
    return conv_gpu.conv_forward(geometry(cop), _relu_in(cop), epilogue)


def gpu_backward(cop, out=None, act=False):
    """The GPU factory body of `cop`'s gradient (conv_gpu.conv_backward's out / act)."""
    return conv_gpu.conv_backward(geometry(cop), _relu_in(cop), out, act)


def conv_gpu_forward(cop):
    return gpu_forward(cop)


def conv_gpu_backward(cop):
    return gpu_backward(cop)


# ---------------------------------------------------------------- registration
ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
          "data_format": "NCHW"}
IN_SLOTS = (Slot("Input"), Slot("Filter"))
GRAD_IN_SLOTS = (Slot("Input"), Slot("Filter"), Slot("Output@GRAD"))
GRAD_OUT_SLOTS = (Slot("Input@GRAD", optional=True), Slot("Filter@GRAD", optional=True))

register_op(OpDef("conv2d", IN_SLOTS, (Slot("Output"),), conv_infer, _conv_cpu, gpu=conv_gpu_forward,
                  attrs=ATTRS,
                  grad=conv_grad_rule,
                  doc="2-D convolution, NCHW, Filter [M, C/groups, kh, kw]; no bias"))
register_op(OpDef("conv2d_grad", GRAD_IN_SLOTS, GRAD_OUT_SLOTS, conv_grad_infer, _conv_grad_cpu,
                  gpu=conv_gpu_backward, attrs=ATTRS, traits=frozenset({NO_GRAD})))
