"""The environment variables numbaflow reads, in one place (every read is a function
here; tests/test_config.py fails on a read elsewhere), and the directories they name.
docs/environment-variables.md's table documents each with its default.

| variable | meaning (default) |
|---|---|
| ``NUMBAFLOW_CACHE_DIR`` | generated-kernel cache (platform cache dir + ``/kernels``) |
| ``NUMBAFLOW_CACHE_SIZE_MB`` | cap on that cache; least recently used go first (1024; ``inf``: no cap) |
| ``NUMBAFLOW_DUMP_DIR`` | also write every generated kernel's source here, for reading (unset) |
| ``NUMBAFLOW_CHECK_NAN_INF`` | ``1``: name the first op that produces a NaN or Inf (0) |
| ``NUMBAFLOW_LOG_LEVEL`` | level of the ``numbaflow`` logger (unset: WARNING and above) |
| ``NUMBAFLOW_MAX_PLANS`` | plans each plan cache keeps (64) |
| ``NUMBAFLOW_COLLECTIVE_TIMEOUT`` | seconds a collective waits for the other ranks (1800) |
| ``NUMBAFLOW_SUPERVISE`` | ``0``: no supervisor process per MPI rank (1) |
| ``CPU_NUM`` | CPU places of ``static.cpu_places()`` (1, with a warning) |
| ``FLAGS_selected_gpus`` | GPUs of ``static.cuda_places()`` (every visible one) |
| ``CUDA_VISIBLE_DEVICES`` | read for messages only (the driver applies it) |
| ``NUMBA_ENABLE_CUDASIM`` | ``1``: numba's CUDA simulator stands in for a GPU (numba reads it) |
| ``OMP_WAIT_POLICY`` | set to ``PASSIVE`` unless given (see `default_omp_wait_policy`) |
| ``PMI_RANK``/``PMI_SIZE``, ``OMPI_COMM_WORLD_*``, ``MV2_COMM_WORLD_*`` | set by mpiexec |

Directories are checked before use: the kernel cache must belong to this user and not be
writable by anyone else (the code in it is executed), and every directory must be writable.
A directory that fails is replaced by a private one under the temporary directory, with one
warning, instead of failing every run.
"""
import math
import os
import stat
import tempfile
import threading
import warnings

DEFAULT_CACHE_SIZE_MB = 1024

_resolved = {}          # (kind, requested path) -> the directory actually used
_lock = threading.Lock()


def default_cache_dir():
    """The platform's per-user cache directory for numbaflow's kernels (XDG_CACHE_HOME on Linux)."""
    try:
        from platformdirs import user_cache_dir
        base = user_cache_dir("numbaflow", appauthor=False)
    except ImportError:     # platformdirs is a dependency; this only keeps a broken env working
        base = os.path.join(os.environ.get("XDG_CACHE_HOME")
                            or os.path.join(os.path.expanduser("~"), ".cache"), "numbaflow")
    return os.path.join(base, "kernels")


def untrusted_reason(path):
    """Why `path` (an existing directory) must not hold code that numbaflow runs, or None.

    Trusted: owned by this user, a real directory, writable by us and by nobody else."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot stat it ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        st = os.stat(path)      # a symlink is fine when what it points to passes the checks
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users can write to it (mode {stat.S_IMODE(st.st_mode):o})"
    if not os.access(path, os.W_OK | os.X_OK):
        return "this user cannot write to it"
    return None


def private_dir(path):
    """Create `path` (mode 0700) if needed; None when it can hold kernels, else why not."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        return f"cannot create it ({e.strerror})"
    return untrusted_reason(path)


def _writable_dir(path):
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        return f"cannot create it ({e.strerror})"
    if not os.access(path, os.W_OK | os.X_OK):
        return "this user cannot write to it"
    return None


def fallback_dir(kind):
    """A private directory for `kind` ('kernels', 'dump') under the temporary directory:
    ``$TMPDIR/numbaflow-<uid>/<kind>`` when that is ours and private, else a fresh mkdtemp."""
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    root = os.path.join(tempfile.gettempdir(), f"numbaflow-{uid}")
    path = os.path.join(root, kind)
    if private_dir(root) is None and private_dir(path) is None:
        return path
    return tempfile.mkdtemp(prefix=f"numbaflow-{kind}-")     # mode 0700, ours


