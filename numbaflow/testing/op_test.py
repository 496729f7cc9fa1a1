"""Table-driven op tests: every op's forward against numpy, its gradient against central
finite differences in float64.

A test is a row, not a subclass: an `OpCase` names the op, how to make its inputs, its
attrs and a numpy reference. Three checks run a row:

* `check_output(case, dtype)` builds a one-op `Program` (data variables fed, every output
  fetched), verifies the IR, runs it with `static.Executor(CPUPlace())` and compares every
  output the reference returns (floats to a tolerance, ints and bools exactly, shapes and
  dtypes exactly).
* `check_grad(case)` projects the outputs onto fixed random weights (JAX's `check_vjp`
  with one random cotangent): loss = sum_k sum(out_k * W_k), built from registered ops;
  `static.gradients` appends the backward, and every element of every analytic gradient is
  compared with central differences of the same loss, computed by re-running the forward
  kernel eagerly with one input element moved by +-eps.
* `check_inplace(case, dtype)` (ops declaring `OpDef.inplace`, e.g. optimizer updates)
  binds each in-place output to its input's persistable variable, as training does.

The interface follows Paddle's OpTest (`check_output` / `check_grad`), the table follows
JAX's GradTestSpec. Keep inputs small (<= ~60 elements): finite differences run the forward
kernel twice per element.
"""
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..executor import CPUPlace, Executor, Scope
from ..graph import Program, gradients, verify
from ..kernels.registry import NO_GRAD, build_cpu_kernel, get_op_def

# Forward tolerances by dtype (rtol, atol); a row's rtol/atol replace them.
FORWARD_TOL = {np.dtype("float32"): (1e-5, 1e-6), np.dtype("float64"): (1e-10, 1e-12)}


@dataclass
class OpCase:
    """One row of the op table.

    op: registered op type. inputs: {slot: maker} where a maker is `callable(rng) -> array`,
    or a list of makers for a duplicable slot; float arrays are cast to the dtype under
    test, other dtypes are kept. ref: `callable(inputs, attrs) -> {out_slot: array or
    [arrays]}`, given the inputs as fed and the attrs completed with the op's defaults; it
    must return the dtype the op should produce. The harness creates exactly the outputs
    the reference returns (plus required ones).
    grad_inputs: slots whose gradient is checked (None: every float input slot not marked
    no_grad, unless the op is NO_GRAD). outputs_for_grad: outputs entering the loss (None:
    every float output the reference returns). dtypes: float dtypes the forward runs in (one entry for ops
    without float inputs).
    """
    op: str
    inputs: dict
    ref: Optional[Callable] = None
    attrs: dict = field(default_factory=dict)
    grad_inputs: Optional[tuple] = None
    outputs_for_grad: Optional[tuple] = None
    dtypes: tuple = ("float32", "float64")
    rtol: Optional[float] = None
    atol: Optional[float] = None
    grad_rtol: float = 1e-6
    grad_atol: float = 1e-8
    eps: float = 1e-6
    id: str = ""

    def __post_init__(self):
        self.id = self.id or self.op

    def full_attrs(self):
        attrs = dict(get_op_def(self.op).attrs)
        attrs.update(self.attrs)
        return attrs


# ---------------------------------------------------------------- input makers
def uniform(shape, lo=-1.0, hi=1.0):
    """Floats uniform in [lo, hi)."""
    return lambda rng: rng.uniform(lo, hi, shape)


def away_from_zero(shape, lo=0.2, hi=2.0):
    """Floats with |x| in [lo, hi] and a random sign: no kink of relu/abs within eps."""
    return lambda rng: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def distinct(shape, offset=0.0, spacing=0.1):
    """Pairwise distinct floats (a shuffled grid): max/min/argmax have no ties.

    Two makers with offsets differing by less than `spacing` never produce equal values.
    """
    def make(rng):
        n = int(np.prod(shape))
        return (rng.permutation(n) - n / 2.0).reshape(shape) * spacing + offset
    return make


