"""Lowering: (program, feed signature, fetch list, scope) -> the facts a Plan is built
from, checked before any kernel exists.

`lower` selects the ops the fetches need (for a plain Program, with its default-on
rewrites applied to that list by the rewrite driver, `PlanOptions.rewrites`:
graph/passes/rewrite.py; the program is not changed), checks every read
(a missing feed, an uninitialised parameter: typed errors naming the variable and the
fix), infers every concrete shape, decides which fed arrays are used in place and which
fetched ones are handed over without a copy, and assigns the temporaries to pooled
buffers (memory.py: in-place and reuse by liveness; each gradient bucket back to back).
"""
from dataclasses import dataclass

from ..graph.passes.rewrite import rewrite_ops
from ..graph.program import infer_op
from ..kernels.registry import (COLLECTIVE, FLAT_INPUTS, ConcreteOp, VarInfo, get_op_def,
                                value_inputs)
from .memory import assign_buffers


# the compiler's pass table, installed by it (compiler/pipeline.py): this layer may not
# import that one
_installed = []


def install_plain_rewrites(passes_for_program):
    """Make `passes_for_program(program, protected names, device) -> [Rewrite]` the
    rewrites a plain Program's plans get (`plain_rewrites`)."""
    _installed[:] = [passes_for_program]


def plain_rewrites(program, protected, device):
    """The rewrites a plain Program's plan applies to its op list (Executor.run without a
    CompiledProgram): the pass table's default-on rows, as installed."""
    return _installed[0](program, protected, device) if _installed else []


@dataclass
class Lowering:
    """What `lower` found; the Plan binds and runs it."""
    ops: list               # the ops that run, in program order
    concrete: list          # ConcreteOp of each (concrete shapes, this device's comm)
    shapes: dict            # Variable -> VarInfo
    defines: set            # persistables written before (or without) being read
    feed_vars: list
    fetch_vars: list
    written: list           # names of the persistables a run writes (fed ones included)
    zero_copy: list         # fed arrays used in place
    handoff: list           # fetched temporaries handed over without a copy
    users: dict             # zero_copy / handoff Variable -> indexes of the ops using it
    assignment: object      # memory.Assignment of the pooled temporaries

    def memory_key(self, v):
        """Where `v` lives: ("scope", name), ("pool", buffer index) or ("var", name)."""
        if v.persistable:
            return ("scope", v.name)
        if v in self.assignment.buffer_of:
            return ("pool", self.assignment.buffer_of[v])
        return ("var", v.name)

    def dependencies(self):
        """For each op, the earlier ops it must wait for: producers of what it reads
        (read after write) and earlier users of the memory it writes (write after read or
        write), by buffer, so in-place and reused buffers are ordered too."""
        last_write, readers_since, deps = {}, {}, []
        last_collective = None      # collectives run in program order on every device
        for i, op in enumerate(self.ops):
            d = set()
            if get_op_def(op.type).has(COLLECTIVE):
                if last_collective is not None:
                    d.add(last_collective)
                last_collective = i
            reads = value_inputs(op)    # a shape-only input's buffer may hold another's
            for v in reads:
                k = self.memory_key(v)
                if k in last_write:
                    d.add(last_write[k])
            for v in op.output_vars():
                k = self.memory_key(v)
                d.update(readers_since.get(k, ()))
                if k in last_write:
                    d.add(last_write[k])
            for v in reads:
                readers_since.setdefault(self.memory_key(v), []).append(i)
            for v in op.output_vars():
                k = self.memory_key(v)
                last_write[k] = i
                readers_since[k] = []
            d.discard(i)
            deps.append(tuple(sorted(d)))
        return deps


def select_ops(block, fetch_vars):
    """Ops needed for the fetches, plus every op that writes a persistable, plus every
    collective (each device must make the same sequence of collective calls)."""
    needed, keep = set(fetch_vars), []
    for op in reversed(block.ops):
        outs = op.output_vars()
        if any(v in needed for v in outs) or any(v.persistable for v in outs) or \
                get_op_def(op.type).has(COLLECTIVE):
            keep.append(op)
            needed.update(op.input_vars())
    keep.reverse()
    return keep


