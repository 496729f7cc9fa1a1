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
        self._lock = threading.Lock()
        self._pending = {}                 # bucket -> _Bucket (started, not yet waited)
        self._wait_barrier = threading.Barrier(size, action=self._finish_bucket)
        self._finishing = None
        self._broken = False
        self._comm = None                  # the communication thread (several ranks only)
        self._last_mpi = None              # the future of the last call submitted to it

    def endpoint(self, index):
        return DeviceComm(self, index)

    def abort(self):
        self._broken = True
        self._barrier.abort()
        self._wait_barrier.abort()

    def reset(self):
        self._broken = False
        self._pending.clear()
        self._barrier.reset()
        self._wait_barrier.reset()

    def submit_mpi(self, fn, *args):
        """Run an MPI call on the communication thread, in submission order: a started
        bucket and a later synchronous collective reach MPI in the same order on every
        rank."""
        if self._comm is None:
            import concurrent.futures
            self._comm = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="numbaflow-comm")
        self._last_mpi = self._comm.submit(fn, *args)
        return self._last_mpi

    def call_mpi(self, fn, *args, overlap=False):
        """Run an MPI call: on the communication thread when `overlap` (returns its future),
        else on this thread (returns None) — unless calls submitted earlier are still
        running there, which must reach MPI first. A call with nothing to overlap saves the
        hand-over (measured on the 2-rank MLP step: 1.2 ms of waiting -> 0.3 ms)."""
        if overlap or not (self._last_mpi is None or self._last_mpi.done()):
            return self.submit_mpi(fn, *args)
        fn(*args)
        return None

    # ---------------------------------------------------------------- overlapped buckets
    def allreduce_start_(self, index, arrays, bucket, flat=None, overlap=True):
        """Publish this device's bucket and return at once. The last device to start it
        sums the bucket into device 0's arrays (fixed order) and hands the MPI call to
        the communication thread; the devices go on with the backward pass meanwhile.
        `overlap=False` (nothing runs before the wait) makes the MPI call here instead."""
        with self._lock:
            b = self._pending.setdefault(bucket, _Bucket(self.size))
            b.slots[index] = (arrays, flat)
            b.arrived += 1
            last = b.arrived == self.size
        if not last:
            return
        try:
            b.future = self._sum(b.slots, bucket, overlap)
        finally:
            b.summed.set()

    def allreduce_wait_(self, index, arrays, outs, bucket):
        """Wait for the bucket's sum, copy it into this device's `outs`, and return once
        every device has its copy (device 0's arrays hold the sum until then)."""
        b = self._pending.get(bucket)
        if b is None:
            raise GroupAborted("another device of the data-parallel group failed") \
                if self._broken else RuntimeError(f"bucket {bucket} was never started")
        while not b.summed.wait(0.05):
            if self._broken:
                raise GroupAborted("another device of the data-parallel group failed; "
                                   "see its error")
        if b.future is not None:
            b.future.result()
        total = b.slots[0][0]
        for out, src in zip(outs, total):
            if not np.shares_memory(out, src):
                np.copyto(out, src)
        self._finishing = bucket
        self._wait(self._wait_barrier)

    def _finish_bucket(self):
        # Barrier action: runs once, after every device copied, before any goes on
        self._pending.pop(self._finishing, None)

    def _wait(self, barrier=None):
        try:
            return (barrier or self._barrier).wait()
        except threading.BrokenBarrierError:
            raise GroupAborted("another device of the data-parallel group failed; see "
                               "its error") from None

    def allreduce_(self, index, arrays, bucket, flat=None):
        """`flat`: the arrays as one 1-D view when they lie back to back in one buffer
        (the executor coalesces a bucket): then one add per device and one MPI call."""
        self._slots[index] = (arrays, flat)
        if self._wait() == 0:
            running = self._sum(self._slots, bucket, overlap=False)
            if running is not None:
                running.result()
        self._wait()
        if index:
            src_arrays, src_flat = self._slots[0]
            if flat is not None and src_flat is not None:
                np.copyto(flat, src_flat)
            else:
                for mine, total in zip(arrays, src_arrays):
                    np.copyto(mine, total)
        self._wait()

    def _sum(self, slots, bucket, overlap):
        """Sum every device's arrays into device 0's, in device order (one add per device
        when all are flat), then make the bucket's MPI call (`call_mpi`): returns the
        future of a call left running, else None. `slots[d]` = (arrays, flat or None)."""
        flats = [f for _, f in slots]
        whole = all(f is not None for f in flats)
        parts = [[f] for f in flats] if whole else [arrays for arrays, _ in slots]
        total = parts[0]
        for d in range(1, self.size):
            for acc, x in zip(total, parts[d]):
                np.add(acc, x, out=acc)
        if self.world is None or self.world.size == 1:
            return None
        if whole:
            return self.call_mpi(self.world.allreduce_sum_, total[0], overlap=overlap)
        return self.call_mpi(self._mpi_allreduce, total, bucket, overlap=overlap)

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
            running = self.call_mpi(self.world.bcast_, flat, rank)
            if running is not None:
                running.result()
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


class _Bucket:
    """A started bucket: each device's arrays, and when its sum is ready."""

    def __init__(self, size):
        self.slots = [None] * size
        self.arrived = 0
        self.summed = threading.Event()
        self.future = None             # the MPI call on the communication thread


class DeviceComm:
    """One device's view of its LocalGroup (what collective kernels get as `cop.comm`)."""

    def __init__(self, group, index):
        self.group, self.index = group, index

    def allreduce_(self, arrays, bucket=0, flat=None):
        self.group.allreduce_(self.index, arrays, bucket, flat)

    def broadcast_(self, arrays, root=0, bucket=0):
        self.group.broadcast_(self.index, arrays, root, bucket)

    def allreduce_start_(self, arrays, bucket=0, flat=None, overlap=True):
        self.group.allreduce_start_(self.index, arrays, bucket, flat, overlap)

    def allreduce_wait_(self, arrays, outs, bucket=0):
        self.group.allreduce_wait_(self.index, arrays, outs, bucket)
