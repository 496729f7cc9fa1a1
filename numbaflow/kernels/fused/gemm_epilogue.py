"""fused_gemm_epilogue: an fc layer's product, bias and activation as one op (Paddle's op of
that name), made by the fuse_gemm_epilogue pass (graph/passes/fuse_gemm_epilogue.py):

    Out = act(flatten(X, x_num_col_dims) @ op(Y) + Bias)     op(Y) = Y^T when trans_y
    ReserveSpace = the pre-activation (gelu only: what its gradient reads)

act is "none", "relu" or "gelu" (approximate: the tanh form). The BLAS cannot take an
epilogue, so the CPU kernel runs the product in blocks of rows and adds Bias and applies
act to each block right after the BLAS wrote it, while it is in cache; the workers claim
blocks (workshare.py). Without ReserveSpace the epilogue runs in place in Out.

fused_gemm_epilogue_grad (slots named as numbaflow's gradients are: Out@GRAD, X@GRAD, ...;
Paddle's DOut, DX, ...): DPreAct = act'(pre-activation) * Out@GRAD (one pass that also
sums Bias@GRAD, in fixed row chunks so the sum does not depend on the thread count), then
X@GRAD = DPreAct @ op(Y)^T and Y@GRAD from flatten(X)^T @ DPreAct with the threaded GEMM
(gemm_cpu.gemm_call). DPreAct may share Out@GRAD's buffer (declared in place). relu's gradient
reads Out (kept anyway: the next layer's input), gelu's ReserveSpace: the op keeps for
the backward no more than the unfused mul, elementwise_add and act do.

The epilogue loops are generated from the registered scalar bodies of `act` and
`<act>_grad` (codegen/render.py; cached on disk, dumped to NUMBAFLOW_DUMP_DIR), so the
activation's maths lives in one place. The GPU kernels: the tiled GEMM, then a flat
kernel for the same epilogue, generated the same way.
"""
import functools

import numba
import numpy as np

from ..codegen.cache import load_source
from ..codegen.render import render
from ..gpu import gpu_util
from ..math.gemm_cpu import blas_scalars, gemm_call, gemm_threads, sum_parts
from ..math.linalg import ONLY_BATCH, flat2, gemm_thunk
from ..registry import (FUSED, NO_GRAD, OpDef, Slot, VarInfo, get_op_def, register_op,
                        run_calls)
from .. import scalar as S
from ..workshare import bind_workers
from .fused_add_act import act_grad_reads

ACTIVATIONS = ("none", "relu", "gelu")
ATTRS = {"x_num_col_dims": 1, "trans_y": False, "activation": "none", "approximate": False}
CHUNKS = 4              # fixed row chunks of the bias gradient's sum
# Rows per forward block: about EPILOGUE_BYTES of Out, at least MIN_BLOCK_ROWS. Measured
# (1 thread, GPT fc shapes): blocks of 64-256 rows (an L2's worth) were slower than one
# block, the BLAS losing more on short products (repacking Y per block) than the
# epilogue gains in cache; a block of a few MB stays in the L3 and keeps the BLAS whole.
EPILOGUE_BYTES = 1 << 22
MIN_BLOCK_ROWS = 64


def activation(attrs, op="fused_gemm_epilogue"):
    act = attrs["activation"]
    if act not in ACTIVATIONS:
        raise ValueError(f"{op}: activation {act!r} is not supported; expected one of "
                         f"{list(ACTIVATIONS)}")
    return act


def saves_pre_activation(act):
    """True when act's gradient reads its input (gelu): the op then writes ReserveSpace."""
    return act != "none" and act_grad_reads(act) == "X"


# ---------------------------------------------------------------- generated epilogues
def _expr(act, attrs, grad):
    """(lines, expr) of act(v) (or of act'(s) * g) from the registered bodies."""
    a = {k: attrs[k] for k in get_op_def(act).attrs}
    if grad:
        return render(S.trace(get_op_def(f"{act}_grad").body, a, 2), ["s", "g"])
    return render(S.trace(get_op_def(act).body, a, 1), ["v"])


