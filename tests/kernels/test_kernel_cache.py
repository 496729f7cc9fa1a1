"""The generated-kernel cache: only numbaflow's own code runs, damaged entries are
regenerated, directories are private, unusable ones fall back, the size cap evicts LRU."""
import hashlib
import logging
import os
import stat
import subprocess
import sys
import uuid
import warnings

import numpy as np
import pytest

from numbaflow import config
from numbaflow.kernels.codegen import cache
from child import run_script, script_command, script_env


@pytest.fixture
def cache_dir(monkeypatch, tmp_path):
    """A fresh, empty kernel cache for this test; nothing loaded in this process."""
    monkeypatch.setattr(cache, "loaded_modules", {})
    d = tmp_path / "kernels"
    monkeypatch.setenv("NUMBAFLOW_CACHE_DIR", str(d))
    monkeypatch.delenv("NUMBAFLOW_DUMP_DIR", raising=False)
    return d


def _source(body="    return x * 2 + 1\n", jit=False):
    """A kernel source new to this process (a unique comment), and its cache file name."""
    head = "from numba import njit\n\n\n@njit(cache=True)\n" if jit else ""
    src = f"# test {uuid.uuid4().hex}\n{head}def f(x):\n{body}"
    return src, "nfk_" + hashlib.sha256(src.encode()).hexdigest()[:20] + ".py"


def _cache_warnings(caplog):
    return [r for r in caplog.records
            if r.name == "numbaflow.cache" and r.levelno == logging.WARNING]


def test_planted_file_never_runs(cache_dir, tmp_path, caplog):
    src, name = _source()
    marker = tmp_path / "planted_code_ran"
    cache_dir.mkdir(mode=0o700)
    planted = cache_dir / name
    planted.write_text(f"open({str(marker)!r}, 'w').close()\ndef f(x):\n    return 666\n")
    with caplog.at_level(logging.WARNING, logger="numbaflow"):
        mod = cache.load_source(src)
    assert mod.f(5) == 11                         # our code, not the planted one
    assert not marker.exists()                    # the planted code's side effect never happened
    assert planted.read_text(encoding="utf-8") == src             # the entry was regenerated
    (w,) = _cache_warnings(caplog)
    assert "does not match its name" in w.getMessage() and name in w.getMessage()


