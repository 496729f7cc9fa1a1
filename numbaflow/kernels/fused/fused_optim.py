"""Fused optimizer updates: one kernel updates every parameter of one optimizer type and
dtype (what `fuse_all_optimizer_ops` emits).

`fused_sgd`, `fused_momentum`, `fused_adam` and `fused_adamw` are made by `fused_optimizer_op` from the
single op's OpDef: the same slot names and attributes, every slot duplicable (entry i of
each slot belongs to parameter i; `LearningRate[i]` may repeat one variable or differ per
parameter, as `ParamAttr(learning_rate=...)` gives each such parameter its own scaled
learning-rate variable), and the kernel is generated from the single op's scalar body,
so the numbers are the unfused ones bit for bit. One op per optimizer type rather than
one op with a `type` attribute: each fused op's slots and attributes are exactly its base
op's, which `verify` checks against the schema, and a new optimizer gets its fused twin
with one `fused_optimizer_op(...)` line.

Kernels. Every input of parameter i is shaped like the parameter ("full") or holds one
element ("scalar": learning rates, Adam's beta powers); a slot is scalar when all its
entries have one element, and then the kernel loads it once per parameter.

* CPU: one `@njit` function per (body, dtypes, slot kinds) whatever the number of
  parameters. It walks a task table (parameter, first element) over blocks of the
  parameters (prange when the total is large) and reaches parameter i's arrays through a
  table of data addresses, `addr[i, slot]`. So a step is one native call on three small
  arrays: no per-parameter dispatch or argument unboxing, and no recompilation for a model
  with another number of parameters (a tuple of N arrays would compile once per N and
  unbox every array at each call: measured 34 s to compile and 100 us per call for
  N = 200). The bound thunk keeps the arrays alive (`thunk.keep`; the Plan holds them too).
* GPU: one grid-stride `@cuda.jit` launch over the concatenation of the parameters'
  elements, with per-parameter offsets; the arrays travel as tuples (one per slot) indexed
  by the parameter number. CUDA caps a launch's arguments at 4 KiB (a 1-D device array
  takes 56 bytes), so a launch takes at most `max_params_per_launch` parameters (sgd 18,
  momentum 12, adam 7) and a larger group is split into launches of that many; the
  tuples are padded (to a power of two below that cap) so few kernel variants compile.

Adam's beta powers: `fused_adam` / `fused_adamw` take the single op's optional
Beta1PowOut / Beta2PowOut (what the optimizer emits, in place). The update reads the old
powers, so they are advanced after it: on the CPU by a loop over the parameters at the
end of the same kernel, on a GPU by one more launch (`bind_beta_pows`; a grid-stride
launch cannot wait for all its threads' reads).
"""
import functools

import numpy as np

from .. import scalar as S
from ..codegen import cache
from ..codegen.cpu import BLOCK, PARALLEL_MIN_SIZE, SymKey
from ..codegen.render import inputs_used, render
from ..math.elementwise import first_float_dtype, align
from ..optim.optim import BETA_POWS, beta_pows_body, has_beta_pows
from ..registry import (FUSED, NO_GRAD, OPTIMIZER, InferContext, OpDef, Slot, get_op_def, numel, register_op,
    sequence)

CUDA_PARAM_BYTES = 4096 - 64     # the kernel-parameter limit, less offsets and total
CUDA_ARRAY_ARG_BYTES = 56        # a 1-D device array argument: 7 words


def fused_type_of(op_type):
    """The fused op for a single optimizer op type, or None."""
    fused = f"fused_{op_type}"
    return fused if fused in FUSED_TYPES else None


FUSED_TYPES = set()


def _body_outputs(base):
    """The output slots `base`'s body computes (not adam's Beta1PowOut/Beta2PowOut: one
    element each, written after the update by `bind_beta_pows`)."""
    return base.outputs[:len(S.trace(base.body, dict(base.attrs), len(base.inputs)))]


