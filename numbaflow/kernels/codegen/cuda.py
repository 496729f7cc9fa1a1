"""The CUDA elementwise template: the same scalar bodies as the CPU template, rendered
into one grid-stride `@cuda.jit` kernel.

Each thread handles flat output indices i, i + gridsize, ...; the iteration shape is
collapsed on the host (`cpu.broadcast_strides`, shared with the CPU template). When it
is 1-D or 2-D (R, C) and every input is full-size, a last-axis broadcast (C,), a column
(R, 1) or a scalar — the common cases, `x + bias` among them — the fast kernel indexes
without any division: full inputs read [i], the others a column / row index that each
thread advances by its constant stride (one compare per element). Other broadcasts take
the general kernel, which decomposes i over the collapsed shape. Outputs smaller than the
iteration space (gradients of broadcast inputs) are computed full-size into a device
scratch buffer and summed down by a second kernel, `reduce_to`.
"""
import math
import types

import numpy as np

from ..gpu.gpu_util import configured, launch_dims
from . import cache
from .cpu import SymKey, broadcast_strides
from .render import division_helpers, inputs_used, render, uses_idiv


def _body(outputs, loads, in_dtypes, checks):
    """(rendered lines, output expressions, the lines flagging failed checks, whether
    the kernel takes the device's error record)."""
    body, exprs = render(list(outputs) + list(checks), loads, in_dtypes=in_dtypes)
    out_exprs, check_exprs = exprs[:len(outputs)], exprs[len(outputs):]
    n = len(check_exprs)
    flags = []
    for k, e in enumerate(check_exprs):      # k-th check: records n - k (see _nan_flag)
        flags += [f"if not math.isfinite({e}):", f"    _nan_flag(err, {n - k})"]
    return body, out_exprs, flags, uses_idiv(body) or bool(checks)


def kernel_source(outputs, n_in, ndim, float_dtype, in_dtypes=None, checks=()):
    """The general kernel: offsets from decomposing i over the collapsed shape.
    checks: Syms that must be finite (NUMBAFLOW_CHECK_NAN_INF inside a fused kernel)."""
    used = inputs_used(list(outputs) + list(checks))
    loads = [f"in{i}[b{i}]" for i in range(n_in)]
    body, out_exprs, flags, takes_err = _body(outputs, loads, in_dtypes, checks)
    args = [f"out{k}" for k in range(len(outputs))] + [f"in{i}" for i in range(n_in)]
    args += ["err"] if takes_err else []
    src = _header(float_dtype, body, bool(checks)) + [
        f"def kernel(shape, strides, size, {', '.join(args)}):",
        "    for i in range(cuda.grid(1), size, cuda.gridsize(1)):",
        "        rem = i",
    ]
    src += [f"        b{i} = 0" for i in sorted(used)]
    if used:
        src += [f"        for d in range({ndim - 1}, -1, -1):",
                "            q = rem // shape[d]",
                "            idx = rem - q * shape[d]",
                "            rem = q"]
        src += [f"            b{i} += idx * strides[{i}, d]" for i in sorted(used)]
    src += [f"        {line}" for line in body]
    src += [f"        out{k}[i] = {e}" for k, e in enumerate(out_exprs)]
    src += [f"        {line}" for line in flags]
    return "\n".join(src) + "\n"


# NUMBAFLOW_CHECK_NAN_INF in a fused kernel: a non-finite value of check k (of n) records
# ERR_NAN_INF with err[1] = n - k, so that the largest, the first check in program order
# (as on the CPU), is what remains; `raise_nan_check` reads it after the launch
_NAN_FLAG_SOURCE = """
@cuda.jit(device=True)
def _nan_flag(err, v):
    old = cuda.atomic.compare_and_swap(err, 0, {code})
    if old == 0 or old == {code}:
        cuda.atomic.max(err, 1, v)
"""


# `math` of the generated kernels under numba's CUDA simulator, which runs them as Python:
# Python's math raises on overflow and outside the domain (exp(1e4), log(-1)) where a GPU
# (and numba's CPU code) gives inf or NaN, so simulated kernels would fail where the
# device computes on, and NUMBAFLOW_CHECK_NAN_INF could not be tested there
SIMULATED_MATH = types.SimpleNamespace(exp=np.exp, log=np.log, sqrt=np.sqrt, tanh=np.tanh,
                                       sin=np.sin, cos=np.cos,
                                       erf=math.erf, isfinite=math.isfinite)


