"""Full disks and unwritable directories (issue 17 item 3, and CACHE_SIZE_MB=inf of item 6).

A write that fails with ENOSPC (simulated in-process: the one atomic-write helper, or
numba's cache writer, raising OSError 28) under NUMBAFLOW_DUMP_DIR, NUMBAFLOW_CACHE_DIR or
numba's cache for our kernels moves that directory to a private one, or turns caching
off, with one warning: the run goes on and computes the right values. (A save that does
not fit raises and keeps the old files: tests/io/test_io.py.)"""
import errno
import hashlib
import math
import os
import subprocess
import sys
import uuid
import warnings

import numpy as np
import pytest
from child import run_script
from numba.core import caching

import numbaflow as paddle
import numbaflow.static as static
from numbaflow import config
from numbaflow.kernels.codegen import cache
from numbaflow.utils import atomic_file as _atomic_file

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.fixture
def cache_dir(monkeypatch, tmp_path):
    """A fresh, empty kernel cache for this test; nothing loaded in this process."""
    monkeypatch.setattr(cache, "loaded_modules", {})
    monkeypatch.setattr(cache, "_numba_write_failed", set())
    d = tmp_path / "kernels"
    monkeypatch.setenv("NUMBAFLOW_CACHE_DIR", str(d))
    monkeypatch.delenv("NUMBAFLOW_DUMP_DIR", raising=False)
    return d


def jit_source():
    """An njit(cache=True) kernel new to this process; f(x) = 2x + 1."""
    return (f"# test {uuid.uuid4().hex}\nfrom numba import njit\n\n\n@njit(cache=True)\n"
            f"def f(x):\n    return x * 2 + 1\n")


def disk_full_under(monkeypatch, directory):
    """Every atomic write into `directory` fails as on a full disk."""
    real = _atomic_file.write_new

    def write_new(path, write):
        if os.path.abspath(path).startswith(str(directory)):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real(path, write)
    monkeypatch.setattr(_atomic_file, "write_new", write_new)


def our_warnings(caught, words):
    return [w for w in caught if words in str(w.message)]


