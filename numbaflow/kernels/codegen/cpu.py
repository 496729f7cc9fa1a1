"""The CPU elementwise loop template and its launcher.

One template serves every elementwise op (and, later, every fused group): the output's
iteration space is collapsed to (outer dims..., inner), each input gets element strides
over it (0 where it broadcasts), and the body is pasted into the innermost loop. After
collapsing, an input's inner stride is 1 (contiguous) or 0 (broadcast), which is baked
into the source so the inner loop is a plain vectorisable stream.

Outputs smaller than the iteration space (gradients of broadcast inputs) are computed
full-size into a scratch buffer owned by the bound kernel and summed down by `sum_to`.
"""
import functools

import numba
import numpy as np
from numba import njit

from . import cache
from ..registry import run_calls
from ..workshare import bind_workers
from .render import (ZERO_DIVISION_MESSAGE, ZERO_MODULO_MESSAGE, division_helpers,
                     inputs_used, render, uses_idiv)

PARALLEL_MIN_SIZE = 1 << 20   # below this, waking the pool's workers, ~30 us, costs more than it saves
BLOCK = 1 << 14               # elements per task along the inner dimension
SERIAL = np.empty(0, np.int64)  # the claim counter of a kernel run on one thread: none


def broadcast_strides(in_shapes, full_shape):
    """Collapse the iteration space; return (shape, strides[n_in][ndim], inner_kinds).

    `in_shapes` are already aligned to len(full_shape). Dims of size 1 are dropped and
    neighbouring dims merged where every input is contiguous (or broadcast) across both.
    """
    dims = [d for d, n in enumerate(full_shape) if n != 1]
    strides = []
    for s in in_shapes:
        st, acc = {}, 1
        for d in range(len(full_shape) - 1, -1, -1):
            st[d] = 0 if (s[d] == 1 and full_shape[d] != 1) else acc
            acc *= s[d]
        strides.append([st[d] for d in dims])
    shape = [full_shape[d] for d in dims]
    # merge dim k into k+1 where stride[k] == stride[k+1] * shape[k+1] for every input
    k = len(shape) - 2
    while k >= 0:
        if all(st[k] == st[k + 1] * shape[k + 1] for st in strides):
            shape[k + 1] *= shape[k]
            del shape[k]
            for st in strides:
                del st[k]
        k -= 1
    if not shape:
        shape, strides = [1], [[0] for _ in in_shapes]
    inner_kinds = tuple(1 if st[-1] else 0 for st in strides)
    return shape, strides, inner_kinds