def _source(act, attrs, dtype, save, gpu, alias=False):
    """The module with `forward` and `backward` epilogues for `act` (CPU: row-block
    workers around the BLAS; GPU: flat grid-stride kernels). save: the forward writes
    the pre-activation to `z` (else z is Out); alias: the backward's dz is d."""
    f_lines, f_out = _expr(act, attrs, False) if act != "none" else ([], ["v"])
    b_lines, b_out = _expr(act, attrs, True) if act != "none" else ([], ["g"])
    ind = " " * 16 if not gpu else " " * 8
    fwd = [ind + ln for ln in f_lines]
    bwd = [ind + ln for ln in b_lines]
    if gpu:
        head = ["import math", "import numpy as np", "from numba import config as _config, cuda",
                "if _config.ENABLE_CUDASIM:",
                "    from numbaflow.kernels.codegen.cuda import SIMULATED_MATH as math",
                "_erf = math.erf", "_exp = math.exp", f"_F = np.{dtype}",
                "@cuda.jit(cache=True)",
                "def forward(z, bias, out):",
                "    n = bias.shape[0]",
                "    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):",
                "        v = z[i] + bias[i % n]"]
        head += (["        z[i] = v"] if save else []) + fwd + [f"        out[i] = {f_out[0]}"]
        head += ["@cuda.jit(cache=True)",
                 "def backward(saved, d, dz):",
                 "    for i in range(cuda.grid(1), d.shape[0], cuda.gridsize(1)):",
                 "        s = saved[i]", "        g = d[i]"] + bwd + [f"        dz[i] = {b_out[0]}"]
        head += ["@cuda.jit(cache=True)",
                 "def column_sums(dz, db):",
                 "    j = cuda.grid(1)",
                 "    n = db.shape[0]",
                 "    if j < n:",
                 "        acc = dz[j] - dz[j]",
                 "        for i in range(j, dz.shape[0], n):",
                 "            acc += dz[i]",
                 "        db[j] = acc"]
        return "\n".join(head) + "\n"
    src = ["import math", "import numpy as np", "from numba import njit",
           "from numbaflow.kernels.fastmath import erf as _erf, exp as _exp",
           "from numbaflow.kernels.math.gemm_cpu import gemm",
           "from numbaflow.kernels.workshare import claim", f"_F = np.{dtype}",
           "_JIT = dict(nogil=True, cache=True, error_model='numpy')",
           "@njit(**_JIT)",
           "def forward(x, w, bias, z, out, tw, ab, block, counter):",
           "    m, n = out.shape",
           "    i = claim(counter)",
           "    while i * block < m:",
           "        lo, hi = i * block, min(i * block + block, m)",
           "        gemm(x[lo:hi], w, z[lo:hi], False, tw, ab)",
           "        for r in range(lo, hi):",
           "            zr = z[r]",
           # through one slice when in place: LLVM's overlap check on two slices of one
           # buffer fails and falls back to its scalar loop (codegen/cpu.py)
           "            orow = out[r]" if save else "            orow = zr",
           "            for j in range(n):",
           "                v = zr[j] + bias[j]"]
    src += (["                zr[j] = v"] if save else []) + fwd
    src += [f"                orow[j] = {f_out[0]}",
            "        i = claim(counter)",
            "@njit(**_JIT)",
            "def backward(saved, d, dz, parts, counter):",
            "    m, n = d.shape",
            "    chunks = parts.shape[0]",
            "    size = -(-m // chunks)",
            "    c = claim(counter)",
            "    while c < chunks:",
            "        acc = parts[c, 0]",
            "        acc[:] = 0",
            "        for r in range(c * size, min(m, c * size + size)):",
            "            sr = saved[r]", "            dr = d[r]",
            "            zr = dr" if alias else "            zr = dz[r]",
            "            for j in range(n):",
            "                s = sr[j]", "                g = dr[j]"] + bwd
    # the bias sum in a loop of its own over the row just written (in L1): one loop doing
    # both did not vectorize
    src = src[:-4] + ["            zr = dr"] if act == "none" and alias else \
        src + [f"                zr[j] = {b_out[0]}"]
    src += ["            for j in range(n):",
            "                acc[j] += zr[j]",
            "        c = claim(counter)"]
    return "\n".join(src) + "\n"