def ints(shape, lo, hi, dtype="int64"):
    """Integers in [lo, hi)."""
    return lambda rng: rng.integers(lo, hi, shape).astype(dtype)


def const(value, dtype=None):
    """A fixed array (copied on each call)."""
    return lambda rng: np.array(value, dtype=dtype)


# ---------------------------------------------------------------- reference helpers
def paddle_align(a, ndim, axis):
    """Paddle's elementwise `axis`: a lower-rank operand's dims start at `axis` (-1: numpy's
    trailing alignment)."""
    if axis == -1 or a.ndim == ndim:
        return a
    return a.reshape((1,) * axis + a.shape + (1,) * (ndim - axis - a.ndim))


def ref_unary(fn, dtype=None):
    """Reference of an X -> Out op: fn(X as float64, attrs), cast to X's dtype (or `dtype`)."""
    return lambda ins, a: {"Out": np.asarray(fn(ins["X"].astype(np.float64), a))
                           .astype(dtype or ins["X"].dtype)}


def ref_binary(fn, out_dtype=None):
    """Reference of an (X, Y) -> Out elementwise op with Paddle's `axis`: fn on float64
    operands, cast to X's dtype (or `out_dtype`)."""
    def ref(ins, a):
        x, y = ins["X"], ins["Y"]
        nd = max(x.ndim, y.ndim)
        out = fn(paddle_align(x, nd, a["axis"]).astype(np.float64),
                 paddle_align(y, nd, a["axis"]).astype(np.float64))
        return {"Out": np.asarray(out).astype(out_dtype or x.dtype)}
    return ref


# ---------------------------------------------------------------- program building
def make_inputs(case, dtype="float64"):
    """{slot: array or [arrays]}: the row's inputs, float ones cast to `dtype`.

    The random stream depends only on the row id, so every dtype sees the same values.
    """
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))

    def one(maker):
        a = np.asarray(maker(rng))
        if a.dtype.kind == "f":
            a = a.astype(dtype)
        return np.ascontiguousarray(a)
    return {slot: [one(m) for m in mk] if isinstance(mk, (list, tuple)) else one(mk)
            for slot, mk in case.inputs.items()}


def grad_inputs(gdef, arrays, fwd_out, rng):
    """The inputs of the grad op `gdef` (an OpDef) after a forward run: the forward's
    inputs `arrays` and outputs `fwd_out` by slot, `<out>@GRAD` uniform in [-1, 1) from
    `rng` with the output's shape; None when a slot it needs has no value. (The CUDA
    simulator tests and the compile gate feed grad kernels this way.)"""
    ins = {}
    for s in gdef.inputs:
        if s.name.endswith("@GRAD"):
            ref = fwd_out.get(s.name[:-5])
            if ref is None:
                return None
            mk = lambda a: rng.uniform(-1, 1, a.shape).astype(a.dtype)  # noqa: E731
            ins[s.name] = [mk(a) for a in ref] if isinstance(ref, list) else mk(ref)
        elif s.name in arrays:
            ins[s.name] = arrays[s.name]
        elif s.name in fwd_out:
            ins[s.name] = fwd_out[s.name]
        elif not s.optional:
            return None
    return ins


def append_one_op(block, op_type, arrays, attrs, out_counts, grad_slots=()):
    """Append data variables for `arrays` and one `op_type` op to `block`.

    out_counts: {output slot: None (one variable) or n (a list of n)}; required output
    slots missing from it get one variable. Returns (input vars, output vars), each
    {slot: Variable or [Variables]}.
    """
    opdef = get_op_def(op_type)
    in_vars = {}
    for slot, a in arrays.items():
        def data(name, arr):
            return block.create_var(name, arr.shape, arr.dtype, is_data=True,
                                    stop_gradient=slot not in grad_slots)
        in_vars[slot] = [data(f"{slot}_{i}", x) for i, x in enumerate(a)] \
            if isinstance(a, list) else data(slot, a)
    counts = {s.name: None for s in opdef.outputs if not s.optional}
    counts.update(out_counts)
    out_vars = {}
    for slot, n in counts.items():
        name = f"out_{slot}"
        out_vars[slot] = [block.create_var(f"{name}_{i}") for i in range(n)] if n is not None \
            else block.create_var(name)
    block.append_op(op_type, in_vars, out_vars, attrs)
    return in_vars, out_vars