@pytest.mark.parametrize("damage, word", [(lambda s: s[: len(s) // 2], "truncated"),
                                          (lambda s: "", "empty")])
def test_damaged_entry_is_regenerated_with_one_warning(cache_dir, caplog, damage, word):
    src, name = _source()
    cache_dir.mkdir(mode=0o700)
    (cache_dir / name).write_text(damage(src))
    with caplog.at_level(logging.WARNING, logger="numbaflow"):
        mod = cache.load_source(src)
        assert mod.f(3) == 7
        cache.loaded_modules.clear()
        assert cache.load_source(src).f(4) == 9   # the regenerated entry is used silently
    (w,) = _cache_warnings(caplog)
    assert word in w.getMessage()
    assert (cache_dir / name).read_text(encoding="utf-8") == src


@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
def test_truncated_numba_cache_file_is_recompiled(cache_dir, caplog, suffix):
    src, name = _source(jit=True)
    assert cache.load_source(src).f(3) == 7       # compiles and writes numba's cache files
    numba_dir = cache.numba_cache_dir(str(cache_dir))
    stem = name[:-3]
    (victim,) = [f for f in os.listdir(numba_dir) if f.startswith(stem) and f.endswith(suffix)]
    path = os.path.join(numba_dir, victim)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    cache.loaded_modules.clear()
    with caplog.at_level(logging.WARNING, logger="numbaflow"):
        mod = cache.load_source(src)
        assert mod.f(4) == 9                      # recompiled, not a pickle error
    (w,) = _cache_warnings(caplog)
    assert "numba's compiled code" in w.getMessage()
    assert [f for f in os.listdir(numba_dir) if f.startswith(stem) and f.endswith(".nbi")]


def test_cache_dirs_are_created_private(cache_dir):
    nested = cache_dir / "a" / "b"
    os.environ["NUMBAFLOW_CACHE_DIR"] = str(nested)   # monkeypatch restores it
    cache.load_source(_source()[0])
    for d in (nested, nested / "__pycache__"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700


def test_cache_dir_writable_by_others_is_refused(cache_dir):
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o777)
    with pytest.warns(RuntimeWarning, match="other users can write to it"):
        used = config.kernel_cache_dir()
    assert used != str(cache_dir)
    assert config.untrusted_reason(used) is None
    src, name = _source()
    assert cache.load_source(src).f(1) == 3
    assert not (cache_dir / name).exists() and os.path.exists(os.path.join(used, name))


@pytest.mark.parametrize("variable", ["NUMBAFLOW_CACHE_DIR", "HOME"])
def test_unusable_cache_or_home_dir_falls_back_with_one_warning(cache_dir, tmp_path,
                                                                monkeypatch, variable):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    if variable == "HOME":      # the default location lives under an unusable home
        monkeypatch.delenv("NUMBAFLOW_CACHE_DIR")
        monkeypatch.setenv("HOME", str(blocker / "home"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "home" / ".cache"))
    else:
        monkeypatch.setenv("NUMBAFLOW_CACHE_DIR", str(blocker / "kernels"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.load_source(_source()[0]).f(2) == 5
        assert cache.load_source(_source()[0]).f(3) == 7
    assert len([w for w in caught if "is not usable" in str(w.message)]) == 1


def test_unwritable_dump_dir_falls_back(cache_dir, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBAFLOW_DUMP_DIR", str(blocker / "dump"))
    src = _source()[0]
    with pytest.warns(RuntimeWarning, match="dump directory"):
        assert cache.load_source(src, label="k").f(1) == 3
    dumped = [f for f in os.listdir(config.dump_dir()) if f.startswith("k_")]
    assert any(open(os.path.join(config.dump_dir(), f)).read() == src for f in dumped)


def test_writes_are_fsynced(cache_dir, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    cache.load_source(_source()[0])
    assert len(synced) >= 2                       # the file, then its directory


def test_size_cap_evicts_least_recently_used(cache_dir):
    cache_dir.mkdir(mode=0o700)
    for i in range(5):
        p = cache_dir / f"nfk_{i:020d}.py"
        p.write_text("x" * 400)
        os.utime(p, (1000 + i, 1000 + i))         # entry i was last used at time 1000 + i
    removed = cache._evict(str(cache_dir), limit=1000, keep={f"{0:020d}"})
    left = sorted(p.name for p in cache_dir.glob("nfk_*.py"))
    # 2000 bytes > 1000: drop oldest-first (entry 0 is in use: kept) down to <= 900 bytes
    assert left == [f"nfk_{0:020d}.py", f"nfk_{4:020d}.py"] and removed == 3


def test_size_cap_applies_on_load(cache_dir, monkeypatch):
    monkeypatch.setenv("NUMBAFLOW_CACHE_SIZE_MB", "0.0001")  # 104 bytes: one entry fits, not two
    first = _source()
    cache.load_source(first[0])
    cache.loaded_modules.clear()                        # no longer in use by this process
    second = _source()
    cache.load_source(second[0])
    assert not (cache_dir / first[1]).exists() and (cache_dir / second[1]).exists()


def test_info_and_clear(cache_dir):
    a, b = _source(jit=True), _source()
    cache.load_source(a[0]).f(np.int64(1))
    cache.load_source(b[0])
    info = cache.info()
    assert info["path"] == str(cache_dir) and info["entries"] == 2
    assert info["bytes"] > os.path.getsize(cache_dir / a[1]) + os.path.getsize(cache_dir / b[1])
    n, freed = cache.clear()
    assert (n, freed) == (2, info["bytes"])
    assert cache.info()["entries"] == 0 and not list(cache_dir.glob("nfk_*"))
    assert not cache.numba_cache_dir(str(cache_dir)) or not [
        f for f in os.listdir(cache.numba_cache_dir(str(cache_dir))) if f.startswith("nfk_")]


@pytest.mark.slow
def test_cache_command_line(tmp_path):
    env = dict(os.environ, NUMBAFLOW_CACHE_DIR=str(tmp_path / "c"))
    run = [sys.executable, "-c", "from numbaflow.kernels.codegen import cache;"
           "cache.load_source('def f():\\n    return 1\\n')"]
    subprocess.run(run, env=env, check=True, timeout=120)
    out = subprocess.run([sys.executable, "-m", "numbaflow", "cache", "info"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert str(tmp_path / "c") in out.stdout and "1 entries" in out.stdout
    out = subprocess.run([sys.executable, "-m", "numbaflow", "cache", "clear"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "removed 1 entries" in out.stdout, out.stderr
    assert not list((tmp_path / "c").glob("nfk_*"))


@pytest.mark.slow
def test_planted_files_never_run_in_a_real_program(tmp_path):
    """End to end: every cached kernel of a training step is replaced by a planted file
    (same name); the next process computes the right numbers and never runs the plants."""
    marker = tmp_path / "planted_code_ran"
    env = script_env(NUMBAFLOW_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBAFLOW_LOG_LEVEL", None)
    first = subprocess.run(script_command("sigmoid_program"), env=env,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and "ok" in first.stdout, first.stderr
    entries = list((tmp_path / "cache").glob("nfk_*.py"))
    assert entries
    for p in entries:
        p.write_text(f"open({str(marker)!r}, 'w').close()\nkernel = None\n", encoding="utf-8")
    second = subprocess.run(script_command("sigmoid_program"), env=env,
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and "ok" in second.stdout, second.stderr
    assert not marker.exists()
    assert second.stderr.count("does not match its name") == len(entries)


@pytest.mark.slow
def test_a_kernel_is_recompiled_when_a_callee_in_another_file_changes(tmp_path):
    """numba keys a cached kernel by its own file only: after a callee's file changes,
    numba alone runs the old machine code (the reference below); numbaflow's wrapping keys
    every entry by the whole package's sources too, so the change is seen."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from numba import njit\nfrom pkg.b import g\n\n\n"
                              "@njit(cache=True)\ndef f():\n    return g() + 1\n")

    def callee_returns(v, bump):
        (pkg / "b.py").write_text(f"from numba import njit\n\n\n@njit(cache=True)\n"
                                  f"def g():\n    return {v}\n")
        os.utime(pkg / "b.py", ns=(bump, bump))

    def f(mode):
        return int(run_script("cross_file_cache", str(tmp_path), mode,
                              NUMBA_CACHE_DIR=str(tmp_path / f"numba_{mode}")).stdout)

    callee_returns(1, 10**18)
    assert (f("plain"), f("wrap")) == (2, 2)
    callee_returns(10, 2 * 10**18)
    assert f("plain") == 2          # numba alone: the stale entry of a.f
    assert f("wrap") == 11
