"""Lowering: (program, feed signature, fetch list, scope) -> a Plan of bound kernels.

Built once per signature and cached by the Executor. Building does all the checking
(missing feeds, uninitialised parameters), infers every concrete shape, allocates every
buffer with numpy and binds each op's kernel to its buffers. A steady-state run is
then: copy feeds in, call the thunks in order, copy fetches out.

Failure atomicity: persistables written *before* the last op that may raise are backed
up into preallocated buffers at the start of each run and restored if it fails; so are
persistables set through the feed.
"""
import numpy as np

from .. import config
from ..graph.program import infer_op
from ..kernels.registry import MAY_FAIL, ConcreteOp, get_op_def
from .backend import HostBackend


def _close(name, candidates):
    """Up to three candidates that look like `name` (case-insensitively)."""
    import difflib
    lower = {c.lower(): c for c in candidates}
    return [lower[m] for m in difflib.get_close_matches(name.lower(), list(lower), n=3,
                                                        cutoff=0.5)]


def select_ops(block, fetch_vars):
    """Ops needed for the fetches, plus every op that writes a persistable."""
    needed, keep = set(fetch_vars), []
    for op in reversed(block.ops):
        outs = op.output_vars()
        if any(v in needed for v in outs) or any(v.persistable for v in outs):
            keep.append(op)
            needed.update(op.input_vars())
    keep.reverse()
    return keep