def _flat(d):
    """[(label, value)] of a {slot: x or [xs]} dict, lists expanded as slot[i]."""
    out = []
    for slot, v in d.items():
        if isinstance(v, list):
            out += [(f"{slot}[{i}]", x) for i, x in enumerate(v)]
        else:
            out.append((slot, v))
    return out


def _counts(structure):
    return {slot: len(v) if isinstance(v, list) else None for slot, v in structure.items()}


def _feed(in_vars, arrays):
    """{variable name: array} for parallel {slot: var or [vars]} / {slot: array or [arrays]}."""
    return {var.name: arrays[slot] if not isinstance(v, list) else arrays[slot][i]
            for slot, v in in_vars.items()
            for i, var in enumerate(v if isinstance(v, list) else [v])}


def _run(program, feed, fetch):
    """Run `program` in a fresh scope."""
    return Executor(CPUPlace()).run(program, feed=feed, fetch_list=fetch, scope=Scope())


def run_single_op(op_type, arrays, attrs=None, out_counts=None):
    """Run one op through a real Program and the Executor; {slot: array or [arrays]}.

    out_counts as in `append_one_op` (default: the op's required outputs).
    """
    program = Program()
    in_vars, out_vars = append_one_op(program.global_block(), op_type, arrays, attrs or {},
                                      out_counts or {})
    verify(program)
    fetched = iter(_run(program, _feed(in_vars, arrays), [v for _, v in _flat(out_vars)]))
    return {slot: [next(fetched) for _ in v] if isinstance(v, list) else next(fetched)
            for slot, v in out_vars.items()}


# ---------------------------------------------------------------- forward check
def _where(case, label):
    return f"{case.op} [{case.id}] {label}"


def assert_close(where, got, want, rtol, atol):
    """Shapes and dtypes exactly; ints/bools exactly; floats to rtol/atol."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError(f"{where}: shape {got.shape}, expected {want.shape}")
    if got.dtype != want.dtype:
        raise AssertionError(f"{where}: dtype {got.dtype}, expected {want.dtype}")
    if want.dtype.kind != "f":
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)
            first = tuple(int(i) for i in bad[0])
            raise AssertionError(f"{where}: {len(bad)} of {want.size} elements differ; first at "
                                 f"{first}: got {got[first]}, expected {want[first]}\n"
                                 f"got\n{got}\nexpected\n{want}")
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(g - w)
    bound = atol + rtol * np.abs(w)
    if not np.all(err <= bound):       # NaN compares False: fails too
        k = np.unravel_index(np.nanargmax(np.where(np.isnan(err), np.inf, err - bound)), err.shape)
        raise AssertionError(
            f"{where}: {int(np.sum(~(err <= bound)))} of {w.size} elements outside "
            f"rtol={rtol:g} atol={atol:g}; worst at {tuple(int(i) for i in k)}: got "
            f"{g[k]:.17g}, expected {w[k]:.17g} (abs err {err[k]:.3g})\ngot\n{got}\n"
            f"expected\n{want}")


def _copy(arrays):
    return {k: [a.copy() for a in v] if isinstance(v, list) else v.copy()
            for k, v in arrays.items()}


def expected_outputs(case, arrays):
    """The reference's outputs for `arrays` (given copies: a reference cannot spoil them)."""
    if case.ref is None:
        raise ValueError(f"{case.id}: the row has no numpy reference (ref=None)")
    return case.ref(_copy(arrays), case.full_attrs())


