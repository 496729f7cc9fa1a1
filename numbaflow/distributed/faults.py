"""Making an MPI job end when one rank fails, instead of leaving the others waiting.

A rank blocked inside a blocking MPI call cannot run Python, so it can neither notice
that another rank is gone nor give up. Every collective of `World` is therefore started
nonblocking and completed by `Watch.wait`, a poll loop that also:

- reads the control channel (a private duplicate of the communicator), where a rank
  that exits normally (end of script, `sys.exit(any code)`) announces, from an atexit
  handler, how many collectives it completed: a rank waiting in a collective that the
  leaver never entered aborts the job, naming the leaver;
- gives up after NUMBAFLOW_COLLECTIVE_TIMEOUT seconds (a rank that sleeps, hangs or
  stopped taking steps without exiting), aborting the job;
- answers another rank's handshake (`Watch.agree`, used by static.save's gather) with
  what this rank is doing instead, so that rank can raise rather than hang.

Unhandled exceptions and SIGTERM abort the job from hooks (mpi.install_abort_hooks); a
rank killed by SIGKILL or ended by os._exit is reported by its supervisor (supervisor.py).
"""
import atexit
import pickle
import threading
import time

from .. import config

TIMEOUT_ENV = config.COLLECTIVE_TIMEOUT_VAR
DEFAULT_TIMEOUT = config.DEFAULT_COLLECTIVE_TIMEOUT

_TAG = 7301                      # the control channel's one tag
_MSG_BYTES = 4096                # a control message's largest pickled size
_POLLS_PER_CHECK = 64            # Test() calls between two looks at the clock and channel
_SPIN_S = 0.05                   # then sleep a little between polls: yield the core
_GRACE_S = 5.0                   # for a collective to complete after a rank that did left


def collective_timeout():
    """Seconds a collective may wait for the other ranks before the job is aborted
    (NUMBAFLOW_COLLECTIVE_TIMEOUT; unset: 1800; 0, 'off' or 'none': never)."""
    return config.collective_timeout()


def describe(what):
    """A collective's description: a string, or (kind, array[, root]) formatted only
    when a message needs it (formatting costs a microsecond on every call)."""
    if isinstance(what, str):
        return what
    kind, array, *root = what
    text = f"{kind} of {array.size} {array.dtype}"
    return text + (f" from rank {root[0]}" if root else "")


