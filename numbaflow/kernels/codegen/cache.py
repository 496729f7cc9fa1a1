"""Generated kernel modules on disk, keyed by the hash of their source.

numba's `cache=True` needs a real source file, so every generated module is written
once to ``<cache dir>/nfk_<hash>.py``; numba then keeps its compiled machine code for it
(``__pycache__/nfk_<hash>.*.nbi|nbc``, or under NUMBA_CACHE_DIR) and a second process
does not recompile. With ``NUMBAFLOW_DUMP_DIR`` set, every module's source is also
copied there for reading.

The trust rule: the cache directory must be private (see `numbaflow.config`), and what
runs is always the source numbaflow generated in this process: a cached file is used only
when its bytes are exactly that source (so its content hash matches its name), else it is
rewritten, and the module is executed from the in-memory source, never re-read from disk.
numba's files for an entry are checked to be whole pickles before numba loads them; an
empty, truncated or corrupt entry is regenerated with one warning. Writes are fsync'd and
atomic (`utils.atomic_file.atomic_write`). The cache is capped (NUMBAFLOW_CACHE_SIZE_MB):
when a new entry pushes it past the cap, the least recently used entries are removed.
"""
import hashlib
import io
import logging
import os
import pickle
import pickletools
import sys
import tempfile
import threading
import time
import types
import warnings

from ... import config
from ...utils.atomic_file import atomic_write

log = logging.getLogger("numbaflow.cache")

PREFIX = "nfk_"
loaded_modules = {}           # digest -> module, for this process
_numba_write_failed = set()     # directories (and "no disk") already warned about, once each
_lock = threading.Lock()
_stamps = {}                    # package root -> sources_stamp, once per process
_TMP_MAX_AGE_S = 3600   # temporary files older than this are leftovers of killed writes