def check_output(case, dtype="float64"):
    """Run `case` in `dtype` through a one-op Program and compare with `case.ref`."""
    arrays = make_inputs(case, dtype)
    expected = expected_outputs(case, arrays)
    got = run_single_op(case.op, arrays, case.attrs, _counts(expected))
    rtol, atol = FORWARD_TOL[np.dtype(dtype)]
    rtol = case.rtol if case.rtol is not None else rtol
    atol = case.atol if case.atol is not None else atol
    for slot, want in expected.items():
        pairs = zip(got[slot], want) if isinstance(want, list) else [(got[slot], want)]
        if isinstance(want, list) and len(got[slot]) != len(want):
            raise AssertionError(_where(case, f"{slot}: {len(got[slot])} outputs, expected "
                                              f"{len(want)}"))
        for i, (g, w) in enumerate(pairs):
            label = f"{slot}[{i}]" if isinstance(want, list) else slot
            assert_close(_where(case, f"output {label} ({dtype})"), g, w, rtol, atol)


def check_inplace(case, dtype="float64"):
    """Run `case` the way a training program runs an update, and compare with `case.ref`.

    Every input is a persistable variable set in the scope, and every output the OpDef may
    write in place (`OpDef.inplace`, e.g. ParamOut -> Param) is bound to that input's
    variable, so the kernel reads and writes one buffer.
    """
    opdef = get_op_def(case.op)
    if not opdef.inplace:
        raise ValueError(f"{case.id}: {case.op} declares no in-place outputs")
    arrays = make_inputs(case, dtype)
    expected = expected_outputs(case, arrays)
    program, scope = Program(), Scope()
    block = program.global_block()
    in_vars = {}
    for slot, a in arrays.items():
        parts = a if isinstance(a, list) else [a]
        in_vars[slot] = []
        for k, part in enumerate(parts):
            name = f"{slot}_{k}" if isinstance(a, list) else slot
            in_vars[slot].append(block.create_var(name, part.shape, part.dtype,
                                                  persistable=True))
            scope.set(name, part)
    out_vars = {slot: in_vars[opdef.inplace[slot]] if slot in opdef.inplace
                else [block.create_var(f"out_{slot}")] for slot in expected}
    block.append_op(case.op, in_vars, out_vars, case.attrs)
    verify(program)
    flat = [v for slot in expected for v in out_vars[slot]]
    fetched = iter(Executor(CPUPlace()).run(program, fetch_list=flat, scope=scope))
    got = [[next(fetched) for _ in out_vars[slot]] for slot in expected]
    got = [g if isinstance(expected[slot], list) else g[0] for slot, g in zip(expected, got)]
    rtol, atol = FORWARD_TOL[np.dtype(dtype)]
    for (slot, want), g in zip(expected.items(), got):
        pairs = zip(g, want) if isinstance(want, list) else [(g, want)]
        for k, (gk, wk) in enumerate(pairs):
            assert_close(_where(case, f"in-place output {slot}[{k}] ({dtype})"), gk, wk,
                         case.rtol if case.rtol is not None else rtol,
                         case.atol if case.atol is not None else atol)


# ---------------------------------------------------------------- gradient check
def grad_slots(case):
    """The input slots whose gradient `check_grad` compares."""
    if case.grad_inputs is not None:
        return tuple(case.grad_inputs)
    opdef = get_op_def(case.op)
    if opdef.has(NO_GRAD):
        return ()
    arrays = make_inputs(case)
    return tuple(s.name for s in opdef.inputs
                 if s.name in arrays and not s.no_grad and
                 all(a.dtype.kind == "f" for _, a in _flat({s.name: arrays[s.name]})))