def _resolve(kind, requested, check, what, variable):
    key = (kind, requested)
    with _lock:
        path = _resolved.get(key)
        if path is not None and os.path.isdir(path):
            return path
        reason = check(requested)
        path = requested
        if reason is not None:
            path = fallback_dir(kind)
            warnings.warn(f"numbaflow: {what} {requested!r} is not usable: {reason}; using the "
                          f"private directory {path!r} instead for this process (set {variable} "
                          "to a directory that only you can write)", RuntimeWarning, stacklevel=4)
        _resolved[key] = path
        return path


def abandon_dir(kind, failed, error, variable):
    """A write into `failed`, the directory in use for `kind`, failed with `error` (a full
    disk, a directory made read-only meanwhile): use a private temporary directory for
    the rest of the process, with one warning, and return it; None when `failed` already
    is that fallback (the caller then does without)."""
    with _lock:
        fallback = fallback_dir(kind)
        if os.path.abspath(fallback) == os.path.abspath(failed):
            return None
        for key, path in list(_resolved.items()):
            if key[0] == kind and path == failed:
                _resolved[key] = fallback
    warnings.warn(f"numbaflow: cannot write to {failed!r} ({error}); using the private "
                  f"directory {fallback!r} instead for this process (free space there or set "
                  f"{variable} to another directory)", RuntimeWarning, stacklevel=3)
    return fallback


def kernel_cache_dir():
    """Where generated kernel modules (and numba's compiled code for them) live, created 0700.

    A directory that is not ours, is writable by other users, or cannot be created is
    refused with one warning and replaced by a private temporary one."""
    requested = os.environ.get("NUMBAFLOW_CACHE_DIR") or default_cache_dir()
    return _resolve("kernels", os.path.abspath(os.path.expanduser(requested)),
                    _kernel_dir_reason, "kernel cache directory", "NUMBAFLOW_CACHE_DIR")


def _kernel_dir_reason(path):
    reason = private_dir(path)
    if reason is None:
        # numba keeps its compiled code for our modules here: create it private before it does
        reason = private_dir(os.path.join(path, "__pycache__"))
        if reason is not None:
            reason = f"its __pycache__ is not usable: {reason}"
    return reason


def cache_size_limit():
    """The kernel cache's cap in bytes (NUMBAFLOW_CACHE_SIZE_MB, default 1024 MB; ``inf``:
    no cap, returned as math.inf)."""
    raw = os.environ.get("NUMBAFLOW_CACHE_SIZE_MB", "")
    if raw:
        try:
            mb = float(raw)
            if mb == math.inf:
                return math.inf
            if mb > 0:
                return int(mb * 1024 * 1024)
        except ValueError:
            pass
        warnings.warn(f"numbaflow: NUMBAFLOW_CACHE_SIZE_MB={raw!r} is not a positive number of "
                      f"megabytes (or inf for no cap); using {DEFAULT_CACHE_SIZE_MB}",
                      RuntimeWarning, stacklevel=2)
    return DEFAULT_CACHE_SIZE_MB * 1024 * 1024


def dump_dir():
    """If NUMBAFLOW_DUMP_DIR is set, the directory every generated kernel's source is also
    written to (created if needed; an unwritable one is replaced by a private one, with one
    warning); else ''."""
    requested = os.environ.get("NUMBAFLOW_DUMP_DIR", "")
    if not requested:
        return ""
    return _resolve("dump", os.path.abspath(os.path.expanduser(requested)), _writable_dir,
                    "dump directory", "NUMBAFLOW_DUMP_DIR")


def log_level():
    """NUMBAFLOW_LOG_LEVEL as given (stripped; '' when unset): see `numbaflow.utils.log`."""
    return os.environ.get("NUMBAFLOW_LOG_LEVEL", "").strip()