class Plan:
    def __init__(self, program, feed, fetch_vars, scope, backend=None):
        """feed: {Variable: ndarray (already dtype/shape-checked)}; backend: where buffers
        live and which kernels run (HostBackend by default, CudaBackend for a GPU)."""
        self.backend = backend or HostBackend()
        block = program.global_block()
        self.ops = select_ops(block, fetch_vars)
        self.scope = scope
        self.scope_version = None
        fed = set(feed)
        produced = set()
        shapes = {}     # Variable -> concrete VarInfo
        from ..kernels.registry import VarInfo
        for v, a in feed.items():
            shapes[v] = VarInfo(a.shape, a.dtype)
        # check reads before any kernel exists
        for op in self.ops:
            for v in op.input_vars():
                if v in fed or v in produced:
                    continue
                if v.persistable:
                    arr = scope._arrays.get(v.name)
                    if arr is None:
                        raise RuntimeError(
                            f"variable {v.name!r} (read by op {op.type}) is not initialised in "
                            f"the scope; run the startup program first "
                            f"(exe.run(static.default_startup_program())) or load a checkpoint")
                    shapes[v] = VarInfo(arr.shape, arr.dtype)
                elif v.is_data:
                    raise ValueError(
                        f"data variable {v.name!r} is needed (by op {op.type}) but was not fed; "
                        f"add it to feed={{...}}. Fed: {sorted(x.name for x in fed)}")
                else:
                    raise ValueError(f"variable {v.name!r} is read by op {op.type} but nothing "
                                     f"computes it and it was not fed")
            produced.update(op.output_vars())
        for v in fetch_vars:
            if v in fed or v in produced:
                continue
            if v.persistable and v.name in scope._arrays:
                arr = scope._arrays[v.name]
                shapes[v] = VarInfo(arr.shape, arr.dtype)
            elif v.persistable:
                raise RuntimeError(f"fetched variable {v.name!r} is not initialised in the "
                                   f"scope; run the startup program first")
            elif v.is_data:
                raise ValueError(f"fetched data variable {v.name!r} was not fed")
            else:
                raise ValueError(f"fetched variable {v.name!r} is neither computed by the "
                                 f"program nor fed")
        # concrete shapes
        self.concrete = []
        for op in self.ops:
            inferred = infer_op(op, shapes)
            ins = set(op.input_vars())
            for slot, vs in op.outputs.items():
                for v, info in zip(vs, inferred.get(slot, [])):
                    if v in ins:      # in-place: keeps its buffer
                        continue
                    if v.persistable and v in shapes and tuple(shapes[v].shape) != tuple(info.shape):
                        raise ValueError(f"op {op.type} produces {v.name} with shape "
                                         f"{info.shape}, but it holds {shapes[v].shape}")
                    shapes[v] = info
            self.concrete.append(ConcreteOp(
                op.type, op.attrs, {k: [shapes[v] for v in vs] for k, vs in op.inputs.items()},
                {k: [shapes[v] for v in vs] for k, vs in op.outputs.items()}))
        self.shapes = shapes
        # persistables this plan writes before (or without) reading: it may (re)allocate them
        read, self.defines = set(fed), set()
        for op in self.ops:
            read.update(op.input_vars())
            self.defines.update(v for v in op.output_vars() if v.persistable and v not in read)
        self.feed_vars = list(feed)
        self.fetch_vars = list(fetch_vars)
        self.written = sorted({v.name for op in self.ops for v in op.output_vars()
                               if v.persistable} | {v.name for v in self.feed_vars
                                                    if v.persistable})
        self.bind()

    def bind(self):
        """Allocate buffers and bind kernels (again, when the scope replaced an array)."""
        scope, shapes, backend = self.scope, self.shapes, self.backend
        bufs = {}
        for op_vars in [self.feed_vars] + [op.input_vars() + op.output_vars()
                                           for op in self.ops] + [self.fetch_vars]:
            for v in op_vars:
                if v not in bufs:
                    bufs[v] = self._persistable_buffer(v) if v.persistable else \
                        backend.empty(shapes[v].shape, shapes[v].dtype)
        self.persistable_names = [v.name for v in bufs if v.persistable]
        self.scope_version = scope.version
        self.buffers = bufs
        self.feed_slots = [(v.name, bufs[v]) for v in self.feed_vars]
        thunks = []
        check = config.check_nan_inf()
        for op, cop in zip(self.ops, self.concrete):
            ins = {k: [bufs[v] for v in vs] for k, vs in op.inputs.items()}
            outs = {k: [bufs[v] for v in vs] for k, vs in op.outputs.items()}
            thunk = backend.bind(get_op_def(op.type), cop, ins, outs)
            if check:
                thunk = _nan_checked(thunk, op, [(v.name, bufs[v]) for v in op.output_vars()],
                                     backend)
            thunks.append(thunk)
        self.thunks = tuple(thunks)
        # persistables to back up: those written before the last op that may fail
        last_fail = max((i for i, op in enumerate(self.ops)
                         if check or get_op_def(op.type).has(MAY_FAIL)), default=-1)
        risky = {v for op in self.ops[:last_fail] for v in op.output_vars() if v.persistable}
        risky.update(v for v in self.feed_vars if v.persistable)
        self.backups = [(bufs[v], backend.empty(bufs[v].shape, bufs[v].dtype)) for v in risky]

    def _persistable_buffer(self, v):
        """The scope's array for `v`. A variable this plan only reads or updates in place
        must still have the shape and dtype the plan was built for; one it defines (an
        initialiser's output, a fed value) is (re)allocated when missing or different."""
        info, arr = self.shapes[v], self.scope._arrays.get(v.name)
        if arr is not None and arr.shape == tuple(info.shape) and arr.dtype == info.dtype:
            return self.backend.scope_array(self.scope, v.name)
        if arr is None or v in self.defines or v in self.feed_vars:
            return self.backend.ensure(self.scope, v.name, info.shape, info.dtype)
        raise self._mismatch(v, arr)

    def _mismatch(self, v, arr):
        info = self.shapes[v]
        return ValueError(f"scope variable {v.name!r} now holds shape {arr.shape} {arr.dtype}, but "
                          f"the program uses it as {tuple(info.shape)} {info.dtype}; set an array "
                          f"of that shape and dtype (Scope.set) or rebuild the program")

    def run(self, feed_arrays):
        """feed_arrays: {name: ndarray} matching the signature this plan was built for."""
        if self.scope.version != self.scope_version:
            self.bind()
        backend = self.backend
        backend.before_run(self.scope, self.persistable_names)
        for live, saved in self.backups:
            backend.copy(saved, live)
        for name, buf in self.feed_slots:
            backend.copy_in(buf, feed_arrays[name])
        i = 0
        try:
            for thunk in self.thunks:
                thunk()
                i += 1
        except Exception as e:
            for live, saved in self.backups:
                backend.copy(live, saved)
            raise _op_error(e, self.ops[i]) from e
        backend.after_run(self.scope, self.written)
        return [backend.to_host(self.buffers[v]) for v in self.fetch_vars]


def _op_error(e, op):
    msg = (f"op {op.type} failed (inputs {op.input_arg_names}, outputs {op.output_arg_names}): "
           f"{e}. Parameters and optimizer state were left as before this run.")
    try:
        return type(e)(msg)
    except Exception:
        return RuntimeError(msg)


def _nan_checked(thunk, op, outputs, backend):
    def run():
        thunk()
        for name, a in outputs:
            if a.dtype.kind == "f" and not np.isfinite(backend.to_host(a)).all():
                raise FloatingPointError(f"NUMBAFLOW_CHECK_NAN_INF: op {op.type} produced a "
                                         f"NaN or Inf in {name!r}")
    return run
