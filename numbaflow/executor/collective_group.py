"""The communicator of one process's local devices (threads), optionally spanning MPI ranks.

Each device thread calls its endpoint's `allreduce_(arrays, bucket)` from the bound
kernel of a `c_allreduce_sum` op. The local sum is hierarchical and in a fixed order:

1. every device publishes its arrays and waits at a barrier;
2. one thread sums them into device 0's arrays, device by device in index order (so the
   result is bit-reproducible run to run, whatever thread arrives first), then, when
   there are several ranks, makes the bucket's MPI call. The executor lays a bucket's
   gradients out back to back in one buffer (memory.py `coalesce`), so that is one add
   per device and ONE in-place MPI call on the flat array; a bucket that is not
   contiguous (e.g. a fetched gradient has its own array) falls back to one message for
   its small tensors packed into a preallocated buffer plus one per large tensor;
3. after a second barrier every other device copies the result; a third barrier keeps
   device 0 from overwriting its arrays (the next bucket, the next step) before then.

A device that fails calls `abort()`: the others' barrier waits raise instead of hanging,
and `reset()` makes the group usable for the next run.
"""
import threading

import numpy as np


PACK_LIMIT = 64 << 10        # bytes: smaller tensors of a bucket travel packed in one message


class GroupAborted(RuntimeError):
    """Another device of the data-parallel group failed during this run."""


class LocalGroup:
    def __init__(self, size, world=None):
        self.size = size
        self.world = world                 # numbaflow.distributed World, or None
        self._barrier = threading.Barrier(size)
        self._slots = [None] * size
        self._flat = {}                    # bucket -> flat buffer for the MPI call

    def endpoint(self, index):
        return DeviceComm(self, index)

    def abort(self):
        self._barrier.abort()

    def reset(self):
        self._barrier.reset()

    def _wait(self):
        try:
            return self._barrier.wait()
        except threading.BrokenBarrierError:
            raise GroupAborted("another device of the data-parallel group failed; see "
                               "its error") from None

    def allreduce_(self, index, arrays, bucket, flat=None):
        """`flat`: the arrays as one 1-D view when they lie back to back in one buffer
        (the executor coalesces a bucket): then one add per device and one MPI call."""
        self._slots[index] = (arrays, flat)
        if self._wait() == 0:
            flats = [f for _, f in self._slots]
            whole = all(f is not None for f in flats)
            total = [flats[0]] if whole else self._slots[0][0]
            for d in range(1, self.size):
                for acc, x in zip(total, [flats[d]] if whole else self._slots[d][0]):
                    np.add(acc, x, out=acc)
            if self.world is not None and self.world.size > 1:
                if whole:
                    self.world.allreduce_sum_(total[0])
                else:
                    self._mpi_allreduce(total, bucket)
        self._wait()
        if index:
            src_arrays, src_flat = self._slots[0]
            if flat is not None and src_flat is not None:
                np.copyto(flat, src_flat)
            else:
                for mine, total in zip(arrays, src_arrays):
                    np.copyto(mine, total)
        self._wait()

    def _mpi_allreduce(self, arrays, bucket):
        """One message for the bucket's small tensors (packed), and each large one in
        place: packing 2.7 MB of MLP gradients cost more (~160 us of copies) than the
        extra messages (measured: 605 us packed vs 413 us this way vs 410 us for one
        raw Allreduce of the same bytes)."""
        small = [a for a in arrays if a.nbytes < PACK_LIMIT]
        if small:
            self.world.allreduce_many_(small, self._flat_buffer(bucket, small))
        for a in arrays:
            if a.nbytes >= PACK_LIMIT:
                self.world.allreduce_sum_(a)

    def broadcast_(self, index, arrays, root, bucket):
        """Every device's `arrays` become those of global device `root`
        (= rank * local size + local index)."""
        rank, local = divmod(root, self.size)
        self._slots[index] = (arrays, None)
        if self._wait() == 0 and self.world is not None and self.world.size > 1:
            src = self._slots[local][0]
            flat = self._flat_buffer(("bcast", bucket), src)
            if self.world.rank == rank:
                _pack(src, flat)
            self.world.bcast_(flat, root=rank)
            _unpack(flat, src)
        self._wait()
        if index != local:
            for mine, src in zip(arrays, self._slots[local][0]):
                np.copyto(mine, src)
        self._wait()

    def _flat_buffer(self, key, arrays):
        n = sum(a.size for a in arrays)
        dtype = arrays[0].dtype
        buf = self._flat.get(key)
        if buf is None or buf.size != n or buf.dtype != dtype:
            buf = self._flat[key] = np.empty(n, dtype)
        return buf


def _pack(arrays, flat):
    i = 0
    for a in arrays:
        flat[i:i + a.size] = a.reshape(-1)
        i += a.size


def _unpack(flat, arrays):
    i = 0
    for a in arrays:
        a.reshape(-1)[:] = flat[i:i + a.size]
        i += a.size


class DeviceComm:
    """One device's view of its LocalGroup (what collective kernels get as `cop.comm`)."""

    def __init__(self, group, index):
        self.group, self.index = group, index

    def allreduce_(self, arrays, bucket=0, flat=None):
        self.group.allreduce_(self.index, arrays, bucket, flat)

    def broadcast_(self, arrays, root=0, bucket=0):
        self.group.broadcast_(self.index, arrays, root, bucket)