def _pow_outputs(base):
    """The fused op's Beta1PowOut/Beta2PowOut slots when `base` advances the beta powers."""
    return tuple(Slot(out, True, True) for out, _, _ in BETA_POWS) if has_beta_pows(base) \
        else ()


def fused_optimizer_op(base_type):
    """Register `fused_<base_type>`: the update `base_type` over any number of parameters."""
    base = get_op_def(base_type)
    if base.body is None or not base.has(OPTIMIZER):
        raise ValueError(f"fused_optimizer_op: {base_type} is not an optimizer op with a "
                         f"scalar body")
    fused = f"fused_{base_type}"

    def dup(slots):
        return tuple(Slot(s.name, s.optional, True, s.no_grad) for s in slots)
    FUSED_TYPES.add(fused)
    return register_op(OpDef(
        type=fused, inputs=dup(base.inputs),
        outputs=dup(_body_outputs(base)) + _pow_outputs(base),
        infer=functools.partial(_infer, base), cpu=functools.partial(_factory, base, "cpu"),
        gpu=functools.partial(_factory, base, "gpu"), attrs=dict(base.attrs),
        traits=frozenset((OPTIMIZER, NO_GRAD, FUSED)),
        doc=f"{base_type} over N parameters at once: entry i of every slot belongs to "
            f"parameter i ({base.doc})"))


# ---------------------------------------------------------------- shape inference
def _infer(base, ctx):
    """Each parameter's outputs by the base op's inference, after checking that every
    slot has one entry per parameter and the entries fit the fused kernel."""
    fused = f"fused_{base.type}"
    n = len(ctx.inputs("Param"))
    present = [s.name for s in base.inputs if ctx.in_infos.get(s.name)]
    for s in base.inputs:
        k = len(ctx.inputs(s.name))
        if (k or not s.optional) and k != n:
            raise ctx.error(f"slot {s.name} has {k} entries but Param has {n}; every slot "
                            f"needs one entry per parameter")
    for name in present:
        dts = {np.dtype(i.dtype) for i in ctx.inputs(name)}
        if len(dts) > 1:
            raise ctx.error(f"slot {name} mixes dtypes {sorted(map(str, dts))}; fuse "
                            f"parameters of one dtype per {fused} op")
    result = {s.name: [] for s in _body_outputs(base)}
    fulls = []
    for i in range(n):
        sub = InferContext(base.type, ctx.attrs, {k: [ctx.inputs(k)[i]] for k in present},
                           {k: [ctx.name(k, i)] for k in present})
        out = base.infer(sub)
        for s in _body_outputs(base):
            info = out.get(s.name)
            if info is not None:
                result[s.name].append(info)
        fulls.append(tuple(out["ParamOut"].shape))
    if _pow_outputs(base):
        result.update({out: ctx.inputs(src) for out, src, _ in BETA_POWS})
    for name in present:
        infos = ctx.inputs(name)
        if all(_size(i.shape) == 1 for i in infos):
            continue                        # a scalar slot
        for i, (info, full) in enumerate(zip(infos, fulls)):
            shape = align(info.shape, len(full), -1) if len(info.shape) <= len(full) \
                else tuple(info.shape)
            if not _same_shape(shape, full):
                raise ctx.error(
                    f"{name}[{i}] ({ctx.name(name, i)}) has shape {tuple(info.shape)} but "
                    f"parameter {i} has {full}; in a fused update a slot holds one element "
                    f"for every parameter or is shaped like each parameter")
    return {k: v for k, v in result.items() if v}


def _size(shape):
    return -1 if any(d < 0 for d in shape) else numel(shape)


def _same_shape(a, b):
    return len(a) == len(b) and all(x == y or x == -1 or y == -1 for x, y in zip(a, b))