def kernel_source(outputs, n_in, ndim, inner_kinds, float_dtype, in_dtypes=None,
                  checks=(), divides=None, aliases=()):
    """Source of one elementwise kernel module (a single function named `kernel`): a
    worker (workshare.py) claiming `tasks` row blocks at a time from `counter`, or, given
    an empty counter, doing every block itself; so one compiled kernel serves one thread
    and several (a `parallel=True` prange variant per body cost a parfor compile each).

    The inner loop runs over per-row slices indexed from 0: numba then knows every
    index is non-negative (no wraparound select), so LLVM emits contiguous vector loads.
    Broadcast (stride-0) inputs are loaded once per row.

    in_dtypes: the inputs' dtypes (integer arithmetic stays integer, see render.py).
    checks: [(Sym, message)] values that must be finite (NUMBAFLOW_CHECK_NAN_INF inside a
    fused kernel): the kernel raises FloatingPointError(message) for the first one, in
    this order, that is NaN or Inf anywhere.
    divides: what divides integers here, for the ZeroDivisionError (a fused kernel names
    its sub-ops; None: the op itself, which the executor names).
    aliases[k] = i: output k is input i's buffer (an in-place op). The loop then stores
    through input i's slice: given two slices, LLVM's runtime overlap check sees them
    overlap and falls back to its scalar loop (GELU's gradient in place: 11.4 ms
    against 1.2 ms for 1M float32); through one slice it vectorizes with no check.
    """
    aliases = tuple(aliases) or (-1,) * len(outputs)
    loads = [f"x{i}[jj]" if inner_kinds[i] else f"s{i}" for i in range(n_in)]
    checked = [sym for sym, _ in checks]
    body, exprs = render(list(outputs) + checked, loads, in_dtypes=in_dtypes)
    out_exprs, check_exprs = exprs[:len(outputs)], exprs[len(outputs):]
    idiv = uses_idiv(body)
    n_err = 1 + len(checks)        # err[0]: a zero divisor; err[1 + k]: check k failed
    used = inputs_used(list(outputs) + checked)   # a check may read an input no output reads
    out_args = [f"out{k}" for k in range(len(outputs))]
    in_args = [f"in{i}" for i in range(n_in)]
    src = [
        "import math",
        "import numpy as np",
        "from numba import njit",
        "from numbaflow.kernels.fastmath import erf as _erf, exp as _exp",
        "from numbaflow.kernels.workshare import claim",
        f"_F = np.{np.dtype(float_dtype).name}",
        # a zero integer divisor flags err[0] (1: `/`, 2: mod), raised after the loop
        division_helpers(body, "@njit(inline='always', nogil=True)", "err[0] = 1", "err[0] = 2"),
        "@njit(nogil=True, cache=True, error_model='numpy')",
        f"def kernel(shape, strides, nblk, block, tasks, {', '.join(out_args + in_args)}, "
        "counter):",
        f"    inner = shape[{ndim - 1}]",
        "    nrows = 1",
        f"    for d in range({ndim - 1}):",
        "        nrows *= shape[d]",
        "    total = nrows * nblk",
        "    serial = counter.shape[0] == 0",
    ]
    if idiv or checks:      # flags written by the loop, raised after it (see _idiv)
        src.append(f"    err = np.zeros({n_err}, np.int64)")
    src += [
        "    c = 0 if serial else claim(counter)",
        "    while c * tasks < total:",
        "     for t in range(c * tasks, min(c * tasks + tasks, total)):",
        "        r = t // nblk",
        "        j0 = (t - r * nblk) * block",
        "        n = min(block, inner - j0)",
        "        rem = r",
    ]
    src += [f"        b{i} = 0" for i in sorted(used)]
    if ndim > 1 and used:
        src += [f"        for d in range({ndim - 2}, -1, -1):",
                "            q = rem // shape[d]",
                "            idx = rem - q * shape[d]",
                "            rem = q"]
        src += [f"            b{i} += idx * strides[{i}, d]" for i in sorted(used)]
    for i in sorted(used):
        src.append(f"        x{i} = in{i}[b{i} + j0:b{i} + j0 + n]" if inner_kinds[i]
                   else f"        s{i} = in{i}[b{i}]")
    src += [f"        y{k} = x{aliases[k]}" if aliases[k] in used and inner_kinds[aliases[k]] else
            f"        y{k} = out{k}[r * inner + j0:r * inner + j0 + n]" for k in range(len(outputs))]
    src += ["        for jj in range(n):"]
    src += [f"            {line}" for line in body]
    src += [f"            y{k}[jj] = {e}" for k, e in enumerate(out_exprs)]
    for k, e in enumerate(check_exprs):
        src.append(f"            if not math.isfinite({e}):")
        src.append(f"                err[{1 + k}] = 1")
    src.append("     c = total if serial else claim(counter)")
    for code, text in ((1, ZERO_DIVISION_MESSAGE), (2, ZERO_MODULO_MESSAGE)) if idiv else ():
        message = f"{divides}: {text}" if divides else text
        src += [f"    if err[0] == {code}:", f"        raise ZeroDivisionError({message!r})"]
    for k, (_, message) in enumerate(checks):
        src += [f"    if err[{1 + k}]:", f"        raise FloatingPointError({message!r})"]
    return "\n".join(src) + "\n"


compiled_kernels = {}


def _compiled(outputs, n_in, ndim, inner_kinds, float_dtype, in_dtypes, checks, divides,
              aliases=()):
    key = (SymKey.of(outputs), n_in, ndim, inner_kinds, float_dtype, in_dtypes,
           SymKey.of([sym for sym, _ in checks]), tuple(m for _, m in checks), divides,
           aliases)
    fn = compiled_kernels.get(key)
    if fn is None:
        src = kernel_source(outputs, n_in, ndim, inner_kinds, float_dtype, in_dtypes, checks,
                            divides, aliases)
        fn = compiled_kernels[key] = cache.load_source(src, label="elementwise").kernel
    return fn


class SymKey:
    """Hashable structural key of a traced body, so equal bodies share one kernel."""

    @staticmethod
    def of(outputs):
        memo = {}

        def key(s):
            k = memo.get(id(s))
            if k is None:
                val = s.value if s.op != "cast" else str(s.value)
                if isinstance(val, float):
                    val = ("f", repr(val))
                k = (s.op, val, tuple(key(a) for a in s.args))
                memo[id(s)] = k
            return k
        return tuple(key(o) for o in outputs)


