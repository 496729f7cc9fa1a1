"""Buffer assignment for a Plan: which temporaries share memory.

Temporaries (non-persistable, not fed) get buffers from a pool, walking the ops in
program order:

* in-place (`enable_inplace`): an output may take the buffer of an input that dies
  at this op, has the same shape and dtype, and is neither fed nor fetched. Allowed
  pairs are the OpDef's `inplace` map, and any input/output pair of a single-output
  elementwise op (the loop templates read every input element before writing it);
* reuse (`memory_optimize`): variables whose lifetimes (first write to last read) do
  not overlap share a buffer, packed largest first (`assign_buffers`).
  Fetched variables live to the end of the run. A read counts only where the kernels
  read the value (`registry.value_inputs`): a gradient op that takes a forward tensor
  for its shape alone (elementwise_add_grad's X and Y, reshape2_grad's X) does not
  keep that tensor's buffer alive through the backward.

Without either option every temporary gets its own buffer. The assignment is pure
bookkeeping: `assign_buffers` returns sizes and a var -> buffer index map; the Plan
allocates the buffers (host or device) and views each variable into its buffer.
"""
import bisect
from dataclasses import dataclass, field

import numpy as np

from ..kernels.registry import ELEMENTWISE, get_op_def, value_inputs


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
    array for one MPI call), reserved when the first of them is produced.

    The walk in program order decides the storage objects (a variable, those run in place
    in it, a coalesced group) and their lifetimes; `_pack` then puts them in buffers (a
    walk-order best fit let small variables hold big buffers: docs/architecture.md)."""
    group_of = {v: g for g in coalesce for v in g}
    last, reads = {}, [value_inputs(op) for op in ops]
    for i, op in enumerate(ops):
        for v in reads[i] + op.output_vars():
            if v in pooled:
                last[v] = i
    for v in keep_alive:
        if v in last:
            last[v] = len(ops)
    a = Assignment()
    obj_of, objects = {}, []        # Variable -> object index; [first, last, bytes, members]
    for i, op in enumerate(ops):
        taken = set()
        if enable_inplace:
            for out, inp in _inplace_pairs(op):
                where = (obj_of.get(inp), a.offset_of.get(inp, 0))
                if (out in pooled and out not in obj_of and inp in obj_of
                        and last.get(inp) == i and inp not in keep_alive
                        and where not in taken
                        and shapes[out].shape == shapes[inp].shape
                        and shapes[out].dtype == shapes[inp].dtype):
                    obj_of[out], a.offset_of[out] = where
                    objects[where[0]][3].append(out)
                    taken.add(where)
                    a.inplace.append((i, out, inp))
        for out in op.output_vars():
            if out not in pooled or out in obj_of:
                continue
            members, offset = group_of.get(out, [out]), 0
            for v in members:
                obj_of[v], a.offset_of[v] = len(objects), offset
                offset += nbytes(shapes[v])
            objects.append([i, i, offset, list(members)])
    for ob in objects:
        ob[1] = max([ob[1]] + [last.get(v, ob[0]) for v in ob[3]])
    a.peak_live_bytes = _peak(objects, len(ops))
    buffer_of_object = _pack(objects, memory_optimize, a.sizes)
    a.buffer_of = {v: buffer_of_object[k] for v, k in obj_of.items()}
    return a


def _peak(objects, n_ops):
    """Most bytes of objects live at one op (each live from its first to its last op)."""
    delta = [0] * (n_ops + 2)
    for first, end, size, _ in objects:
        delta[first] += size
        delta[end + 1] -= size
    peak = live = 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


def _pack(objects, share, sizes):
    """Buffer index of each object; appends each buffer's bytes to `sizes`. Largest
    first, into the smallest buffer (all are at least as large) none of whose objects is
    live at the same time; `share` False: a buffer each."""
    spans = []                      # per buffer: sorted (first, last) of its objects
    where = [None] * len(objects)
    for k in sorted(range(len(objects)), key=lambda k: (-objects[k][2], objects[k][0])):
        first, end, size, _ = objects[k]
        best = None
        for b in range(len(sizes)) if share else ():
            j = bisect.bisect_left(spans[b], (first, -1))
            if (j < len(spans[b]) and spans[b][j][0] <= end) or \
                    (j > 0 and spans[b][j - 1][1] >= first):
                continue            # overlaps the next or the previous object there
            if best is None or sizes[b] < sizes[best]:
                best = b
        if best is None:
            best = len(sizes)
            sizes.append(size)
            spans.append([])
        bisect.insort(spans[best], (first, end))
        where[k] = best
    return where