def numba_cache_dir(cache_dir):
    """Where numba keeps the compiled code of the modules in `cache_dir` (mirrors numba's
    own choice: NUMBA_CACHE_DIR when set and usable, else the directory's __pycache__).
    numba skips an unusable NUMBA_CACHE_DIR (a file, not writable, full) silently: it is
    reported here, once, on the numbaflow.cache logger."""
    from numba.core import config as numba_config
    pycache = os.path.join(cache_dir, "__pycache__")
    if numba_config.CACHE_DIR:
        from numba.core.caching import _CacheLocator
        probe = os.path.join(cache_dir, PREFIX + "x.py")
        path = os.path.join(numba_config.CACHE_DIR,
                            _CacheLocator.get_suitable_cache_subpath(probe))
        try:        # numba's own test of the directory (ensure_cache_path)
            os.makedirs(path, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
            return path
        except OSError as e:
            if numba_config.CACHE_DIR not in _numba_write_failed:
                _numba_write_failed.add(numba_config.CACHE_DIR)
                log.warning("NUMBA_CACHE_DIR=%r is not usable (%s): numba skips it, so the "
                            "compiled code of numbaflow's kernels is cached in %s instead (set "
                            "NUMBA_CACHE_DIR to a writable directory, or unset it)",
                            numba_config.CACHE_DIR, e.strerror or e, pycache)
    return pycache


def _numba_files(numba_dir, digest=None):
    """numba's index/data files in `numba_dir`, of one entry or of all numbaflow entries."""
    prefix = PREFIX + digest + "." if digest else PREFIX
    try:
        names = os.listdir(numba_dir)
    except OSError:
        return []
    return [os.path.join(numba_dir, n) for n in names
            if n.startswith(prefix) and n.endswith((".nbi", ".nbc"))]


def _whole_pickles(data, count):
    """True when `data` is exactly `count` complete pickles (checked without unpickling)."""
    f = io.BytesIO(data)
    for _ in range(count):
        if f.tell() >= len(data):
            return False
        for _op in pickletools.genops(f):   # stops after STOP; raises when cut short
            pass
    return f.tell() == len(data)


def _numba_file_ok(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return True     # removed meanwhile (another process evicting): numba copes with that
    except OSError:
        return False
    try:
        return _whole_pickles(data, 2 if path.endswith(".nbi") else 1)
    except (ValueError, pickle.UnpicklingError, IndexError, EOFError):
        return False


def _check_numba_files(cache_dir, digest):
    """Remove numba's files for this entry (with one warning) when any of them is damaged,
    so numba recompiles instead of failing in unpickling on every later run."""
    files = _numba_files(numba_cache_dir(cache_dir), digest)
    bad = [p for p in files if not _numba_file_ok(p)]
    if bad:
        log.warning("numba's compiled code for kernel cache entry %s is empty, truncated or "
                    "corrupt (%s); removing it, the kernel will be recompiled",
                    PREFIX + digest, os.path.basename(bad[0]))
        _remove(files)


def _remove(paths):
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass


def _problem(path, data):
    """Why the cached file `path` cannot be used for the source `data`, or None."""
    try:
        with open(path, "rb") as f:
            have = f.read()
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"unreadable ({e.strerror})"
    if have == data:
        return None
    if not have:
        return "empty"
    if data.startswith(have):
        return "truncated"
    return "does not match its name (its content hash differs): not numbaflow's"


def _store(cache_dir, digest, source, data):
    """Make ``nfk_<digest>.py`` hold exactly `source`; return the directory it is in."""
    path = os.path.join(cache_dir, f"{PREFIX}{digest}.py")
    problem = _problem(path, data)
    if problem is None:
        try:    # last use, for the LRU cap; mtime untouched (numba's stamp is the content)
            os.utime(path, (time.time(), os.stat(path).st_mtime))
        except OSError:
            pass
        return cache_dir, False
    if problem != "missing":
        log.warning("kernel cache entry %s is %s; regenerating it", path, problem)
        _remove(_numba_files(numba_cache_dir(cache_dir), digest))
    try:
        atomic_write(path, source)
    except OSError as e:      # a full disk: the rest of this process uses a private dir
        fallback = config.abandon_dir("kernels", cache_dir, e, "NUMBAFLOW_CACHE_DIR")
        if fallback is None:      # that one is full too: no file (see load_source)
            _without_disk_cache(f"cannot write to {cache_dir!r} either ({e})")
            return None, False
        config.private_dir(os.path.join(fallback, "__pycache__"))
        return _store(fallback, digest, source, data)
    return cache_dir, True


def _without_disk_cache(why):
    """Warn, once per process, that kernels are compiled without an on-disk cache."""
    if "no disk" not in _numba_write_failed:
        _numba_write_failed.add("no disk")
        warnings.warn(f"numbaflow: {why}; generated kernels are compiled without an on-disk "
                      f"cache for now (each process compiles them again; free space in the "
                      f"temporary directory or set NUMBAFLOW_CACHE_DIR to a writable "
                      f"directory)", RuntimeWarning, stacklevel=4)


def _uncached(source):
    """`source` with numba's on-disk caching off: our generated modules ask for it only
    in their decorators' `cache=True`."""
    return source.replace("cache=True", "cache=False")


def _dump(source, name):
    """Copy a kernel's source into NUMBAFLOW_DUMP_DIR, if set; a write that fails (a full
    disk) moves the dump to a private directory with one warning, or skips it."""
    dump_dir = config.dump_dir()
    while dump_dir:
        try:
            atomic_write(os.path.join(dump_dir, name), source)
            return
        except OSError as e:
            dump_dir = config.abandon_dir("dump", dump_dir, e, "NUMBAFLOW_DUMP_DIR")


class _TolerantCache:
    """numba's on-disk cache of one of our kernels (NUMBA_CACHE_DIR, or the __pycache__
    beside its source), made to degrade: a write that fails (a full disk, a directory made
    read-only) turns caching off for that kernel, with one warning per directory and
    process, instead of failing the run that compiled it. Its entries are keyed by the
    package's `sources_stamp` besides numba's stamp of the kernel's own file."""

    def __init__(self, inner, stamp):
        self._inner = inner
        index = getattr(inner, "_cache_file", None)     # numba's IndexDataCacheFile
        if hasattr(index, "_source_stamp"):
            index._source_stamp = (index._source_stamp, stamp)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def save_overload(self, sig, data):
        try:
            self._inner.save_overload(sig, data)
        except OSError as e:
            self._inner.disable()
            # numba replays the warnings of a compile, so Python's once-per-place filter
            # does not hold: the directories already reported are kept beside loaded_modules
            # (one per NUMBA_CACHE_DIR, not per module subdirectory numba makes in it)
            from numba.core import config as numba_config
            root = numba_config.CACHE_DIR if numba_config.CACHE_DIR and \
                self._inner.cache_path.startswith(numba_config.CACHE_DIR) else \
                self._inner.cache_path
            if root in _numba_write_failed:
                return
            _numba_write_failed.add(root)
            warnings.warn(f"numbaflow: cannot write numba's compiled-code cache in "
                          f"{root!r} ({e.strerror or e}); kernels compiled "
                          f"from now on are not cached on disk (free space there or set "
                          f"NUMBA_CACHE_DIR to another directory)", RuntimeWarning, stacklevel=2)


def write_failures():
    """The directories (and "no disk") where this process could not write compiled code:
    `python -m numbaflow warmup` reports them instead of claiming a warm cache."""
    return sorted(_numba_write_failed)


PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sources_stamp(root=PACKAGE_DIR):
    """A digest of every .py file's path, mtime and size under `root`, computed once per
    process (~2 ms of stat calls).

    numba keys a kernel's machine code by its own file's stamp only, though its callees
    in other files are compiled into it: every numbaflow kernel's cache entry is also
    keyed by this stamp of the whole package (_TolerantCache), so any change recompiles.

    >>> sources_stamp() == sources_stamp()
    True
    """
    if root not in _stamps:
        h = hashlib.sha256()
        for d, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".py"):
                    st = os.stat(os.path.join(d, f))
                    h.update(f"{os.path.relpath(os.path.join(d, f), root)}:{st.st_mtime_ns}:"
                             f"{st.st_size};".encode())
        _stamps[root] = h.hexdigest()[:16]
    return _stamps[root]


def tolerate_cache_errors(namespace, root=PACKAGE_DIR):
    """Wrap the on-disk cache of every numba dispatcher in `namespace` (a module's dict)
    so that a failed cache write degrades to no caching and an entry is used only while
    the sources under `root` are unchanged (see _TolerantCache)."""
    for obj in list(namespace.values()):
        inner = getattr(obj, "_cache", None)
        if hasattr(obj, "enable_caching") and hasattr(inner, "save_overload") and \
                not isinstance(inner, _TolerantCache):
            obj._cache = _TolerantCache(inner, sources_stamp(root))


def cached_on_disk(dispatcher):
    """True when numba keeps `dispatcher`'s compiled code in its on-disk cache (a CUDA
    kernel's cache, unwrapped from _TolerantCache, is numba's CUDACache; the GPU gate
    checks every launched kernel declared cache=True)."""
    cache = getattr(dispatcher, "_cache", None)
    return type(getattr(cache, "_inner", cache)).__name__ in ("CUDACache", "FunctionCache")


def in_disk_cache(dispatcher, sig):
    """True when numba's disk cache holds `dispatcher` compiled for the argument types
    `sig` (executor/precompile.py asks before starting a compile helper); also True when
    that cannot be told (no cache=True, another numba's internals): nothing to help with.
    numba has no public "is this cached": this is the one place that reads its cache's
    internals (a _TolerantCache passes the attributes through to numba's)."""
    try:
        cache = dispatcher._cache
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:
        return True


def load_source(source, label="kernel"):
    """Import `source` as a module (cached by hash in memory and on disk) and return it.

    >>> mod = load_source("def f():\\n    return 3\\n")
    >>> mod.f()
    3
    """
    data = source.encode()
    digest = hashlib.sha256(data).hexdigest()[:20]
    with _lock:
        mod = loaded_modules.get(digest)
        if mod is not None:
            return mod
        cache_dir, wrote = _store(config.kernel_cache_dir(), digest, source, data)
        if cache_dir is not None:
            _check_numba_files(cache_dir, digest)
        _dump(source, f"{label}_{digest}.py")
        path = os.path.join(cache_dir or "<no cache>", f"{PREFIX}{digest}.py")
        name = f"numbaflow_generated.{PREFIX}{digest}"
        mod = types.ModuleType(name)
        mod.__file__ = path
        sys.modules[name] = mod
        # Run the source we generated (checked equal to the file numba stamps), not the file.
        try:
            exec(compile(source if cache_dir else _uncached(source), path, "exec"),
                 mod.__dict__)
        except RuntimeError as e:
            if "no locator available" not in str(e):
                raise
            # numba could write its cache in none of its directories (NUMBA_CACHE_DIR,
            # the __pycache__ beside the file, the user's cache): run without one
            _without_disk_cache(f"numba can write its compiled code nowhere ({e})")
            exec(compile(_uncached(source), path, "exec"), mod.__dict__)
        tolerate_cache_errors(mod.__dict__)
        loaded_modules[digest] = mod
        if wrote and cache_dir is not None:
            _evict(cache_dir, config.cache_size_limit(), keep=set(loaded_modules))
        return mod


# ---------------------------------------------------------------- size cap, info, clear

def _entries(cache_dir):
    """{digest: (last use, bytes, [paths])} for every entry in `cache_dir`."""
    out = {}
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return out
    for n in names:
        if n.startswith(PREFIX) and n.endswith(".py"):
            p = os.path.join(cache_dir, n)
            try:
                st = os.stat(p)
            except OSError:
                continue
            out[n[len(PREFIX):-3]] = [max(st.st_atime, st.st_mtime), st.st_size, [p]]
    for p in _numba_files(numba_cache_dir(cache_dir)):
        digest = os.path.basename(p)[len(PREFIX):].split(".", 1)[0]
        try:
            size = os.stat(p).st_size
        except OSError:
            continue
        entry = out.setdefault(digest, [0.0, 0, []])    # numba files without a source: stale
        entry[1] += size
        entry[2].append(p)
    return out


def _stale_tmp(cache_dir):
    """Temporary files left by writes that were killed (ours and numba's)."""
    now = time.time()
    out = []
    for d in (cache_dir, numba_cache_dir(cache_dir)):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            # ours: `.<name>.<pid>-<hex>.tmp` (utils.atomic_file); numba's: `<name>.tmp.<hex>`
            if (n.startswith(".") and n.endswith(".tmp")) or ".tmp." in n:
                p = os.path.join(d, n)
                try:
                    if now - os.stat(p).st_mtime > _TMP_MAX_AGE_S:
                        out.append(p)
                except OSError:
                    pass
    return out


def _evict(cache_dir, limit, keep=()):
    """Remove least recently used entries (not those in `keep`) until the cache is at most
    90% of `limit` bytes; return the number of entries removed."""
    _remove(_stale_tmp(cache_dir))
    entries = _entries(cache_dir)
    total = sum(e[1] for e in entries.values())
    if total <= limit:
        return 0
    removed = 0
    for digest, (_, size, paths) in sorted(entries.items(), key=lambda kv: kv[1][0]):
        if total <= 0.9 * limit:
            break
        if digest in keep:
            continue
        _remove(paths)
        total -= size
        removed += 1
    log.info("kernel cache over its cap of %d MB: removed the %d least recently used entries",
             limit // 2**20, removed)
    return removed


def info():
    """The kernel cache as a dict: path, numba_path, entries, bytes, limit_bytes.

    >>> info()["entries"] >= 0
    True
    """
    cache_dir = config.kernel_cache_dir()
    entries = _entries(cache_dir)
    return {"path": cache_dir, "numba_path": numba_cache_dir(cache_dir),
            "entries": len(entries), "bytes": sum(e[1] for e in entries.values()),
            "limit_bytes": config.cache_size_limit()}


def clear():
    """Remove every cached kernel (numbaflow's sources and numba's code for them), and
    forget this process's loaded modules; return (entries removed, bytes freed)."""
    cache_dir = config.kernel_cache_dir()
    with _lock:
        entries = _entries(cache_dir)
        for _, _, paths in entries.values():
            _remove(paths)
        _remove(_stale_tmp(cache_dir))
        loaded_modules.clear()
    return len(entries), sum(e[1] for e in entries.values())