@functools.lru_cache(maxsize=None)
def epilogues(act, approximate, dtype, save, gpu=False, alias=False):
    """The generated module of `_source` (one per activation, dtype and device)."""
    attrs = {"approximate": bool(approximate)}
    return load_source(_source(act, attrs, dtype, save, gpu, alias),
                       f"gemm_epilogue_{act}_{'gpu' if gpu else 'cpu'}")


# ---------------------------------------------------------------- shapes
def _matrices(x, y, attrs):
    """(M, K) of X flattened, (K, N) of op(Y), N."""
    xs = flat2(x.shape, attrs["x_num_col_dims"])
    k, n = (y.shape[1], y.shape[0]) if attrs["trans_y"] else tuple(y.shape)
    return xs, k, n


def _infer(ctx):
    x, y, b = ctx.input("X"), ctx.input("Y"), ctx.input("Bias")
    act = activation(ctx.attrs, ctx.op_type)
    xn = ctx.attr("x_num_col_dims")
    if len(y.shape) != 2 or not 0 < xn < len(x.shape):
        raise ctx.error(f"Y must be 2-D and 0 < x_num_col_dims < rank(X); got Y "
                        f"{tuple(y.shape)}, X {tuple(x.shape)}, x_num_col_dims={xn}")
    (_, kx), k, n = _matrices(x, y, ctx.attrs)
    if -1 not in (kx, k) and kx != k:
        raise ctx.error(f"X {tuple(x.shape)} flattened at x_num_col_dims={xn} has {kx} "
                        f"columns; op(Y) {tuple(y.shape)} (trans_y={ctx.attr('trans_y')}) "
                        f"has {k} rows: they must be equal")
    if tuple(b.shape) != (n,) or b.dtype != x.dtype or y.dtype != x.dtype:
        raise ctx.error(f"Bias must be [{n}] and X, Y, Bias one dtype; got Bias "
                        f"{tuple(b.shape)} {b.dtype}, X {x.dtype}, Y {y.dtype}")
    out = VarInfo(tuple(x.shape[:xn]) + (n,), x.dtype)
    return {"Out": out, "ReserveSpace": out} if saves_pre_activation(act) else {"Out": out}


def _grad_infer(ctx):
    d = ctx.input("Out@GRAD")
    return {"X@GRAD": ctx.input("X"), "Y@GRAD": ctx.input("Y"), "Bias@GRAD": ctx.input("Bias"),
            "DPreAct": d}


def _grad_rule(g):
    act = activation(g.attrs)
    saved = {"gelu": "ReserveSpace", "relu": "Out"}.get(act)
    if act == "gelu" and g.fwd("ReserveSpace") is None:
        raise ValueError("fused_gemm_epilogue with gelu and no ReserveSpace has no gradient: "
                         "give it a ReserveSpace output (the pre-activation gelu's gradient "
                         "reads)")
    ins = {"X": g.fwd("X"), "Y": g.fwd("Y"), "Bias": g.fwd("Bias"), "Out@GRAD": g.dout("Out")}
    if saved:
        ins[saved] = g.fwd(saved)
    outs = {"X@GRAD": g.dx("X"), "Y@GRAD": g.dx("Y"), "Bias@GRAD": g.dx("Bias")}
    if act != "none":
        outs["DPreAct"] = g.tmp(g.fwd("Out"))
    g.append("fused_gemm_epilogue_grad", ins, outs, dict(g.attrs))


