"""The environment knobs numbaflow reads, in one place."""
import os


def kernel_cache_dir():
    """Where generated kernel modules (and numba's cache of them) live."""
    path = os.environ.get("NUMBAFLOW_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "numbaflow", "kernels")
    os.makedirs(path, exist_ok=True)
    return path


def dump_dir():
    """If set, every generated kernel's source is also written here."""
    return os.environ.get("NUMBAFLOW_DUMP_DIR", "")


def check_nan_inf():
    """NUMBAFLOW_CHECK_NAN_INF=1 names the first op that produces a NaN or Inf."""
    return os.environ.get("NUMBAFLOW_CHECK_NAN_INF", "0") not in ("", "0", "false", "False")
