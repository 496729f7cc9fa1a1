"""Test session setup: keep generated kernels out of the user's cache unless asked."""
import os
import shutil
import tempfile

# Generated kernels go to a per-session temporary directory unless the user chose one
# (set before numbaflow is imported by any test module; config reads it per call).
_OWN_CACHE = None
if not os.environ.get("NUMBAFLOW_CACHE_DIR"):
    _OWN_CACHE = tempfile.mkdtemp(prefix="numbaflow-test-kernels-")
    os.environ["NUMBAFLOW_CACHE_DIR"] = _OWN_CACHE


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)
