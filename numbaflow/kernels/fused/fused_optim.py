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
launch cannot wait for all its threads' reads). The kernels themselves are generated in
../optim/multi_update.py, which the single adam / adamw ops use too.
"""
import functools

import numpy as np

from .. import scalar as S
from ..codegen.cpu import SymKey
from ..math.elementwise import align, first_float_dtype
from ..optim.multi_update import BETA_POWS, bind_beta_pows, bind_cpu, bind_gpu
from ..optim.optim import has_beta_pows
from ..registry import (FUSED, NO_GRAD, OPTIMIZER, InferContext, OpDef, Slot, get_op_def, numel, register_op,
    sequence)

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
            return bind_cpu(cop.type, wanted, spec, sizes,
                             arrays + [outs_arrays[out] for out, _, _ in pows], n)
        update = bind_gpu(cop.type, wanted, spec, sizes, arrays, n)
        if not pows:
            return update
        # GPU: a second launch, after every thread of the update has read the old powers
        return sequence([update, bind_beta_pows(
            device, cop.attrs, [ins_arrays[src] for _, src, _ in pows],
            [outs_arrays[out] for out, _, _ in pows])])
    return bind


from ..optim import optim_extra  # noqa: E402,F401  (registers adamw, fused below)

for _base in ("sgd", "momentum", "adam", "adamw"):
    fused_optimizer_op(_base)