def lower(program, feed, fetch_vars, scope, options, host):
    """The Lowering of `program` for `feed` ({Variable: ndarray}, already checked),
    `fetch_vars` and the arrays `scope` holds; `host`: buffers live in host memory."""
    block = program.global_block()
    ops = select_ops(block, fetch_vars)
    if options.rewrites is not None:        # a plain Program: its default-on rewrites
        protected = {v.name for v in feed} | {v.name for v in fetch_vars}
        ops = rewrite_ops(options.rewrites(program, protected, "cpu" if host else "gpu"),
                          block, ops)
    fed = set(feed)
    shapes = {v: _fed_info(v, a) for v, a in feed.items()}
    _check_reads(ops, fed, fetch_vars, scope, shapes)
    _check_runtime_shapes(ops)
    concrete = [_concrete(op, shapes, options) for op in ops]
    read, defines = set(fed), set()
    for op in ops:
        read.update(op.input_vars())
        defines.update(v for v in op.output_vars() if v.persistable and v not in read)
    feed_vars, fetch_vars = list(feed), list(fetch_vars)
    written = sorted({v.name for op in ops for v in op.output_vars() if v.persistable} |
                     {v.name for v in feed_vars if v.persistable})
    outputs = {v for op in ops for v in op.output_vars()}
    # fed arrays used in place: host memory, and no op of the plan writes them
    zero_copy = [v for v in feed_vars if host and (options.feed_in_place or (
        not v.persistable and v not in outputs))]
    # fetched temporaries are handed to the caller without a copy: the kernels write
    # them into their own array, which the next run reuses unless the caller still
    # holds it (then a new one is allocated and its ops rebound)
    handoff = list(dict.fromkeys(v for v in fetch_vars if host and not v.persistable
                                 and v not in fed and not boxed(v)))
    users = {v: [i for i, op in enumerate(ops) if v in op.input_vars() or v in op.output_vars()]
             for v in zero_copy + handoff}
    pooled = {v for v in shapes if not v.persistable and v not in fed and v not in handoff
              and not boxed(v)}
    # each gradient bucket's inputs back to back: one flat array per MPI call
    buckets = [[v for v in op.inputs["X"] if v in pooled] for op in ops
               if get_op_def(op.type).has(FLAT_INPUTS)]
    buckets = [b for b in buckets if len(b) > 1 and len({shapes[v].dtype for v in b}) == 1]
    assignment = assign_buffers(ops, shapes, pooled, set(fetch_vars) | set(feed_vars),
                                options.memory_optimize, options.enable_inplace, buckets)
    return Lowering(ops, concrete, shapes, defines, feed_vars, fetch_vars, written, zero_copy,
                    handoff, users, assignment)


def boxed(v):
    """Does `v` live in a plan as a 0-d object array (a tensor array's list, a run-time
    shaped value's array) rather than a buffer of its own shape?"""
    return v.is_tensor_array or v.runtime_shape


def _check_runtime_shapes(ops):
    """A value whose shape is known only at run time (a cond whose branches give different
    shapes) is read by select_input alone (a cond returning it); any other op would need
    its buffer's shape when the plan is built."""
    for op in ops:
        if op.type == "select_input":
            continue
        for v in op.input_vars():
            if v.runtime_shape:
                raise ValueError(
                    f"op {op.type} reads {v.name!r}, a cond output whose branches give "
                    f"different shapes or dtypes: its shape is known only when the program "
                    f"runs, and numbaflow's plans are static-shape, so it can only be "
                    f"fetched (or returned from an enclosing cond). Make the branches give "
                    f"one shape and dtype (cast, pad or reshape one of them) to use it here")


def _check_reads(ops, fed, fetch_vars, scope, shapes):
    """Every read is fed, computed earlier or held by the scope (its shape recorded)."""
    produced = set()
    for op in ops:
        for v in op.input_vars():
            if v in fed or v in produced:
                continue
            if v.is_tensor_array:      # never written before: Paddle's empty array
                shapes[v] = VarInfo(v.shape, v.dtype)
                continue
            if v.persistable:
                spec = scope.spec(v.name)
                if spec is None:
                    raise RuntimeError(
                        f"variable {v.name!r} (read by op {op.type}) is not initialised in "
                        f"the scope; run the startup program first "
                        f"(exe.run(static.default_startup_program())) or load a checkpoint")
                shapes[v] = VarInfo(*spec)
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
        if v.is_tensor_array:
            shapes[v] = VarInfo(v.shape, v.dtype)
        elif v.persistable and v.name in scope:
            shapes[v] = VarInfo(*scope.spec(v.name))
        elif v.persistable:
            raise RuntimeError(f"fetched variable {v.name!r} is not initialised in the "
                               f"scope; run the startup program first")
        elif v.is_data:
            raise ValueError(f"fetched data variable {v.name!r} was not fed")
        else:
            raise ValueError(f"fetched variable {v.name!r} is neither computed by the "
                             f"program nor fed")


def _fed_info(v, a):
    """A fed array's VarInfo; a fed tensor array (a `while` body's, shared with the
    enclosing block) is described by its elements: its last one, else as declared."""
    if v.is_tensor_array:
        items = a[()] or []
        last = items[-1] if items and items[-1].size else None
        return VarInfo(last.shape, last.dtype) if last is not None else VarInfo(v.shape, v.dtype)
    return VarInfo(a.shape, a.dtype)


def _concrete(op, shapes, options):
    """Infer `op`'s output shapes into `shapes`; its ConcreteOp."""
    inferred = infer_op(op, shapes)
    ins = set(op.input_vars())
    for slot, vs in op.outputs.items():
        for v, info in zip(vs, inferred.get(slot, [])):
            if v in ins and not v.is_tensor_array:      # in-place: keeps its buffer
                continue
            if v.persistable and v in shapes and tuple(shapes[v].shape) != tuple(info.shape):
                raise ValueError(f"op {op.type} produces {v.name} with shape "
                                 f"{info.shape}, but it holds {shapes[v].shape}")
            shapes[v] = info
    comm = options.comm if get_op_def(op.type).has(COLLECTIVE) else None
    cop = ConcreteOp(op.type, op.attrs,
                     {k: [shapes[v] for v in vs] for k, vs in op.inputs.items()},
                     {k: [shapes[v] for v in vs] for k, vs in op.outputs.items()}, comm)
    if op.attrs.get("sub_block") is not None:
        cop.graph_op = op       # a control-flow op runs its sub-block's variables
    return cop
