"""Ops that create tensors: fill_constant and the random initialisers.

Random ops carry a `seed` attribute fixed when the op is built (from `numbaflow.seed`),
so running the same startup program twice gives the same values; seed 0 draws fresh
entropy each run.

On the GPU, fill_constant is a fill kernel and assign_value copies a device constant
uploaded at bind time. The random initialisers draw on the host from the CPU kernel's
numpy stream and upload the result: they run once (startup), and this way a seeded
program initialises to the same values on either device.
"""
import contextlib
import functools
import itertools

import numpy as np
from numba import njit

from ..gpu import gpu_util
from ..registry import NO_GRAD, RANDOM, OpDef, Slot, VarInfo, register_op, simple_kernel

_seed = {"base": None, "counter": itertools.count(1)}


def set_global_seed(n):
    """`numbaflow.seed(n)`: later random ops get seeds derived from n, in creation order."""
    _seed["base"] = int(n)
    _seed["counter"] = itertools.count(1)


@contextlib.contextmanager
def seed_guard(n=None):
    """Inside: `numbaflow.seed(n)` when n is given; after: the caller's seed and op-seed
    stream go on where they were (for tests and examples that must not disturb them)."""
    saved = dict(_seed)
    if n is not None:
        set_global_seed(n)
    try:
        yield
    finally:
        _seed.update(saved)


@contextlib.contextmanager
def fresh_seed_counter():
    """Inside: op seeds are counted from 1 again (the same seeds whatever ran before);
    after: the caller's stream goes on where it was."""
    saved = dict(_seed)
    _seed["counter"] = itertools.count(1)
    try:
        yield
    finally:
        _seed.update(saved)


def next_op_seed():
    """The seed attribute for the next random op (0 = nondeterministic)."""
    if _seed["base"] is None:
        return 0
    return (_seed["base"] * 1_000_003 + next(_seed["counter"])) % (2 ** 31 - 1) or 1


def _shape_infer(ctx):
    shape = tuple(int(d) for d in ctx.attr("shape"))
    if any(d < 0 for d in shape):
        raise ctx.error(f"shape {shape} must be fully known (no -1)")
    return {"Out": VarInfo(shape, np.dtype(ctx.attr("dtype")))}


@njit(nogil=True, cache=True)
def _fill(value, flat):
    # compiled (not ndarray.fill) so that it can join a compiled segment; on the 1-D view
    # that bind makes: one signature for every rank, and no reshape inside njit (which
    # tripled this kernel's compile time)
    for i in range(flat.size):
        flat[i] = value


def _fill_cpu(cop):
    def bind(ins, outs):
        out = outs["Out"][0]
        if not out.flags.c_contiguous:     # reshape would copy: the fill would be lost
            raise ValueError(f"fill_constant: the output buffer of shape {out.shape} is not "
                             "contiguous; the executor allocates contiguous buffers")
        return functools.partial(_fill, cop.attrs["value"], out.reshape(-1))
    return bind


register_op(OpDef("fill_constant", (), (Slot("Out"),), _shape_infer, _fill_cpu,
                  gpu=lambda cop: lambda ins, outs: gpu_util.fill_thunk(outs["Out"][0],
                                                                        cop.attrs["value"]),
                  attrs={"shape": [1], "value": 0.0, "dtype": "float32"},
                  traits=frozenset((NO_GRAD,))))


def _run_and_upload(run, host, out):
    run()
    gpu_util.flat(out).copy_to_device(host.reshape(-1))


def _random_op(type, draw, attrs):
    def run(cop, out):
        rng = np.random.default_rng(cop.attrs["seed"] or None)
        out[...] = draw(rng, cop.attrs, out.shape)

    def cpu(cop):
        return lambda ins, outs: functools.partial(run, cop, outs["Out"][0])

    def gpu(cop):
        def bind(ins, outs):
            out = outs["Out"][0]
            host = np.empty(out.shape, out.dtype)
            return functools.partial(_run_and_upload, functools.partial(run, cop, host),
                                     host, out)
        return bind

    register_op(OpDef(type, (), (Slot("Out"),), _shape_infer, cpu, gpu=gpu,
                      attrs=dict(attrs, shape=[1], seed=0, dtype="float32"),
                      traits=frozenset((NO_GRAD, RANDOM))))


_random_op("uniform_random", lambda rng, a, shape: rng.uniform(a["min"], a["max"], shape),
           {"min": -1.0, "max": 1.0})
_random_op("gaussian_random", lambda rng, a, shape: rng.normal(a["mean"], a["std"], shape),
           {"mean": 0.0, "std": 1.0})


def _truncated_normal(rng, a, shape):
    """Normal(mean, std) redrawn outside mean +- 2 std (Paddle's truncated_gaussian)."""
    out = rng.normal(0.0, 1.0, shape)
    bad = np.abs(out) > 2.0
    while bad.any():
        out[bad] = rng.normal(0.0, 1.0, int(bad.sum()))
        bad = np.abs(out) > 2.0
    return out * a["std"] + a["mean"]


_random_op("truncated_gaussian_random", _truncated_normal, {"mean": 0.0, "std": 1.0})
# Paddle's randint: integers uniform in [low, high)
_random_op("randint", lambda rng, a, shape: rng.integers(a["low"], a["high"], shape),
           {"low": 0, "high": 2})


def _assign_value(cop, out):
    out[...] = np.asarray(cop.attrs["values"], dtype=out.dtype).reshape(out.shape)


def _assign_value_gpu(cop):
    def bind(ins, outs):
        out = outs["Out"][0]
        host = np.empty(out.shape, out.dtype)
        _assign_value(cop, host)
        return gpu_util.copy_thunk(gpu_util.to_device(host), out)
    return bind


register_op(OpDef("assign_value", (), (Slot("Out"),), _shape_infer, simple_kernel(_assign_value),
                  gpu=_assign_value_gpu,
                  attrs={"shape": [1], "dtype": "float32", "values": []},
                  traits=frozenset((NO_GRAD,)), doc="Out = the constant `values`"))
