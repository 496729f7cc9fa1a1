"""Failure atomicity: a run that ends by any exception (Ctrl-C included) leaves every
persistable as it was before it.

Three tools: the per-run backups a Plan takes of what it writes (one native call copying
every written persistable into preallocated buffers at the start of the run, copied back
if the run fails); `SignalsDeferred`, which holds Ctrl-C (any signal handled in Python)
back over the end of a run where no op can fail any more, so what only that end writes
needs no backup; and `transaction`, which makes several runs one unit (K iterations over an iterator feed, on
every device's scope)."""
import _signal
import contextlib
import functools
import signal
import threading

import numpy as np
from numba import njit

from ..kernels.registry import COLLECTIVE, get_op_def, may_fail, run_calls
from .backend import HostBackend


BACKUP_CHUNK = 8


@njit(nogil=True, cache=True)
def _copy_bytes(src, dst):
    """dst[k][:] = src[k] for each pair of byte views (one native call for every backup)."""
    for k in range(len(src)):
        s, d = src[k], dst[k]
        for i in range(s.size):
            d[i] = s[i]


def backup_call(backups, backend):
    """One call copying every live persistable into its backup: on the host one njit
    call over byte views (one Python dispatch for all of them), else the backend's
    copies."""
    if not backups:
        return nothing
    if isinstance(backend, HostBackend):
        def as_bytes(a):
            return a.reshape(a.size).view(np.uint8)

        def chunk(pairs):   # padded with empty pairs to BACKUP_CHUNK: one tuple type
            pad = (np.empty(0, np.uint8),) * (BACKUP_CHUNK - len(pairs))
            return functools.partial(_copy_bytes, tuple(as_bytes(live) for live, _ in pairs)
                                     + pad, tuple(as_bytes(saved) for _, saved in pairs) + pad)
        # chunks of BACKUP_CHUNK pairs: numba compiles the copy once per tuple length (~0.2 s
        # each), and a long tuple indexed at run time compiles slowly (256 parameters of a
        # deep MLP took 18 s); one length of 8 stays cheap and cached on disk
        calls = tuple(chunk(backups[i:i + BACKUP_CHUNK])
                      for i in range(0, len(backups), BACKUP_CHUNK))
        return calls[0] if len(calls) == 1 else functools.partial(run_calls, calls)
    return functools.partial(_device_backups, backend, tuple(backups))


def _device_backups(backend, backups):
    for live, saved in backups:
        backend.copy(saved, live)


def nothing():
    """The backup call of a plan that writes no persistable."""


def tail_start(ops):
    """The index of the first of `ops` after the last one that may raise: what follows can
    only be stopped by a signal, which SignalsDeferred holds back. len(ops) where Ctrl-C
    must stay able to stop the tail: a loop, or a collective waiting on another place."""
    last = max((i for i, op in enumerate(ops) if may_fail(op)), default=-1)
    if any("sub_block" in op.attrs or get_op_def(op.type).has(COLLECTIVE)
           for op in ops[last + 1:]):
        return len(ops)
    return last + 1


def persistables_written(ops, feed_vars):
    """The persistables `ops` write or the feed sets, by name."""
    written = {v for op in ops for v in op.output_vars() if v.persistable}
    written.update(v for v in feed_vars if v.persistable)
    return sorted(written, key=lambda v: v.name)


class SignalsDeferred:
    """From `start()` to `end()` every signal with a Python handler (Ctrl-C's
    KeyboardInterrupt, a SIGTERM handler calling sys.exit, ...) is recorded instead of
    handled; `end()` puts the handlers back and calls each with its recorded signals, in
    order. Python runs signal handlers on the main thread only, whichever thread the
    signal reached, so on any other thread there is nothing to hold back and both do
    nothing.

    >>> import os, signal
    >>> hold = SignalsDeferred()
    >>> hold.start(); os.kill(os.getpid(), signal.SIGINT); print("still running")
    still running
    >>> try:
    ...     hold.end()
    ... except KeyboardInterrupt:
    ...     print("interrupted after the end")
    interrupted after the end
    """
    # every signal a handler can be set for (SIGKILL and SIGSTOP cannot be caught)
    SIGNALS = tuple(int(s) for s in signal.valid_signals()
                    if s not in (signal.SIGKILL, signal.SIGSTOP))

    def __init__(self):
        self._before = {}
        self._got = []

    def _record(self, signum, frame):
        self._got.append((signum, frame))

    def start(self):
        if threading.current_thread() is not threading.main_thread():
            return
        self._got = []
        # the C module's calls: signal.getsignal converts each handler to an enum through a
        # caught ValueError (4.5 us for Ctrl-C's; this scan of every signal costs ~2 us)
        for sig in self.SIGNALS:
            if callable(_signal.getsignal(sig)):    # (None: not Python's; SIG_DFL/SIG_IGN)
                self._before[sig] = _signal.signal(sig, self._record)

    def end(self):
        if not self._before:
            return
        before, self._before = self._before, {}
        for sig, handler in before.items():
            _signal.signal(sig, handler)
        for sig, frame in self._got:
            before[sig](sig, frame)


def snapshot_written(scope, ops):
    """Host copies of the persistables `ops` may write that `scope` holds, and the names
    it does not hold yet: what `restore` needs to undo a failed multi-run step."""
    names = {v.name for op in ops for v in op.output_vars() if v.persistable}
    return ({n: scope.get(n) for n in names if n in scope},
            {n for n in names if n not in scope})


def restore(scope, state):
    """Put back what `snapshot_written` saw (in place where the array still fits)."""
    saved, absent = state
    for name, value in saved.items():
        scope.set(name, value, create=True)
    for name in absent:
        scope.remove(name)


@contextlib.contextmanager
def transaction(written):
    """Run the body as one unit over [(scope, ops)]: the first scope is locked, and if the
    body raises anything, every persistable the ops may write is restored to its value
    before the body, then the error propagates.

    Only the first scope (the user's) is locked, on the calling thread: a data-parallel
    run holds that lock throughout, and its other device scopes are touched only by the
    device threads of such a run. Locking those here too would deadlock: a device thread
    blocks on its scope's lock while device 0 waits for it in a collective."""
    with written[0][0].locked():
        saved = [(scope, snapshot_written(scope, ops)) for scope, ops in written]
        try:
            yield
        except BaseException:
            for scope, state in saved:
                restore(scope, state)
            raise