class Watch:
    """The fault detection of one communicator: its control channel, the count of
    collectives this rank started and completed, and the ranks known to have left."""

    def __init__(self, comm, abort, timeout=None):
        """`abort(cause)` ends the whole job (mpi.abort_job: it knows the world and the
        supervisor, which this module, below mpi.py, does not import)."""
        from mpi4py import MPI
        self._abort = abort
        self._MPI = MPI
        self.ctl = comm.Dup()
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.timeout = timeout
        self.started = 0             # collectives started (the next one's number)
        self.done = 0                # collectives completed
        self.left = {}               # rank -> (collectives it completed, how it ended)
        self.entered = {}            # rank -> (collective number, what) of its handshake
        self.at = {}                 # rank -> (collective number, what) it said it waits in
        self._lock = threading.RLock()
        self._buf = bytearray(_MSG_BYTES)
        self._recv = self.ctl.Irecv(self._buf, MPI.ANY_SOURCE, _TAG)
        self._status = MPI.Status()
        self._outbox = []            # (request, buffer) of control messages being sent
        self._closed = False
        self._doing = None           # (number, what) of the collective being waited on
        atexit.register(self.leave)

    # ------------------------------------------------------------------ collectives
    def start(self):
        """Number the collective about to start (the same number on every rank). The
        caller issues collectives from one thread at a time (World's rule)."""
        n = self.started
        self.started = n + 1
        return n

    def wait(self, request, n, what):
        """Poll `request` (an MPI request of collective number `n`, described by `what`:
        see `describe`) until it completes; abort the job when a rank left before
        entering it or the timeout passes."""
        if request.Test():
            self.done += 1
            return
        self._doing = (n, what)
        t0 = time.monotonic()
        polls = 0
        try:
            while not request.Test():
                polls += 1
                if polls % _POLLS_PER_CHECK:
                    continue
                waited = time.monotonic() - t0
                self.poll_channel()
                now = time.monotonic()
                for r, (done, how, seen) in sorted(self.left.items()):
                    # a rank that completed this collective before leaving has sent its
                    # part: ours completes soon, unless the ranks called different ones
                    if done <= n or now - seen > _GRACE_S:
                        self.fail(f"rank {r} {how} after completing {done} collective(s), "
                                  f"while this rank waits for it in collective #{n} "
                                  f"({describe(what)})"
                                  + ("" if done <= n else
                                     " (so the ranks called different collectives)"))
                if self.timeout is not None and waited > self.timeout:
                    self.fail(self._timeout_message(n, what, waited))
                if waited > _SPIN_S:
                    time.sleep(min(1e-3, waited / 100))
        finally:
            self._doing = None
        self.done += 1

    def _timeout_message(self, n, what, waited):
        """Ask the other ranks where they are (a rank waiting in a collective answers
        at once; one that sleeps, computes or hangs cannot) and say so."""
        others = [r for r in range(self.size) if r != self.rank and r not in self.left]
        self.at.clear()
        what = describe(what)
        self._send(("where", self.rank, n, what), others)
        deadline = time.monotonic() + 1.0
        while len(self.at) < len(others) and time.monotonic() < deadline:
            self.poll_channel()
            time.sleep(1e-3)
        late = [r for r in others if r not in self.at]
        elsewhere = [f"rank {r} waits in collective #{m} ({w})"
                     for r, (m, w) in sorted(self.at.items()) if (m, w) != (n, what)]
        text = (f"waited {waited:.0f} s in collective #{n} ({what}) for the other ranks "
                f"({TIMEOUT_ENV}={self.timeout:g})")
        if late:
            text += (f"; rank{'s' if len(late) > 1 else ''} {', '.join(map(str, late))} "
                     f"did not join it and is not waiting in any collective (stopped taking "
                     f"steps, sleeping or hung)")
        if elsewhere:
            text += "; " + "; ".join(elsewhere) + " (the ranks called different collectives)"
        for r, (done, how, _) in sorted(self.left.items()):
            text += f"; rank {r} {how} after completing {done} collective(s)"
        return text

    # ------------------------------------------------------------------ handshake
    def agree(self, what):
        """Point-to-point handshake before a collective that only some ranks might call
        (static.save's gather): returns once every rank called `agree(what)` at the same
        collective number; raises RuntimeError, having started no collective (so this
        rank can go on), when another rank is in a different collective or has exited.
        Past the timeout the job is aborted."""
        n = self.started
        others = [r for r in range(self.size) if r != self.rank]
        self.at.clear()
        self._send(("enter", self.rank, n, what), others)
        t0 = time.monotonic()
        self._doing = (n, what)
        try:
            while True:
                self.poll_channel()
                if all(self.entered.get(r, (None,))[0] == n for r in others):
                    break
                for r in others:
                    if r in self.left:
                        raise RuntimeError(f"{what}: every rank must call it, but rank {r} "
                                           f"{self.left[r][1]}")
                    b = self.at.get(r)
                    if b is not None and b[0] == n:
                        raise RuntimeError(
                            f"{what}: every rank must call it at the same point, but rank {r} "
                            f"is in collective #{n} ({b[1]}) instead. Nothing was started: "
                            f"call it on every rank")
                waited = time.monotonic() - t0
                if self.timeout is not None and waited > self.timeout:
                    late = [r for r in others if self.entered.get(r, (None,))[0] != n]
                    self.fail(f"waited {waited:.0f} s in {what} for rank(s) "
                              f"{', '.join(map(str, late))}, which did not call it "
                              f"({TIMEOUT_ENV}={self.timeout:g})")
                time.sleep(1e-3)
        finally:
            self._doing = None
        for r in others:
            del self.entered[r]

    # ------------------------------------------------------------------ the channel
    def poll_channel(self):
        """Read every control message that has arrived (from any thread: one at a time)."""
        if self._closed or not self._lock.acquire(blocking=False):
            return
        try:
            while not self._closed and self._recv.Test(self._status):
                count = self._status.Get_count()
                msg = pickle.loads(bytes(self._buf[:count]))
                self._recv = self.ctl.Irecv(self._buf, self._MPI.ANY_SOURCE, _TAG)
                self._handle(msg)
        finally:
            self._lock.release()

    def _handle(self, msg):
        kind, r, n, what = msg
        doing = self._doing
        if kind == "left":
            self.left[r] = (n, what, time.monotonic())
        elif kind == "at":
            self.at[r] = (n, what)
        elif kind == "where" and doing is not None:
            self._send(("at", self.rank, doing[0], describe(doing[1])), [r])
        elif kind == "enter":
            if doing is None or doing == (n, what):
                self.entered[r] = (n, what)     # here, or this rank may still get there
            else:
                # in a collective of another kind: the sender must not start its own
                self._send(("at", self.rank, doing[0], describe(doing[1])), [r])

    def _send(self, msg, ranks):
        """Start sending a control message; its buffer is kept until the send completes."""
        data = pickle.dumps(msg)
        with self._lock:
            self._outbox = [(s, d) for s, d in self._outbox if not s.Test()]
            self._outbox += [(self.ctl.Isend(data, r, _TAG), data) for r in ranks]

    def leave(self, how="exited (end of its script, or sys.exit)"):
        """Tell the other ranks that this rank has ended normally (atexit), then stop
        listening, so that MPI can finalize."""
        if self._closed:
            return
        try:
            from mpi4py import MPI
            if MPI.Is_finalized():
                return
            data = pickle.dumps(("left", self.rank, self.done, how))
            sends = [self.ctl.Isend(data, r, _TAG) for r in range(self.size) if r != self.rank]
            # wait for them (briefly: a rank may be gone already), then stop listening
            deadline = time.monotonic() + 2.0
            while not all(s.Test() for s in sends) and time.monotonic() < deadline:
                time.sleep(1e-3)
            with self._lock:
                self._closed = True
                self._recv.Cancel()
                self._recv.Wait()
        except Exception:        # never keep a process from exiting
            pass

    def fail(self, cause):
        """Report `cause` on stderr, tagged with this rank, and abort the whole job."""
        self._abort(cause)