class ElementwiseKernel:
    """A traced body specialised to concrete shapes and dtypes; `bind` makes a thunk.

    outputs: traced Syms, one per produced output; out_shapes: the aligned shape each
    output is written at (the full iteration shape, or a broadcast input's shape);
    in_dtypes: the inputs' dtypes (None: every input float, the old contract);
    checks: [(Sym, message)] values checked for NaN/Inf inside the loop, divides: what
    divides integers (both: kernel_source).
    """

    def __init__(self, outputs, in_shapes, out_shapes, full_shape, float_dtype,
                 in_dtypes=None, checks=(), divides=None):
        self.full_shape = tuple(full_shape)
        self.out_shapes = [tuple(s) for s in out_shapes]
        self.size = int(np.prod(self.full_shape)) if self.full_shape else 1
        # outputs that merely pass an input through need no kernel: numpy copies/sums them
        self.passthrough = {k: o.value for k, o in enumerate(outputs) if o.op == "in"}
        computed = [o for k, o in enumerate(outputs) if k not in self.passthrough]
        self.computed_index = [k for k in range(len(outputs)) if k not in self.passthrough]
        self.in_shapes = [tuple(s) for s in in_shapes]
        shape, strides, inner_kinds = broadcast_strides(self.in_shapes, self.full_shape)
        self.shape = np.array(shape, dtype=np.int64)
        self.strides = np.array(strides, dtype=np.int64).reshape(len(in_shapes), len(shape))
        inner = shape[-1]
        self.block = min(BLOCK, inner) if inner > 0 else 1
        self.nblk = -(-inner // self.block) if inner > 0 else 0
        self.tasks = int(np.prod(shape[:-1])) * self.nblk     # row blocks
        self.kernel = None
        dts = None if in_dtypes is None else tuple(np.dtype(d).name for d in in_dtypes)
        self._spec = (tuple(computed), len(in_shapes), len(shape), inner_kinds,
                      np.dtype(float_dtype).name, dts, tuple(checks), divides)
        if computed or checks:
            self.kernel = _compiled(*self._spec)

    def _in_place_kernel(self, flat_in, kernel_outs):
        """The kernel variant storing through the input slices that outputs alias (see
        kernel_source), or the plain kernel when no output is an input's buffer."""
        aliases = []
        for out in kernel_outs:
            same = [i for i, a in enumerate(flat_in)
                    if self.in_shapes[i] == self.full_shape and a.size == out.size
                    and a.dtype == out.dtype        # the store goes through the input's type
                    and a.__array_interface__["data"][0] == out.__array_interface__["data"][0]]
            aliases.append(same[0] if same else -1)
        if all(i == -1 for i in aliases):
            return self.kernel
        return _compiled(*self._spec, tuple(aliases))

    def bind(self, ins, outs):
        """Return a zero-argument callable computing `outs` from `ins` (all contiguous)."""
        if self.size == 0:
            return _noop
        flat_in = [a.reshape(-1) for a in ins]
        post = []       # (source, its aligned shape, destination's aligned shape, destination)
        kernel_outs = []
        for k, out in enumerate(outs):
            target = self.out_shapes[k]
            if k in self.passthrough:
                i = self.passthrough[k]
                post.append((flat_in[i], self.in_shapes[i], target, out.reshape(-1)))
            elif target != self.full_shape:
                scratch = np.empty(self.size, dtype=out.dtype)
                kernel_outs.append(scratch)
                post.append((scratch, self.full_shape, target, out.reshape(-1)))
            else:
                kernel_outs.append(out.reshape(-1))
        calls = []
        if self.kernel is not None:
            kernel = self._in_place_kernel(flat_in, kernel_outs)
            geo = (self.shape, self.strides, self.nblk, self.block)
            T = 1 if self.size < PARALLEL_MIN_SIZE else \
                max(1, min(numba.get_num_threads(), self.tasks))
            if T == 1:
                calls.append(functools.partial(kernel, *geo, max(1, self.tasks), *kernel_outs,
                                               *flat_in, SERIAL))
            else:       # each worker claims about 1/4 of its share at a time
                tasks = max(1, -(-self.tasks // (4 * T)))
                calls.append(bind_workers(kernel, (*geo, tasks, *kernel_outs, *flat_in),
                                          [()] * T))
        for src, src_shape, target, dest in post:
            shape, (sst, dst), _ = broadcast_strides([src_shape, target], self.full_shape)
            summed = target != self.full_shape
            calls.append(functools.partial(sum_to, src, np.array(sst, dtype=np.int64),
                                           np.array(shape, dtype=np.int64),
                                           np.array(dst, dtype=np.int64), dest, summed))
        if len(calls) == 1:
            return calls[0]
        return functools.partial(run_calls, tuple(calls))


@njit(nogil=True, cache=True)
def sum_to(src, src_strides, shape, dst_strides, out, summed):
    """out = src summed down to out's shape (strides 0 on the summed dims), or copied
    (`summed` False; `out` may then be `src` itself, in place). Row by row over the
    collapsed iteration space, contiguous rows as slices (vectorised); compiled, not
    numpy, so that it can join a compiled segment."""
    ndim = shape.shape[0]
    inner = shape[ndim - 1]
    nrows = 1
    for d in range(ndim - 1):
        nrows *= shape[d]
    si, di = src_strides[ndim - 1], dst_strides[ndim - 1]
    if summed:
        out[:] = 0
    for r in range(nrows):
        rem, bs, bd = r, 0, 0
        for d in range(ndim - 2, -1, -1):
            q = rem // shape[d]
            idx = rem - q * shape[d]
            rem = q
            bs += idx * src_strides[d]
            bd += idx * dst_strides[d]
        if di == 0:                       # the whole row goes into one element
            acc = out[bd] if summed else 0.0
            if si == 1:
                x = src[bs:bs + inner]
                for j in range(inner):
                    acc += x[j]
            else:
                acc += src[bs] * inner
            out[bd] = acc
        elif si == 1 and di == 1:         # row slices indexed from 0: vector loads
            o, x = out[bd:bd + inner], src[bs:bs + inner]
            if summed:
                for j in range(inner):
                    o[j] += x[j]
            else:
                for j in range(inner):
                    o[j] = x[j]
        else:
            for j in range(inner):
                if summed:
                    out[bd + j * di] += src[bs + j * si]
                else:
                    out[bd + j * di] = src[bs + j * si]


def _noop():
    pass


