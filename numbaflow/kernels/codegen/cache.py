"""Generated kernel modules on disk, keyed by the hash of their source.

numba's `cache=True` needs a real source file, so every generated module is written
once to ``<cache dir>/nfk_<hash>.py`` and imported from there; numba then keeps its
compiled machine code next to it and a second process does not recompile. With
``NUMBAFLOW_DUMP_DIR`` set, every module's source is also copied there for reading.
"""
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading

from ... import config

_modules = {}
_lock = threading.Lock()


def _atomic_write(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def load_source(source, label="kernel"):
    """Import `source` as a module (cached by hash in memory and on disk) and return it."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    with _lock:
        mod = _modules.get(digest)
        if mod is not None:
            return mod
        cache_dir = config.kernel_cache_dir()
        path = os.path.join(cache_dir, f"nfk_{digest}.py")
        if not os.path.exists(path):  # never rewrite: numba's index keys on the file's mtime
            _atomic_write(path, source)
        dump_dir = config.dump_dir()
        if dump_dir:
            os.makedirs(dump_dir, exist_ok=True)
            _atomic_write(os.path.join(dump_dir, f"{label}_{digest}.py"), source)
        name = f"numbaflow_generated.nfk_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        _modules[digest] = mod
        return mod
