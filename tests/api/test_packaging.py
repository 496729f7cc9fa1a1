"""The sdist carries everything the tests need, and the tests pass against the INSTALLED
package: the sdist is built, installed into a private directory, and a subset of its own
tests runs from a directory that holds only tests/ and pyproject.toml (so `import numbaflow`
cannot find a source tree)."""
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from locations import ROOT

NEEDED = ["tests/conftest.py", "tests/mpirun.py", "tests/op_rows/__init__.py",
          "tests/op_rows/core.py", "tests/mpi/abort.py", "tests/kernels/test_op_table.py",
          "numbaflow/__main__.py", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "LICENSE"]
SUBSET = ["tests/graph/test_program.py", "tests/kernels/test_kernel_cache.py", "tests/training/test_health.py",
          "tests/kernels/test_op_table.py::test_forward[relu-float32]",
          "tests/kernels/test_op_table.py::test_grad[relu]"]


def _build_sdist(tmp_path):
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("building the sdist offline needs setuptools >= 77 (the 'test' extra has it)")
    src = tmp_path / "src"      # a copy: the build writes numbaflow.egg-info into its tree
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "__pycache__", "*.egg-info", ".pytest_cache", "build", "dist",
        ".hypothesis"))
    out = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                        "print(build_meta.build_sdist(sys.argv[1]))", str(out)], cwd=src,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return out / r.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_sdist_installs_and_its_tests_pass_against_the_installed_package(tmp_path):
    sdist = _build_sdist(tmp_path)
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        names = {n[len(top) + 1:] for n in tar.getnames()}
        assert not [n for n in NEEDED if n not in names], sorted(names)
        assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".nbi"))]
        tar.extractall(tmp_path / "x", filter="data")
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-build-isolation", "--target", str(site), str(sdist)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]

    run = tmp_path / "run"      # the sdist's tests/ and pyproject.toml (markers), no source
    shutil.copytree(tmp_path / "x" / top / "tests", run / "tests")
    shutil.copy(tmp_path / "x" / top / "pyproject.toml", run)
    env = dict(os.environ, PYTHONPATH=str(site), NUMBAFLOW_CACHE_DIR=str(tmp_path / "cache"))
    where = subprocess.run([sys.executable, "-c", "import numbaflow; print(numbaflow.__file__)"],
                           cwd=run, env=env, capture_output=True, text=True, timeout=120)
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        "-m", "not slow", *SUBSET], cwd=run, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and " failed" not in r.stdout
    assert "Unknown pytest.mark" not in r.stdout      # the markers are registered
