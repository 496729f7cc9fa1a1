"""The environment knobs numbaflow reads, in one place, and the directories they name.

| variable | meaning |
|---|---|
| ``NUMBAFLOW_CACHE_DIR`` | generated-kernel cache (default: platform cache dir + ``/kernels``) |
| ``NUMBAFLOW_CACHE_SIZE_MB`` | cap on that cache; least recently used go first (default 1024) |
| ``NUMBAFLOW_DUMP_DIR`` | also write every generated kernel's source here, for reading |
| ``NUMBAFLOW_CHECK_NAN_INF`` | ``1``: name the first op that produces a NaN or Inf |
| ``NUMBAFLOW_LOG_LEVEL`` | level of the ``numbaflow`` logger (see ``numbaflow.utils.log``) |

Directories are checked before use: the kernel cache must belong to this user and not be
writable by anyone else (the code in it is executed), and every directory must be writable.
A directory that fails is replaced by a private one under the temporary directory, with one
warning, instead of failing every run.
"""
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
    """The kernel cache's cap in bytes (NUMBAFLOW_CACHE_SIZE_MB, default 1024 MB)."""
    raw = os.environ.get("NUMBAFLOW_CACHE_SIZE_MB", "")
    if raw:
        try:
            mb = float(raw)
            if mb > 0:
                return int(mb * 1024 * 1024)
        except ValueError:
            pass
        warnings.warn(f"numbaflow: NUMBAFLOW_CACHE_SIZE_MB={raw!r} is not a positive number of "
                      f"megabytes; using {DEFAULT_CACHE_SIZE_MB}", RuntimeWarning, stacklevel=2)
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


def check_nan_inf():
    """NUMBAFLOW_CHECK_NAN_INF=1 names the first op that produces a NaN or Inf."""
    return os.environ.get("NUMBAFLOW_CHECK_NAN_INF", "0") not in ("", "0", "false", "False")


def omp_num_threads():
    """OMP_NUM_THREADS as a positive int (the user's cap on threads per process), or None
    when it is unset or not a positive integer (then the usable cores decide)."""
    raw = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None
