"""Run the examples (doctests) in the docstrings of numbaflow's public API.

Every public module, function, class, method and property (tests/api_inventory.py)
is one test. An example starts from the names that the package docstring promises
(`np`, `paddle`, `static`, `fluid`, `F`, `dist`) and runs in its own fresh main and
startup programs, unique-name counter and scope, so examples never see each other's
variables. Examples that run an Executor compile kernels; they are marked slow.
"""
import doctest
import inspect
import io

import numpy as np
import pytest

import api_inventory

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _globs():
    import numbaflow
    import numbaflow.distributed
    import numbaflow.nn.functional
    return {"np": np, "paddle": numbaflow, "static": numbaflow.static,
            "fluid": numbaflow.fluid, "F": numbaflow.nn.functional,
            "dist": numbaflow.distributed}


def _collect():
    finder = doctest.DocTestFinder(recurse=False, exclude_empty=True)
    objects = [(m.__name__, m) for m in api_inventory.public_modules().values()]
    top, members = api_inventory.public_callables()
    objects += top + members
    tests = []
    for qualname, obj in objects:
        target = obj.fget if isinstance(obj, property) else obj
        module = inspect.getmodule(target)
        for t in finder.find(target, qualname, module=module, globs={}):
            if t.examples:
                slow = any("exe.run(" in e.source for e in t.examples)   # examples name it exe
                marks = [pytest.mark.slow] if slow else []
                tests.append(pytest.param(t, id=qualname, marks=marks))
    return tests


@pytest.mark.parametrize("test", _collect())
def test_docstring_example(test):
    import numbaflow.static as static
    from numbaflow.kernels.tensor import creation
    from numbaflow.utils import unique_name
    test.globs = _globs()
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    with creation.seed_guard(), static.program_guard(static.Program(), static.Program()), \
            static.scope_guard(static.Scope()), unique_name.guard():
        result = runner.run(test, out=out.write)
    assert result.failed == 0, out.getvalue()


def test_examples_were_found():
    """The collector sees the examples (a broken finder would pass vacuously)."""
    ids = {p.id for p in _collect()}
    for name in ("numbaflow", "numbaflow.static.Executor.run", "numbaflow.static.nn.fc",
                 "numbaflow.add", "numbaflow.optimizer.Adam"):
        assert name in ids, f"no doctest collected for {name}"