def build_grad_program(case):
    """The float64 program: the op, loss = sum_k sum(out_k * W_k), and its gradients.

    Returns (program, arrays (the op's inputs), feed {name: array} (inputs and weights),
    {out label: W array}, [(input label, input var, grad var or None)]).
    """
    arrays = make_inputs(case, "float64")
    slots = grad_slots(case)
    out_counts = _counts(expected_outputs(case, arrays))
    program = Program()
    block = program.global_block()
    in_vars, out_vars = append_one_op(block, case.op, arrays, case.attrs, out_counts, slots)
    wanted = case.outputs_for_grad or list(out_counts)
    rng = np.random.default_rng(zlib.crc32(case.id.encode()) + 1)
    weights, feed, partial = {}, _feed(in_vars, arrays), []
    for label, out in _flat({s: out_vars[s] for s in wanted}):
        if out.dtype.kind != "f":
            if case.outputs_for_grad:
                raise ValueError(f"{case.id}: output {label} is {out.dtype}, not a float")
            continue
        w = rng.standard_normal(out.shape).astype(out.dtype)
        weights[label] = w
        w_var = block.create_var(f"W_{label}", out.shape, out.dtype, is_data=True,
                                 stop_gradient=True)
        feed[w_var.name] = w
        prod = block.create_var(f"prod_{label}")
        block.append_op("elementwise_mul", {"X": out, "Y": w_var}, {"Out": prod})
        s = block.create_var(f"loss_{label}")
        block.append_op("reduce_sum", {"X": prod}, {"Out": s}, {"reduce_all": True})
        partial.append(s)
    if not partial:
        raise ValueError(f"{case.id}: no float output enters the loss")
    loss = partial[0]
    if len(partial) > 1:
        loss = block.create_var("loss")
        block.append_op("sum", {"X": partial}, {"Out": loss})
    checked = [(label, v) for label, v in _flat({s: in_vars[s] for s in slots})]
    grads = gradients([loss], [v for _, v in checked])
    return (program, arrays, feed, weights,
            [(label, v, g) for (label, v), g in zip(checked, grads)])


def forward_eager(op_type, arrays, attrs):
    """{output label: array}: one eager run of the op's CPU kernel (`run_op`'s path)."""
    thunk, outs = build_cpu_kernel(op_type, arrays, attrs)
    thunk()
    opdef = get_op_def(op_type)
    return dict(_flat({k: v if opdef.output_slot(k).duplicable else v[0]
                       for k, v in outs.items()}))


def numeric_grads(case, arrays, weights, labels, eps):
    """Central differences of sum_k sum(out_k * W_k) for every element of each input.

    Each evaluation specialises and runs the forward kernel afresh on the perturbed
    inputs (cheap: compiled kernels are cached in-process).
    """
    arrays = _copy(arrays)
    flat_in = dict(_flat(arrays))
    result = {}
    for label in labels:
        x = flat_in[label].reshape(-1)      # a view into `arrays`
        g = np.empty(x.size)
        for i in range(x.size):
            orig = x[i]
            x[i] = orig + eps
            plus = forward_eager(case.op, arrays, case.attrs)
            x[i] = orig - eps
            minus = forward_eager(case.op, arrays, case.attrs)
            x[i] = orig
            # difference the outputs before weighting: no cancellation in a large loss
            g[i] = sum(float(np.sum(w * (plus[k].astype(np.float64) - minus[k])))
                       for k, w in weights.items())
        result[label] = g.reshape(flat_in[label].shape) / (2.0 * eps)
    return result


def check_grad(case):
    """Compare `static.gradients` of the projected loss with central differences."""
    program, arrays, feed, weights, checked = build_grad_program(case)
    verify(program)
    missing = [label for label, _, g in checked if g is None]
    if missing:
        raise AssertionError(_where(case, f"static.gradients returned no gradient for "
                                          f"{missing}"))
    analytic = _run(program, feed, [g for _, _, g in checked])
    numeric = numeric_grads(case, arrays, weights, [label for label, _, _ in checked],
                            case.eps)
    for (label, var, _), got in zip(checked, analytic):
        want = numeric[label]
        assert_close(_where(case, f"d loss / d {label} (analytic vs central differences, "
                                  f"eps={case.eps:g})"),
                     got, want.astype(var.dtype), case.grad_rtol, case.grad_atol)