def test_full_dump_dir_moves_the_dump_with_one_warning(cache_dir, tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    monkeypatch.setenv("NUMBAFLOW_DUMP_DIR", str(dump))
    disk_full_under(monkeypatch, dump)
    sources = [jit_source() for _ in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cache.load_source(s, label="k").f(i) for i, s in enumerate(sources)] == [1, 3, 5]
    assert len(our_warnings(caught, "No space left")) == 1, [str(w.message) for w in caught]
    moved = config.dump_dir()
    assert moved != str(dump)
    dumped = {open(os.path.join(moved, f), encoding="utf-8").read() for f in os.listdir(moved)}
    assert set(sources) <= dumped


def test_dump_skipped_when_the_fallback_is_full_too(cache_dir, tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    monkeypatch.setenv("NUMBAFLOW_DUMP_DIR", str(dump))
    disk_full_under(monkeypatch, dump)
    disk_full_under(monkeypatch, config.fallback_dir("dump"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.load_source(jit_source(), label="k").f(4) == 9
        assert cache.load_source(jit_source(), label="k").f(5) == 11
    assert len(our_warnings(caught, "No space left")) == 1


def test_full_kernel_cache_moves_with_one_warning(cache_dir, monkeypatch):
    cache_dir.mkdir()
    disk_full_under(monkeypatch, cache_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.load_source(jit_source()).f(1) == 3
        assert cache.load_source(jit_source()).f(2) == 5
    assert len(our_warnings(caught, "No space left")) == 1


def test_kernels_run_uncached_when_the_fallback_kernel_cache_is_full_too(cache_dir, monkeypatch):
    """Both NUMBAFLOW_CACHE_DIR and the private fallback full: the kernels still load
    (compiled without an on-disk cache), with one warning for each directory (it raised
    OSError here before)."""
    cache_dir.mkdir()
    disk_full_under(monkeypatch, cache_dir)
    disk_full_under(monkeypatch, config.fallback_dir("kernels"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cache.load_source(jit_source()).f(i) for i in range(3)] == [1, 3, 5]
    assert len(our_warnings(caught, "No space left")) == 2, [str(w.message) for w in caught]
    assert len(our_warnings(caught, "without an on-disk cache")) == 1
    assert not list(cache_dir.rglob("nfk_*"))       # nothing half-written left behind


def test_kernels_run_uncached_when_numba_finds_no_cache_directory(cache_dir, monkeypatch):
    """numba raises 'no locator available' when none of its cache directories can be
    written (NUMBA_CACHE_DIR, the source's __pycache__, the user's cache): the kernel is
    then compiled without an on-disk cache, with one warning."""
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cache.load_source(jit_source()).f(i) for i in range(2)] == [1, 3]
    assert len(our_warnings(caught, "without an on-disk cache")) == 1, \
        [str(w.message) for w in caught]


def test_an_unusable_numba_cache_dir_is_reported_once(cache_dir, tmp_path, monkeypatch, caplog):
    """NUMBA_CACHE_DIR under a file (numba skips it silently): one warning on numbaflow's
    logger naming it and where numba's code for our kernels goes instead."""
    from numba.core import config as numba_config
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(numba_config, "CACHE_DIR", str(blocker / "numba"))
    with caplog.at_level("WARNING", logger="numbaflow.cache"):
        assert [cache.load_source(jit_source()).f(i) for i in range(2)] == [1, 3]
        info = cache.info()
    said = [r for r in caplog.records if "NUMBA_CACHE_DIR" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]
    assert str(blocker / "numba") in said[0].getMessage()
    assert info["numba_path"] == str(cache_dir / "__pycache__")
    assert info["numba_path"] in said[0].getMessage()
    assert any(n.endswith(".nbi") for n in os.listdir(cache_dir / "__pycache__"))


def numba_disk_full(monkeypatch):
    def full(self, name, data):
        raise OSError(errno.ENOSPC, "No space left on device", name)
    monkeypatch.setattr(caching.IndexDataCacheFile, "_save_data", full)


def test_full_numba_cache_turns_caching_off_with_one_warning(cache_dir, monkeypatch):
    numba_disk_full(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")     # Python's own: a message once per place
        assert cache.load_source(jit_source()).f(1) == 3
        assert cache.load_source(jit_source()).f(2) == 5
    assert len(our_warnings(caught, "numba's compiled-code cache")) == 1


@pytest.mark.slow
def test_a_program_runs_on_a_full_numba_cache(tmp_path):
    # in a process of its own with an empty numba cache, so that its first run compiles
    r = run_script("full_numba_cache", timeout=600, NUMBAFLOW_CACHE_DIR=str(tmp_path / "kernels"),
                   NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    assert r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-3000:]


def _raise_enospc(name):
    raise OSError(errno.ENOSPC, "No space left on device", name)


def test_cache_size_inf_means_no_cap(cache_dir, monkeypatch):
    monkeypatch.setenv("NUMBAFLOW_CACHE_SIZE_MB", "inf")
    assert config.cache_size_limit() == math.inf
    for i in range(3):
        assert cache.load_source(jit_source()).f(i) == 2 * i + 1   # was: OverflowError
    assert cache.info()["limit_bytes"] == math.inf
    assert cache.info()["entries"] == 3 and cache._evict(str(cache_dir), math.inf) == 0
    monkeypatch.setenv("NUMBAFLOW_CACHE_SIZE_MB", "nan")
    with pytest.warns(RuntimeWarning, match="inf for no cap"):
        assert config.cache_size_limit() == config.DEFAULT_CACHE_SIZE_MB * 2 ** 20


def test_the_kernel_cache_and_the_checkpoints_share_one_atomic_write(cache_dir, monkeypatch,
                                                                     tmp_path):
    used = []
    real = _atomic_file.write_new
    monkeypatch.setattr(_atomic_file, "write_new",
                        lambda path, write: (used.append(os.path.basename(path)),
                                             real(path, write))[1])
    src = jit_source()
    cache.load_source(src)
    name = "nfk_" + hashlib.sha256(src.encode()).hexdigest()[:20] + ".py"
    assert any(u.startswith(f".{name}.") for u in used)
    paddle.save({"w": np.zeros(2)}, str(tmp_path / "s.pdparams"))
    assert any(u.startswith(".s.pdparams.") for u in used)


@pytest.mark.slow
def test_an_unusable_numba_cache_dir_does_not_fail_a_run(tmp_path):
    # numba then keeps the code of numbaflow's kernels beside their sources (its own
    # fallback: the kernel cache's private __pycache__)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    r = run_script("relu_program", 0.25, timeout=600, NUMBA_CACHE_DIR=str(blocker / "numba"),
                   NUMBAFLOW_CACHE_DIR=str(tmp_path / "kernels"))
    assert r.stdout.strip().endswith("True"), r.stdout + r.stderr
    # the cache's integrity checks and size cap look where numba really wrote
    assert r.stdout.split()[-2] == str(tmp_path / "kernels" / "__pycache__")
    # and the skipped NUMBA_CACHE_DIR is reported once, naming where the code went instead
    said = [line for line in r.stderr.splitlines() if "NUMBA_CACHE_DIR=" in line]
    assert len(said) == 1 and str(tmp_path / "kernels" / "__pycache__") in said[0], r.stderr
    assert any(n.endswith(".nbi") for n in os.listdir(tmp_path / "kernels" / "__pycache__"))


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs mounted at tmp_path/full (root only; skipped elsewhere)."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(directory):
    """Write into `directory` until the file system has not one byte left."""
    fd = os.open(os.path.join(directory, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)


@pytest.mark.slow
def test_a_real_full_disk_under_every_directory_numbaflow_writes(full_disk, tmp_path):
    for d in ("dump", "kernels", "numba"):
        (full_disk / d).mkdir(mode=0o700)
    fill(full_disk)
    r = run_script("relu_program", 0.75, timeout=600, NUMBA_CACHE_DIR=str(full_disk / "numba"),
                   NUMBAFLOW_CACHE_DIR=str(full_disk / "kernels"),
                   NUMBAFLOW_DUMP_DIR=str(full_disk / "dump"))
    assert r.stdout.strip().endswith("True"), r.stdout + r.stderr
    for what in (str(full_disk / "dump"), str(full_disk / "kernels")):
        assert r.stderr.count(f"cannot write to {what!r}") == 1, r.stderr
    # numba's directory: skipped (its probe file cannot be made) or failing at the first
    # write; either way said once
    assert r.stderr.count(str(full_disk / "numba")) == 1, r.stderr


@pytest.mark.slow
def test_a_save_that_does_not_fit_a_real_disk_raises_and_keeps_the_old_files(full_disk):
    x = static.data("x", [None, 3], "float32")
    static.nn.fc(x, 4)
    main = static.default_main_program()
    static.Executor(paddle.CPUPlace()).run(static.default_startup_program())
    prefix = str(full_disk / "m")
    static.save(main, prefix)
    old = {f: (full_disk / f).read_bytes() for f in ("m.pdparams", "m.pdopt")}
    fill(full_disk)
    with pytest.raises(OSError) as e:
        static.save(main, prefix)
    assert e.value.errno == errno.ENOSPC
    assert {f: (full_disk / f).read_bytes() for f in old} == old
    assert sorted(os.listdir(full_disk)) == ["filler", "m.pdopt", "m.pdparams"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_full_numba_cache_dir_does_not_fail_the_static_kernels(full_disk, tmp_path):
    """numba's cache of numbaflow's own `cache=True` kernels (uniform_random's, ...), not only
    of generated ones, degrades on a full NUMBA_CACHE_DIR: one warning, the run goes on
    (issue 30, item 7)."""
    (full_disk / "numba").mkdir(mode=0o700)
    fill(full_disk)
    r = run_script("static_kernels_program", timeout=500,
                   NUMBA_CACHE_DIR=str(full_disk / "numba"),
                   NUMBAFLOW_CACHE_DIR=str(tmp_path / "kernels"))
    assert r.stdout.strip().endswith("True"), r.stdout + r.stderr
    assert r.stderr.count(str(full_disk / "numba")) == 1, r.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_warmup_on_a_full_disk_says_nothing_was_cached(full_disk):
    """issue 30, item 8: it said "first runs now load compiled kernels from the cache"."""
    for d in ("kernels", "numba"):
        (full_disk / d).mkdir(mode=0o700)
    fill(full_disk)
    root = os.path.dirname(os.path.dirname(os.path.abspath(paddle.__file__)))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(full_disk / "numba"),
               NUMBAFLOW_CACHE_DIR=str(full_disk / "kernels"),
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "numbaflow", "warmup", "quickstart"], env=env,
                       capture_output=True, text=True, timeout=500)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "now load compiled kernels" not in r.stdout
    assert "could not be kept" in r.stderr and str(full_disk) in r.stderr, r.stderr