def _header(float_dtype, body, checks=False):
    # CUDA's erf and exp are fast already: `_erf` / `_exp` (kernels/fastmath.py on the CPU).
    # A zero integer divisor records ERR_INT_DIV / ERR_INT_MOD in the device's error record
    # (kernels cannot raise; gpu_errors.py), which the executor raises after the run.
    from ..gpu.gpu_errors import ERR_INT_DIV, ERR_INT_MOD, ERR_NAN_INF
    flag = "cuda.atomic.compare_and_swap(err, 0, {})"
    return ["import math", "import numpy as np", "from numba import config as _config, cuda",
            "if _config.ENABLE_CUDASIM:",
            "    from numbaflow.kernels.codegen.cuda import SIMULATED_MATH as math",
            "_erf = math.erf", "_exp = math.exp",
            f"_F = np.{np.dtype(float_dtype).name}",
            division_helpers(body, "@cuda.jit(device=True)", flag.format(ERR_INT_DIV),
                             flag.format(ERR_INT_MOD)),
            _NAN_FLAG_SOURCE.format(code=ERR_NAN_INF) if checks else "",
            "@cuda.jit(cache=True)"]


FULL, COLUMN, ROW, SCALAR = "f", "c", "r", "s"


def fast_kinds(shape, strides):
    """How each input is indexed by the fast kernel (FULL [i], COLUMN [i % C], ROW
    [i // C], SCALAR [0]) over the collapsed (R, C) space, or None when some input needs
    the general kernel."""
    if len(shape) == 1:
        C, pairs = shape[0], [(0, st[0]) for st in strides]
    elif len(shape) == 2:
        C, pairs = shape[1], [tuple(st) for st in strides]
    else:
        return None
    table = {(C, 1): FULL, (0, 1): COLUMN, (1, 0): ROW, (0, 0): SCALAR}
    if len(shape) == 1:
        table[(0, 1)] = FULL
    kinds = tuple(table.get(p) for p in pairs)
    return None if None in kinds else kinds


def fast_kernel_source(outputs, kinds, float_dtype, in_dtypes=None, checks=()):
    """The division-free kernel for `kinds` (see `fast_kinds`): kernel(size, C, outs, ins)
    (and the device's error record last when it divides integers or has `checks`)."""
    used = inputs_used(list(outputs) + list(checks))
    loads = {FULL: "in{0}[i]", COLUMN: "in{0}[c]", ROW: "in{0}[r]", SCALAR: "s{0}"}
    body, out_exprs, flags, takes_err = _body(
        outputs, [loads[k].format(i) for i, k in enumerate(kinds)], in_dtypes, checks)
    args = [f"out{k}" for k in range(len(outputs))] + [f"in{i}" for i in range(len(kinds))]
    args += ["err"] if takes_err else []
    track_c = any(kinds[i] in (COLUMN, ROW) for i in used)
    track_r = any(kinds[i] == ROW for i in used)
    # all index arithmetic unsigned (size and C are passed as uint64): numba then emits
    # no negative-index wraparound per access, and the loop is a bare compare and add
    src = _header(float_dtype, body, bool(checks)) + [
        f"def kernel(size, C, {', '.join(args)}):",
        "    i = np.uint64(cuda.grid(1))",
        "    step = np.uint64(cuda.gridsize(1))",
    ]
    src += [f"    s{i} = in{i}[0]" for i in sorted(used) if kinds[i] == SCALAR]
    if track_c:      # column c = i % C and row r = i // C, advanced without dividing
        src += ["    c = i % C", "    dc = step % C"]
    if track_r:
        src += ["    r = i // C", "    dr = step // C"]
    src += ["    while i < size:"]
    src += [f"        {line}" for line in body]
    src += [f"        out{k}[i] = {e}" for k, e in enumerate(out_exprs)]
    src += [f"        {line}" for line in flags]
    src += ["        i += step"]
    if track_c:
        src += ["        c += dc"]
        if track_r:
            src += ["        r += dr"]
        src += ["        if c >= C:", "            c -= C"]
        if track_r:
            src += ["            r += np.uint64(1)"]
    return "\n".join(src) + "\n"


_kernels = {}


def _compiled(outputs, n_in, ndim, float_dtype, kinds=None, in_dtypes=None, checks=()):
    """(kernel, whether it takes the device's error record last)."""
    key = (SymKey.of(outputs), n_in, ndim, float_dtype, kinds, in_dtypes, SymKey.of(checks))
    got = _kernels.get(key)
    if got is None:
        src = kernel_source(outputs, n_in, ndim, float_dtype, in_dtypes, checks) \
            if kinds is None else fast_kernel_source(outputs, kinds, float_dtype, in_dtypes,
                                                     checks)
        got = _kernels[key] = (cache.load_source(src, label="cuda_elementwise").kernel,
                               uses_idiv(src.splitlines()) or bool(checks))
    return got


