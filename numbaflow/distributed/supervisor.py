"""A rank that dies without running any Python (os._exit, SIGKILL, a crash in native code).

Hydra (MPICH's mpiexec) ends the job when one rank dies that way, but silently, with
the status of the process that died first: os._exit(0) on one rank ends the whole job
with status 0, and SIGKILL is reported by pid, not by rank. So, under mpiexec, the
process the launcher started forks: the child runs the script (it is the rank), the
parent only waits for it. When the child ended without Python's exit path (no atexit
handler ran) the parent says which rank died and how, and exits with a non-zero status,
so that the launcher ends the job as failed.

The fork happens when numbaflow is imported, before MPI is initialised; it is skipped
(and the launcher's behaviour is what you get) when other Python threads already run,
MPI is already initialised, in a process a supervised rank started, or with
NUMBAFLOW_SUPERVISE=0.
"""
import array
import atexit
import ctypes
import fcntl
import os
import select
import signal
import stat
import sys
import termios
import threading
import time

from .. import config

CLEAN = b"c"       # the child left through Python's exit path
ABORT = b"a"       # the child is aborting the job and has reported why

FORWARD_BOUND = 10.0   # seconds at most that an abort waits for its report to be read
ABORT_BOUND = FORWARD_BOUND + 10.0     # from its ABORT mark to the end of a rank
_SUPERVISED = config.SUPERVISED_VAR     # set in a supervised rank (its supervisor's pid)
_FORWARD = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
_marker_fd = None


def supervise(rank, size):
    """Fork; return in the child (the rank). The parent never returns: it waits for the
    child and exits with its status. Returns False when it did not fork."""
    global _marker_fd
    if (not config.supervise_ranks()
            or threading.active_count() > 1
            or "mpi4py.MPI" in sys.modules or not hasattr(os, "fork")
            or not sys.platform.startswith("linux")):
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the rank
        # processes it starts (multiprocessing's spawn) inherit the launcher's
        # variables: they are not ranks, and must not fork again
        os.environ[_SUPERVISED] = str(os.getppid())
        os.close(read_fd)
        _die_with_parent()
        _marker_fd = write_fd
        atexit.register(mark, CLEAN)
        return True
    os.close(write_fd)
    _wait(pid, read_fd, f"rank {rank}/{size}")     # never returns


def mark(what):
    """Tell the waiting parent how this rank ends (CLEAN or ABORT)."""
    if _marker_fd is not None:
        try:
            os.write(_marker_fd, what)
        except OSError:
            pass


def _die_with_parent():
    # the launcher kills the process it started (the parent): the child must go too
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        os._exit(1)


def _wait(pid, read_fd, tag):
    for name in _FORWARD:
        signal.signal(getattr(signal, name), lambda signum, frame: _forward(pid, signum))
    marks, status = _marks_until_exit(pid, read_fd)
    if status is None:      # stuck inside its abort: end it, and the job, from here
        _say(tag, f"this rank did not end within {ABORT_BOUND:g} s of starting to abort the "
                  f"job (stuck in MPI_Abort); killed it")
        _forward(pid, signal.SIGKILL)
        _abort_job(1)
        os._exit(1)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if ABORT not in marks:
            _say(tag, f"this rank was killed by {_signal_name(sig)}")
            _abort_job(128 + sig)
        os._exit(128 + sig)
    code = os.waitstatus_to_exitcode(status)
    if CLEAN in marks or ABORT in marks:
        os._exit(code)
    _say(tag, f"this rank ended by os._exit({code}) (or a crash in native code) without "
              f"finishing: no Python exit handler ran")
    _abort_job(code or 1)
    os._exit(code or 1)


def _marks_until_exit(pid, read_fd):
    """(the marks the child wrote, its wait status) once it has ended; status None when
    it marked ABORT and did not end within ABORT_BOUND. MPI_Abort runs holding the GIL
    and does not always return (it may block in the network layer while tearing down a
    connection to a host that is gone), so no thread of the rank can bound it: this
    process, which only waits, does."""
    marks, deadline, closed = b"", None, False
    os.set_blocking(read_fd, False)
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            os._exit(1)
        try:
            got = os.read(read_fd, 64)
            marks += got
            closed = not got
        except OSError:          # nothing written yet
            pass
        if done:
            return marks, status
        if deadline is None and ABORT in marks:
            deadline = time.monotonic() + ABORT_BOUND
        if deadline is not None and time.monotonic() > deadline:
            return marks, None
        # woken by a mark or by the child's exit closing the pipe; a process the rank
        # forked may hold the pipe open after it, hence the timeout
        if closed:
            time.sleep(0.05)
        else:
            select.select([read_fd], [], [], 0.5)


def _abort_job(code):
    """Ask the process manager to end the whole job, as MPI_Abort does: the PMI-1 `abort`
    command on the launcher's PMI socket (Hydra's PMI_FD, inherited from the launcher).
    Exiting non-zero is not enough across hosts: Hydra then ends the job only when the
    ranks on the same host notice (tests/distributed/test_multihost.py: a rank killed on the other
    host left its partner waiting in a collective)."""
    fd = config.pmi_fd()
    if fd.isdigit():
        # first let the launcher read the report just written to stderr: an abort makes
        # it kill the proxies, which drop output they have not read yet
        wait_forwarded()
        try:
            os.write(int(fd), f"cmd=abort exitcode={code}\n".encode())
        except OSError:
            pass


def wait_forwarded(bound=FORWARD_BOUND):
    """Wait (at most `bound` seconds) until the launcher has read everything this process
    wrote to its stdout and stderr pipes, before an abort makes it kill its proxies.
    A fixed pause lost the report on a loaded machine (the proxy was not scheduled in
    time); the pipe's count of unread bytes (FIONREAD) says when it has been read."""
    deadline = time.monotonic() + bound
    for fd in (1, 2):
        while _unread(fd) and time.monotonic() < deadline:
            time.sleep(0.005)


def _unread(fd):
    """Bytes written to pipe `fd` and not read yet (0 when `fd` is not a pipe)."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return 0
        n = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, n)
        return n[0]
    except OSError:
        return 0


def _forward(pid, signum):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _say(tag, cause):
    try:
        os.write(2, f"[{tag}] numbaflow.distributed: {cause}; aborting the MPI job\n".encode())
    except OSError:
        pass
