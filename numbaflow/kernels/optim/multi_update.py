"""The generated kernels that update many parameters in one call (how: fused_optim.py's
docstring), used by the fused optimizer ops and, for Adam's beta powers, by the single
adam / adamw ops (optim.py). Both import this file; it imports neither."""
import functools

import numpy as np

from .. import scalar as S
from ..codegen import cache
from ..codegen.cpu import BLOCK, PARALLEL_MIN_SIZE, SymKey
from ..codegen.render import inputs_used, render
from ..math.elementwise import align, first_float_dtype

CUDA_PARAM_BYTES = 4096 - 64     # the kernel-parameter limit, less offsets and total
CUDA_ARRAY_ARG_BYTES = 56        # a 1-D device array argument: 7 words

# Adam's beta powers: (output slot, input slot, attribute) of each
BETA_POWS = (("Beta1PowOut", "Beta1Pow", "beta1"), ("Beta2PowOut", "Beta2Pow", "beta2"))


def beta_pows_body(a, b1p, b2p):
    """The beta powers after a step (the body of the kernel that advances them)."""
    return b1p * a["beta1"], b2p * a["beta2"]


def bind_beta_pows(device, attrs, pow_ins, pow_outs):
    """One kernel advancing Adam's beta powers of every parameter: pow_outs[k][i] =
    pow_ins[k][i] * beta_k (k = 1, 2; one-element arrays, usually the same ones: in
    place), to run after the update that reads the old powers (the single adam / adamw
    op's second step, and the fused op's second launch on a GPU). The same generated
    kernel as the fused updates (one call / launch for any number of parameters), in the
    powers' dtype, so the numbers are those of the `scale` ops it replaces."""
    outputs = S.trace(beta_pows_body, attrs, len(pow_ins))
    n = len(pow_ins[0])
    in_dt = tuple(np.dtype(a[0].dtype).name for a in pow_ins)
    out_dt = tuple(np.dtype(a[0].dtype).name for a in pow_outs)
    fdt = first_float_dtype([np.dtype(d) for d in in_dt + out_dt]).name
    spec = (SymKey.of(outputs), (True,) * len(pow_ins), in_dt, out_dt, fdt, ())
    make = bind_cpu if device == "cpu" else bind_gpu
    return make("beta_pows", outputs, spec, [1] * n, list(pow_ins) + list(pow_outs), n)


# ---------------------------------------------------------------- CPU
def _loads(scalar, fmt_full, fmt_scalar):
    return [fmt_scalar.format(k) if s else fmt_full.format(k) for k, s in enumerate(scalar)]


def cpu_source(outputs, scalar, in_dtypes, out_dtypes, float_dtype, parallel, post=(),
               aliases=()):
    """Source of the CPU fused update: tasks (parameter, first element) over blocks, each
    parameter's arrays reached through `addr[i, slot]` (inputs, outputs, then one column
    per `post` step). `post` [(input column k, factor)]: after the loop, every parameter's
    one-element input k times factor is stored in its post column (Adam's beta powers,
    which the loop reads and which are usually advanced in place: hence after it).
    aliases[k] = j: output k is input j's buffer for every parameter (ParamOut is Param):
    the loop stores through input j's slice, as the elementwise template does (two slices
    of one buffer send LLVM's vectorized loop to its scalar fallback: fused_adamw over
    the GPT's 38 parameters took 1.03 ms that way, the 38 single adamw ops 0.20 ms), and
    computes every output before storing any, so no store overwrites a value still read."""
    n_in = len(scalar)
    aliases = tuple(aliases) or (-1,) * len(out_dtypes)
    used = sorted(set(inputs_used(outputs)) | {j for j in aliases if j >= 0})
    body, exprs = render(outputs, _loads(scalar, "x{}[jj]", "s{}"))
    loop = "prange" if parallel else "range"

    def view(col, dtype, size="sizes[i]"):
        return f"carray(_ptr(addr[i, {col}], np.{dtype}(0)), {size})"
    src = [
        "import math",
        "import numpy as np",
        "from numba import carray, njit, prange",
        "from numbaflow.kernels.optim.multi_update import address_as_pointer as _ptr",
        "from numbaflow.kernels.fastmath import erf as _erf, exp as _exp",
        f"_F = np.{float_dtype}",
        "",
        f"@njit(parallel={parallel}, nogil=True, cache=True, error_model='numpy')",
        "def kernel(tasks, block, sizes, addr):",
        f"    for t in {loop}(tasks.shape[0]):",
        "        i = tasks[t, 0]",
        "        j0 = tasks[t, 1]",
        "        n = min(block, sizes[i] - j0)",
    ]
    for k in used:
        src.append(f"        s{k} = {view(k, in_dtypes[k], 1)}[0]" if scalar[k] else
                   f"        x{k} = {view(k, in_dtypes[k])}[j0:j0 + n]")
    for k, dt in enumerate(out_dtypes):
        src.append(f"        y{k} = x{aliases[k]}" if aliases[k] >= 0 else
                   f"        y{k} = {view(n_in + k, dt)}[j0:j0 + n]")
    src += ["        for jj in range(n):"]
    src += [f"            {line}" for line in body]
    src += [f"            o{k} = {e}" for k, e in enumerate(exprs)]
    src += [f"            y{k}[jj] = o{k}" for k in range(len(exprs))]
    if post:
        src += ["    for i in range(addr.shape[0]):"]
    for j, (k, factor) in enumerate(post):
        dt = in_dtypes[k]       # the product in the power's dtype, as a `scale` op computes it
        src.append(f"        {view(n_in + len(out_dtypes) + j, dt, 1)}[0] = "
                   f"{view(k, dt, 1)}[0] * np.{dt}({factor!r})")
    return "\n".join(src) + "\n"