# ---------------------------------------------------------------- CPU
def _block_rows(m, n, itemsize, threads):
    """Rows per claimed block: about EPILOGUE_BYTES of Out, at least MIN_BLOCK_ROWS, and
    several blocks per worker when threaded."""
    rows = max(MIN_BLOCK_ROWS, EPILOGUE_BYTES // max(1, n * itemsize))
    if threads > 1:
        rows = min(rows, max(MIN_BLOCK_ROWS, -(-m // (threads * 2))))
    return rows


def pass_threads(m, n):
    """Workers for the backward's pass over an m x n Out@GRAD (at most CHUNKS)."""
    return min(CHUNKS, numba.get_num_threads()) if m * n >= (1 << 16) else 1


def _forward_operands(attrs, ins, outs, gpu):
    """(X as (M, K), Y, Bias, where the pre-activation goes (ReserveSpace or Out), Out,
    the epilogue module) of a forward op."""
    act = activation(attrs)
    x, out, res = ins["X"][0], outs["Out"][0], outs.get("ReserveSpace")
    save = act == "gelu" and bool(res)
    x2 = x.reshape(flat2(x.shape, attrs["x_num_col_dims"]))
    mod = epilogues(act, attrs["approximate"], out.dtype.name, save, gpu=gpu)
    return x2, ins["Y"][0], ins["Bias"][0], res[0] if save else out, out, mod


def _cpu(cop):
    ty = bool(cop.attrs["trans_y"])

    def bind(ins, outs):
        x2, y, b, z, out, mod = _forward_operands(cop.attrs, ins, outs, False)
        m, n = x2.shape[0], b.shape[0]
        T = gemm_threads(m, n, x2.shape[1], 1, numba.get_num_threads())
        block = _block_rows(m, n, out.itemsize, T)
        T = min(T, -(-m // block))
        return bind_workers(mod.forward, (x2, y, b, z.reshape(m, n), out.reshape(m, n), ty,
                                          blas_scalars(out.dtype), block), [()] * max(T, 1))
    return bind


def _grad_operands(attrs, ins, outs, empty):
    """(X as (M, K), Y, Out@GRAD as (M, N), where act's gradient goes (DPreAct, `empty`'s
    array, or Out@GRAD for act "none"), what act's gradient reads) of a gradient op."""
    act = activation(attrs)
    x, y, d = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
    x2 = x.reshape(flat2(x.shape, attrs["x_num_col_dims"]))
    m, n = x2.shape[0], y.shape[0] if attrs["trans_y"] else y.shape[1]
    d2 = d.reshape(m, n)
    dz, saved = d2, d2      # act "none": DPreAct (when asked for) is a copy of d
    if outs.get("DPreAct"):
        dz = outs["DPreAct"][0].reshape(m, n)
    elif act != "none":
        dz = empty((m, n), d.dtype)
    if act != "none":
        saved = ins["ReserveSpace" if act == "gelu" else "Out"][0].reshape(m, n)
    return x2, y, d2, dz, saved


def _grad_cpu(cop):
    act = activation(cop.attrs)
    ty = bool(cop.attrs["trans_y"])

    def bind(ins, outs):
        x2, y, d2, dz, saved = _grad_operands(cop.attrs, ins, outs, np.empty)
        m, n = d2.shape
        calls, ab = [], blas_scalars(d2.dtype)
        db = outs.get("Bias@GRAD")
        if act != "none" or db or dz is not d2:
            mod = epilogues(act, cop.attrs["approximate"], d2.dtype.name, False,
                            alias=dz.ctypes.data == d2.ctypes.data)
            parts = np.empty((CHUNKS, 1, n), d2.dtype)
            T = pass_threads(m, n)
            calls.append(bind_workers(mod.backward, (saved, d2, dz, parts), [()] * T))
            if db:
                calls.append(functools.partial(sum_parts, parts, db[0].reshape(1, n)))
        if outs.get("X@GRAD"):     # dz @ op(Y)^T
            calls.append(gemm_call(dz, y, outs["X@GRAD"][0].reshape(x2.shape), False, not ty, ab))
        if outs.get("Y@GRAD"):     # d op(Y) = X^T @ dz; Y@GRAD its transpose when trans_y
            dy = outs["Y@GRAD"][0]
            calls.append(gemm_call(dz, x2, dy, True, False, ab) if ty else
                         gemm_call(x2, dz, dy, True, False, ab))
        return functools.partial(run_calls, tuple(calls))
    return bind


# ---------------------------------------------------------------- GPU
def _gpu(cop):
    ty = bool(cop.attrs["trans_y"])

    def bind(ins, outs):
        x2, y, b, z, out, mod = _forward_operands(cop.attrs, ins, outs, True)
        return gpu_util.sequence([
            gemm_thunk(x2.reshape((1,) + x2.shape), y.reshape((1,) + y.shape),
                       z.reshape(1, x2.shape[0], b.shape[0]), ONLY_BATCH, ONLY_BATCH, False, ty),
            gpu_util.launch_flat(mod.forward, out.size, gpu_util.flat(z), b,
                                 gpu_util.flat(out))])
    return bind


def _grad_gpu(cop):
    act = activation(cop.attrs)
    ty = bool(cop.attrs["trans_y"])

    def bind(ins, outs):
        from numba import cuda
        x2, y, d, dz, saved = _grad_operands(cop.attrs, ins, outs, cuda.device_array)
        (m, n), x3 = d.shape, x2.reshape((1,) + x2.shape)
        mod = epilogues(act, cop.attrs["approximate"], d.dtype.name, False, gpu=True)
        calls = []
        if dz is not d:
            calls.append(gpu_util.launch_flat(mod.backward, d.size, gpu_util.flat(saved),
                                              gpu_util.flat(d), gpu_util.flat(dz)))
        if outs.get("Bias@GRAD"):
            calls.append(gpu_util.launch_flat(mod.column_sums, n, gpu_util.flat(dz),
                                              outs["Bias@GRAD"][0]))
        dz3, y3 = dz.reshape(1, m, n), y.reshape((1,) + y.shape)
        if outs.get("X@GRAD"):
            calls.append(gemm_thunk(dz3, y3, outs["X@GRAD"][0].reshape(x3.shape), ONLY_BATCH,
                                    ONLY_BATCH, False, not ty))
        if outs.get("Y@GRAD"):
            dy3 = outs["Y@GRAD"][0].reshape(y3.shape)
            calls.append(gemm_thunk(dz3, x3, dy3, ONLY_BATCH, ONLY_BATCH, True, False) if ty
                         else gemm_thunk(x3, dz3, dy3, ONLY_BATCH, ONLY_BATCH, True, False))
        return gpu_util.sequence(calls)
    return bind


# ---------------------------------------------------------------- registration
register_op(OpDef(
    "fused_gemm_epilogue", (Slot("X"), Slot("Y"), Slot("Bias")),
    (Slot("Out"), Slot("ReserveSpace", optional=True)), _infer, _cpu, gpu=_gpu,
    attrs=ATTRS, grad=_grad_rule, traits=frozenset({FUSED}),
    doc="Out = act(flatten(X) @ op(Y) + Bias), ReserveSpace = the pre-activation (gelu), "
        "the epilogue applied per block of rows while in cache; made by fuse_gemm_epilogue"))
register_op(OpDef(
    "fused_gemm_epilogue_grad",
    (Slot("X"), Slot("Y"), Slot("Bias"), Slot("ReserveSpace", optional=True),
     Slot("Out", optional=True), Slot("Out@GRAD")),
    tuple(Slot(s, optional=True) for s in ("X@GRAD", "Y@GRAD", "Bias@GRAD", "DPreAct")),
    _grad_infer, _grad_cpu, gpu=_grad_gpu, attrs=ATTRS, inplace={"DPreAct": "Out@GRAD"},
    shape_only=("Bias",), traits=frozenset({NO_GRAD, FUSED}),
    doc="X@GRAD, Y@GRAD, Bias@GRAD of fused_gemm_epilogue: act's gradient and the bias sum "
        "in one pass over Out@GRAD (into DPreAct, in place), then the two GEMMs"))
