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


# ---------------------------------------------------------------- shared graph-building helpers
import pytest  # noqa: E402


@pytest.fixture
def fresh_graph_state():
    """Fresh names, scope, seed state and default programs for one test (restored
    afterwards): a test building into the default main program with fresh names must not
    meet the variables an earlier test left there. Modules that want it for every test say
    `pytestmark = pytest.mark.usefixtures("fresh_graph_state")`."""
    import numbaflow.static as static
    from numbaflow.kernels.tensor import creation
    from numbaflow.utils import unique_name
    with creation.seed_guard(2024), static.scope_guard(static.Scope()), unique_name.guard(), \
            static.program_guard(static.Program(), static.Program()):
        yield