cpu_kernels = {}      # (spec, parallel, aliases) -> njit dispatcher


def _cpu_kernel(op_type, outputs, spec, parallel, aliases):
    key = (spec, parallel, aliases)
    fn = cpu_kernels.get(key)
    if fn is None:
        _, scalar, in_dt, out_dt, fdt, post = spec
        src = cpu_source(outputs, scalar, in_dt, out_dt, fdt, parallel, post, aliases)
        fn = cpu_kernels[key] = cache.load_source(src, label=f"{op_type}_cpu").kernel
    return fn


def _aliases(spec, addr):
    """aliases[k] = j when output k is input j's buffer for every parameter (same dtype,
    input shaped like the parameter), else -1 (see cpu_source)."""
    _, scalar, in_dt, out_dt, _, _ = spec
    n_in = len(scalar)
    return tuple(next((j for j in range(n_in) if not scalar[j] and in_dt[j] == dt
                       and (addr[:, j] == addr[:, n_in + k]).all()), -1)
                 for k, dt in enumerate(out_dt))


def bind_cpu(op_type, outputs, spec, sizes, arrays, n):
    """One njit call over every parameter: a partial of the kernel on (tasks, block,
    sizes, addresses); `thunk.keep` holds the arrays the addresses point into."""
    total = sum(sizes)
    tasks = np.array([(i, j0) for i in range(n) for j0 in range(0, sizes[i], BLOCK)],
                     dtype=np.int64).reshape(-1, 2)
    addr = np.empty((n, len(arrays)), dtype=np.int64)
    for col, slot in enumerate(arrays):
        for i, a in enumerate(slot):
            if not a.flags.c_contiguous:
                raise ValueError(f"{op_type}: array {col}/{i} must be C-contiguous")
            addr[i, col] = a.ctypes.data
    if total == 0 and not spec[5]:
        return _noop
    kernel = _cpu_kernel(op_type, outputs, spec, total >= PARALLEL_MIN_SIZE,
                         _aliases(spec, addr))
    thunk = functools.partial(kernel, tasks, BLOCK, np.array(sizes, np.int64), addr)
    thunk.keep = arrays
    return thunk


def _noop():
    pass


def _pointer_intrinsic():
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def address_as_pointer(typingctx, address, like):
        """The integer `address` as a pointer to values of `like`'s (scalar) type."""
        if not isinstance(address, types.Integer) or not isinstance(
                like, (types.Number, types.Boolean)):
            return None
        ptr = types.CPointer(like)

        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(ptr))
        return ptr(address, like), codegen
    return address_as_pointer


address_as_pointer = _pointer_intrinsic()


# ---------------------------------------------------------------- GPU
def cuda_source(outputs, scalar, float_dtype):
    """Source of the GPU fused update: a grid-stride loop over the concatenated elements
    of up to K parameters; in{k} / out{k} are tuples of K 1-D device arrays."""
    body, exprs = render(outputs, _loads(scalar, "in{}[i][j]", "in{}[i][0]"))
    args = [f"out{k}" for k in range(len(outputs))] + [f"in{k}" for k in range(len(scalar))]
    src = [
        "import math",
        "import numpy as np",
        "from numba import cuda",
        "_erf = math.erf",
        "_exp = math.exp",
        f"_F = np.{float_dtype}",
        "",
        "@cuda.jit(cache=True)",
        f"def kernel(offsets, total, {', '.join(args)}):",
        "    i = 0",
        "    for k in range(cuda.grid(1), total, cuda.gridsize(1)):",
        "        while offsets[i + 1] <= k:    # k only grows: i moves forward",
        "            i += 1",
        "        j = k - offsets[i]",
    ]
    src += [f"        {line}" for line in body]
    src += [f"        out{k}[i][j] = {e}" for k, e in enumerate(exprs)]
    return "\n".join(src) + "\n"


_cuda_kernels = {}


def _cuda_kernel(op_type, outputs, spec):
    fn = _cuda_kernels.get(spec)
    if fn is None:
        src = cuda_source(outputs, spec[1], spec[4])
        fn = _cuda_kernels[spec] = cache.load_source(src, label=f"{op_type}_cuda").kernel
    return fn


def max_params_per_launch(n_arrays):
    """Parameters one launch can take when each brings `n_arrays` device arrays."""
    return max(1, CUDA_PARAM_BYTES // (CUDA_ARRAY_ARG_BYTES * n_arrays))


def bind_gpu(op_type, outputs, spec, sizes, arrays, n):
    from ..gpu import gpu_util
    n_out = len(outputs)
    kmax = max_params_per_launch(len(arrays))
    k = min(kmax, 1 << max(0, n - 1).bit_length())
    kernel = _cuda_kernel(op_type, outputs, spec)
    flat = [[gpu_util.flat(a) for a in slot] for slot in arrays]
    launches = []
    for start in range(0, n, k):
        part = range(start, min(n, start + k))
        offsets = np.zeros(k + 1, np.int64)
        offsets[1:len(part) + 1] = np.cumsum([sizes[i] for i in part])
        offsets[len(part) + 1:] = offsets[len(part)]
        total = int(offsets[-1])
        if total == 0:
            continue
        # pad every tuple to k entries (never indexed: their element ranges are empty)
        tuples = [tuple(slot[i] for i in part) + (slot[part[0]],) * (k - len(part))
                  for slot in flat]
        args = (gpu_util.to_device(offsets), total, *tuples[-n_out:], *tuples[:-n_out])
        launch = gpu_util.configured(kernel, *gpu_util.launch_dims(total))
        launches.append(functools.partial(launch, *args))
    return gpu_util.sequence(launches)