# the variables MPI launchers set in each process they start, before MPI is initialised:
# MPICH/Hydra, Intel MPI and Slurm's PMI2 (PMI_*), Open MPI, MVAPICH
_LAUNCHER_VARS = (("PMI_SIZE", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
                  ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"))


def launcher_rank_size():
    """(rank, size) as an MPI launcher (mpiexec) announced them; (0, 1) when not launched
    by one. Read without importing MPI."""
    for size_var, rank_var in _LAUNCHER_VARS:
        size, rank = os.environ.get(size_var, ""), os.environ.get(rank_var, "0")
        if size.isdigit() and rank.isdigit():
            return int(rank), int(size)
    return 0, 1


def cuda_simulator():
    """NUMBA_ENABLE_CUDASIM=1: numba's CUDA simulator stands in for a GPU (numba reads it)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def cuda_visible_devices():
    """CUDA_VISIBLE_DEVICES as set (None when unset): the driver shows only these GPUs."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def check_nan_inf():
    """NUMBAFLOW_CHECK_NAN_INF=1 names the first op that produces a NaN or Inf."""
    return os.environ.get("NUMBAFLOW_CHECK_NAN_INF", "0") not in ("", "0", "false", "False")


def plain_rewrites():
    """NUMBAFLOW_PLAIN_REWRITES=0: an Executor made now runs plain Programs as written,
    without the default-on rewrites (conv bias/batch-norm folding, softmax mask) that it
    otherwise applies to their plans; to tell a rewrite's effect on the numbers apart."""
    return os.environ.get("NUMBAFLOW_PLAIN_REWRITES", "1") not in ("0", "false", "False")


DEFAULT_MAX_PLANS = 64


def max_plans():
    """How many plans each plan cache keeps (NUMBAFLOW_MAX_PLANS, default 64); ValueError
    when it is not a positive integer."""
    raw = os.environ.get("NUMBAFLOW_MAX_PLANS", str(DEFAULT_MAX_PLANS))
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"NUMBAFLOW_MAX_PLANS must be a positive integer, got {raw!r}") from None
    if n < 1:
        raise ValueError(f"NUMBAFLOW_MAX_PLANS must be a positive integer, got {n}")
    return n


COLLECTIVE_TIMEOUT_VAR = "NUMBAFLOW_COLLECTIVE_TIMEOUT"
DEFAULT_COLLECTIVE_TIMEOUT = 1800.0     # seconds: generous (torch.distributed's default too)


def collective_timeout():
    """Seconds a collective may wait for the other ranks before the job is aborted
    (NUMBAFLOW_COLLECTIVE_TIMEOUT; unset: 1800; 0, 'off' or 'none': never, None)."""
    raw = os.environ.get(COLLECTIVE_TIMEOUT_VAR, "").strip()
    if not raw:
        return DEFAULT_COLLECTIVE_TIMEOUT
    if raw.lower() in ("0", "off", "none", "inf"):
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{COLLECTIVE_TIMEOUT_VAR} must be a number of seconds > 0, or 0/off "
                         f"to wait forever; got {raw!r}")
    return value


SUPERVISED_VAR = "NUMBAFLOW_SUPERVISED"     # set in a supervised rank (its supervisor's pid)


def supervise_ranks():
    """False when NUMBAFLOW_SUPERVISE=0 (no supervisor process per MPI rank), or when this
    process is already a supervised rank or was started by one (NUMBAFLOW_SUPERVISED)."""
    return os.environ.get("NUMBAFLOW_SUPERVISE", "1") != "0" and SUPERVISED_VAR not in os.environ


def pmi_fd():
    """PMI_FD as set by Hydra's launcher ('' when unset): the PMI socket a rank asks the
    process manager through (distributed/supervisor.py's job abort)."""
    return os.environ.get("PMI_FD", "")


def cpu_num():
    """CPU_NUM as set, or None: the default number of CPU places."""
    return os.environ.get("CPU_NUM")


def set_cpu_num(n):
    """Set CPU_NUM for this process and its children (as Paddle does when it defaults it)."""
    os.environ["CPU_NUM"] = str(n)


def selected_gpus():
    """FLAGS_selected_gpus (Paddle's list of GPU ids, '0,1'), stripped; '' when unset."""
    return os.environ.get("FLAGS_selected_gpus", "").strip()


def omp_wait_policy():
    """OMP_WAIT_POLICY as set ('' when unset)."""
    return os.environ.get("OMP_WAIT_POLICY", "")


def default_omp_wait_policy():
    """Set OMP_WAIT_POLICY=PASSIVE unless the user set it. numba's OpenMP workers spin-wait
    after every parallel kernel; on a small machine that starves the BLAS threads of the
    next matmul (an MLP step measured 48 ms instead of 3.3 ms on 2 cores). libgomp reads
    it when numba first loads it, so `import numbaflow` calls this first."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
def omp_num_threads():
    """OMP_NUM_THREADS as a positive int (the user's cap on threads per process), or None
    when it is unset or not a positive integer (then the usable cores decide)."""
    raw = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None