_REDUCE_SRC = """
from numba import cuda

@cuda.jit(cache=True)
def reduce_to(src, dst, kept_shape, kept_strides, red_shape, red_strides, n_out, n_red):
    # dst[j] = sum of src over the reduced dims, for the kept-dims index j
    for j in range(cuda.grid(1), n_out, cuda.gridsize(1)):
        rem = j
        base = 0
        for d in range(kept_shape.shape[0] - 1, -1, -1):
            q = rem // kept_shape[d]
            base += (rem - q * kept_shape[d]) * kept_strides[d]
            rem = q
        acc = 0.0
        for r in range(n_red):
            rem = r
            off = base
            for d in range(red_shape.shape[0] - 1, -1, -1):
                q = rem // red_shape[d]
                off += (rem - q * red_shape[d]) * red_strides[d]
                rem = q
            acc += src[off]
        dst[j] = acc
"""


def _launch_dims(n):
    return launch_dims(n)


class CudaElementwiseKernel:
    """The GPU twin of `cpu.ElementwiseKernel`: same constructor, `bind` takes device
    arrays (C-contiguous) and returns a thunk that launches the kernel(s).

    checks: [(Sym, message)] values that must be finite (NUMBAFLOW_CHECK_NAN_INF in a
    fused kernel): the kernel records the first failing one in program order in the
    device's error record, and the thunk reads it after the launch (one small copy; the
    checked variant is a separate kernel, so nothing of this runs with the flag off)
    and raises FloatingPointError(message), as the CPU kernel does."""

    def __init__(self, outputs, in_shapes, out_shapes, full_shape, float_dtype,
                 in_dtypes=None, checks=()):
        from numba import cuda
        self.full_shape = tuple(full_shape)
        self.out_shapes = [tuple(s) for s in out_shapes]
        self.size = int(np.prod(self.full_shape)) if self.full_shape else 1
        shape, strides, _ = broadcast_strides([tuple(s) for s in in_shapes], self.full_shape)
        self.kinds = fast_kinds(shape, strides)
        if self.kinds is None:
            self.shape = cuda.to_device(np.array(shape, dtype=np.int64))
            self.strides = cuda.to_device(np.array(strides, dtype=np.int64).reshape(
                len(in_shapes), len(shape)))
            self.lead = (self.shape, self.strides, self.size)
        else:
            self.lead = (np.uint64(self.size), np.uint64(shape[-1]))
        dts = None if in_dtypes is None else tuple(np.dtype(d).name for d in in_dtypes)
        self.kernel, self.takes_err = _compiled(tuple(outputs), len(in_shapes), len(shape),
                                                np.dtype(float_dtype).name, self.kinds, dts,
                                                tuple(sym for sym, _ in checks))
        self.check_messages = tuple(message for _, message in checks)
        self.reduce = cache.load_source(_REDUCE_SRC, label="cuda_reduce").reduce_to

    def bind(self, ins, outs):
        from numba import cuda
        if self.size == 0:
            return lambda: None
        flat_in = [a.reshape(a.size) if a.ndim else a.reshape(1) for a in ins]
        kernel_outs, post = [], []
        for k, out in enumerate(outs):
            target = self.out_shapes[k]
            if target == self.full_shape:
                kernel_outs.append(out.reshape(out.size) if out.ndim else out.reshape(1))
                continue
            scratch = cuda.device_array(self.size, dtype=out.dtype)
            kernel_outs.append(scratch)
            post.append(self._reduction(scratch, target, out))
        blocks, threads = _launch_dims(self.size)
        launch = configured(self.kernel, blocks, threads)
        args = (*self.lead, *kernel_outs, *flat_in)
        if self.takes_err:
            from ..gpu.gpu_errors import error_record
            args += (error_record(),)

        messages = self.check_messages

        def thunk():
            launch(*args)
            for p in post:
                p()
            if messages:
                from ..gpu.gpu_errors import raise_nan_check
                raise_nan_check(messages)
        return thunk

    def _reduction(self, scratch, target, out):
        from numba import cuda
        full = self.full_shape
        cstride = [int(np.prod(full[d + 1:])) for d in range(len(full))]
        kept = [d for d in range(len(full)) if target[d] == full[d]]
        red = [d for d in range(len(full)) if target[d] != full[d]]
        kept_shape = np.array([full[d] for d in kept] or [1], np.int64)
        kept_strides = np.array([cstride[d] for d in kept] or [0], np.int64)
        red_shape = np.array([full[d] for d in red], np.int64)
        red_strides = np.array([cstride[d] for d in red], np.int64)
        n_out, n_red = int(np.prod(kept_shape)), int(np.prod(red_shape))
        dst = out.reshape(out.size) if out.ndim else out.reshape(1)
        args = [cuda.to_device(a) for a in (kept_shape, kept_strides, red_shape, red_strides)]
        blocks, threads = _launch_dims(n_out)
        launch = configured(self.reduce, blocks, threads)
        return lambda: launch(scratch, dst, *args, n_out, n_red)
