"""Buffer assignment for a Plan: which temporaries share memory.

Temporaries (non-persistable, not fed) get buffers from a pool, walking the ops in
program order:

* in-place (`enable_inplace`): an output may take the buffer of an input that dies
  at this op, has the same shape and dtype, and is neither fed nor fetched. Allowed
  pairs are the OpDef's `inplace` map, and any input/output pair of a single-output
  elementwise op (the loop templates read every input element before writing it);
* reuse (`memory_optimize`): an output takes the smallest free buffer that is large
  enough; a buffer is freed after the last op that reads or writes its variable.
  Fetched variables live to the end of the run.

Without either option every temporary gets its own buffer. The assignment is pure
bookkeeping: `assign_buffers` returns sizes and a var -> buffer index map; the Plan
allocates the buffers (host or device) and views each variable into its buffer.
"""
from dataclasses import dataclass, field

import numpy as np

from ..kernels.registry import ELEMENTWISE, get_op_def


@dataclass
class Assignment:
    sizes: list = field(default_factory=list)     # bytes of each pool buffer
    buffer_of: dict = field(default_factory=dict)  # Variable -> pool buffer index
    offset_of: dict = field(default_factory=dict)  # Variable -> byte offset (coalesced ones)
    inplace: list = field(default_factory=list)    # (op index, output var, input var) shared
    peak_live_bytes: int = 0                       # most bytes of temporaries live at once


def nbytes(info):
    return int(np.prod(info.shape, dtype=np.int64)) * np.dtype(info.dtype).itemsize


def _inplace_pairs(op):
    """(output var, input var) pairs that may share a buffer."""
    opdef = get_op_def(op.type)
    if opdef.has(ELEMENTWISE) and len(op.output_vars()) == 1:
        # one output: the template reads all inputs of an element before writing it.
        # With several outputs, some are copied or summed from inputs after the kernel
        # ran, so an output written in place could clobber what they read.
        return [(o, i) for o in op.output_vars() for i in op.input_vars()]
    pairs = []
    for out_slot, in_slot in opdef.inplace.items():
        outs, ins = op.outputs.get(out_slot, []), op.inputs.get(in_slot, [])
        if len(outs) == len(ins):       # duplicable slots pair up by position
            pairs += list(zip(outs, ins))
    return pairs


def assign_buffers(ops, shapes, pooled, keep_alive, memory_optimize=True, enable_inplace=True,
                   coalesce=()):
    """ops: the plan's ops in order; shapes: {Variable: VarInfo}; pooled: the variables
    that live in the pool; keep_alive: pooled variables that must survive to the end
    (fetched) or must never be overwritten in place (fetched, fed); coalesce: groups of
    pooled variables laid out back to back in one buffer (a gradient bucket: one flat
    array for one MPI call), reserved when the first of them is produced."""
    group_of = {v: g for g in coalesce for v in g}
    last = {}
    for i, op in enumerate(ops):
        for v in op.input_vars() + op.output_vars():
            if v in pooled:
                last[v] = i
    for v in keep_alive:
        if v in last:
            last[v] = len(ops)
    a = Assignment()
    free = []            # buffer indices available for reuse
    in_use = set()
    for i, op in enumerate(ops):
        taken = set()
        if enable_inplace:
            for out, inp in _inplace_pairs(op):
                where = (a.buffer_of.get(inp), a.offset_of.get(inp, 0))
                if (out in pooled and out not in a.buffer_of and inp in a.buffer_of
                        and last.get(inp) == i and inp not in keep_alive
                        and where not in taken
                        and shapes[out].shape == shapes[inp].shape
                        and shapes[out].dtype == shapes[inp].dtype):
                    a.buffer_of[out], a.offset_of[out] = where
                    taken.add(where)
                    a.inplace.append((i, out, inp))
        for out in op.output_vars():
            if out not in pooled or out in a.buffer_of:
                continue
            members = group_of.get(out, [out])
            need = sum(nbytes(shapes[v]) for v in members)
            fits = [b for b in free if a.sizes[b] >= need] if memory_optimize else []
            if fits:
                b = min(fits, key=lambda k: a.sizes[k])
                free.remove(b)
            else:
                b = len(a.sizes)
                a.sizes.append(need)
            offset = 0
            for v in members:
                a.buffer_of[v], a.offset_of[v] = b, offset
                offset += nbytes(shapes[v])
        in_use.update(a.buffer_of[v] for v in op.output_vars() if v in a.buffer_of)
        a.peak_live_bytes = max(a.peak_live_bytes, sum(a.sizes[b] for b in in_use))
        dying = {a.buffer_of[v] for v in op.input_vars() + op.output_vars()
                 if v in a.buffer_of and last.get(v) == i}
        still = {a.buffer_of[v] for v in a.buffer_of if last.get(v, -1) > i}
        for b in dying - still:
            in_use.discard(b)
            if b not in free:
                free.append(b)
    return a