# ---------------------------------------------------------------- kernel factory
def _factory(base, device, cop):
    """OpDef.cpu / .gpu: specialise the fused update to the concrete shapes."""
    ins = [s.name for s in base.inputs if cop.in_infos.get(s.name)]
    outs = [s.name for s in _body_outputs(base) if cop.out_infos.get(s.name)]
    n = len(cop.in_infos["Param"])
    traced = S.trace(base.body, cop.attrs, len(ins))
    wanted = tuple(traced[k] for k, s in enumerate(_body_outputs(base)) if s.name in outs)
    scalar = tuple(all(_size(i.shape) == 1 for i in cop.in_infos[k]) for k in ins)
    sizes = [numel(i.shape) for i in cop.out_infos["ParamOut"]]
    in_dt = tuple(np.dtype(cop.in_infos[k][0].dtype).name for k in ins)
    out_dt = tuple(np.dtype(cop.out_infos[k][0].dtype).name for k in outs)
    fdt = first_float_dtype([np.dtype(d) for d in in_dt + out_dt]).name
    pows = [(out, src, beta) for out, src, beta in BETA_POWS if cop.out_infos.get(out)]
    if pows and len(pows) != len(BETA_POWS):
        raise ValueError(f"{cop.type}: output {pows[0][0]} is given without the other beta "
                         f"power's; give both Beta1PowOut and Beta2PowOut, or neither")
    # CPU: the kernel advances the powers itself after its loop, (input column, factor)
    post = tuple((ins.index(src), float(cop.attrs[beta])) for _, src, beta in pows) \
        if device == "cpu" else ()
    spec = (SymKey.of(wanted), scalar, in_dt, out_dt, fdt, post)

    def bind(ins_arrays, outs_arrays):
        arrays = [ins_arrays[k] for k in ins] + [outs_arrays[k] for k in outs]
        if device == "cpu":
            return _bind_cpu(cop.type, wanted, spec, sizes,
                             arrays + [outs_arrays[out] for out, _, _ in pows], n)
        update = _bind_gpu(cop.type, wanted, spec, sizes, arrays, n)
        if not pows:
            return update
        # GPU: a second launch, after every thread of the update has read the old powers
        return sequence([update, bind_beta_pows(
            device, cop.attrs, [ins_arrays[src] for _, src, _ in pows],
            [outs_arrays[out] for out, _, _ in pows])])
    return bind


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
    make = _bind_cpu if device == "cpu" else _bind_gpu
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
        "from numbaflow.kernels.fused.fused_optim import address_as_pointer as _ptr",
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


_cpu_kernels = {}      # (spec, parallel, aliases) -> njit dispatcher


def _cpu_kernel(op_type, outputs, spec, parallel, aliases):
    key = (spec, parallel, aliases)
    fn = _cpu_kernels.get(key)
    if fn is None:
        _, scalar, in_dt, out_dt, fdt, post = spec
        src = cpu_source(outputs, scalar, in_dt, out_dt, fdt, parallel, post, aliases)
        fn = _cpu_kernels[key] = cache.load_source(src, label=f"{op_type}_cpu").kernel
    return fn


def _aliases(spec, addr):
    """aliases[k] = j when output k is input j's buffer for every parameter (same dtype,
    input shaped like the parameter), else -1 (see cpu_source)."""
    _, scalar, in_dt, out_dt, _, _ = spec
    n_in = len(scalar)
    return tuple(next((j for j in range(n_in) if not scalar[j] and in_dt[j] == dt
                       and (addr[:, j] == addr[:, n_in + k]).all()), -1)
                 for k, dt in enumerate(out_dt))


def _bind_cpu(op_type, outputs, spec, sizes, arrays, n):
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


def _bind_gpu(op_type, outputs, spec, sizes, arrays, n):
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


from ..optim import optim_extra  # noqa: E402,F401  (registers adamw, fused below)

for _base in ("sgd", "momentum", "adam", "adamw"):
    fused_optimizer_op(_base)
