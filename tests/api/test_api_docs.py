"""The API reference: every public name is listed and documented, the strategies list
their options in help(), type hints and py.typed ship, and the HTML reference builds.

The public API is what tests/api_inventory.py finds (each public module's `__all__`);
a name added later without a docstring or without an entry in `__all__` fails here.
"""
import inspect
import pydoc
import re
from pathlib import Path

import pytest

import api_inventory
from locations import ROOT



def _doc(obj):
    return (obj.__doc__ if isinstance(obj, property) else inspect.getdoc(obj)) or ""


def _signature(obj):
    """The signature users call: a function's, or a class's own __init__ (None for a class
    without one)."""
    if inspect.isclass(obj) and obj.__init__ is object.__init__:
        return None
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def _params(obj):
    sig = _signature(obj)
    if sig is None:
        return []
    return [p for p in sig.parameters.values() if p.name not in ("self", "cls")]


def test_public_modules_declare_all():
    for name, mod in api_inventory.public_modules().items():
        assert hasattr(mod, "__all__"), f"{name} has no __all__ (its public API)"
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert not missing, f"{name}.__all__ lists names it lacks: {missing}"


def test_no_public_name_is_left_out_of_all():
    problems = {name: api_inventory.unlisted_names(mod)
                for name, mod in api_inventory.public_modules().items()}
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, (
        f"public names missing from their module's __all__: {problems}. Add each to __all__ "
        f"(and document it), rename it with a leading underscore, or, if it is only imported "
        f"for the module's own use, add it to HELPER_IMPORTS in tests/api_inventory.py")


def test_every_public_callable_has_a_docstring():
    top, members = api_inventory.public_callables()
    assert len(top) > 120, "the inventory lost most of the API"
    missing = [q for q, obj in top + members if not _doc(obj).strip()]
    assert not missing, f"{len(missing)} public callables have no docstring: {missing}"


def test_every_public_function_and_class_has_an_example():
    top, _ = api_inventory.public_callables()
    missing = [q for q, obj in top if ">>>" not in _doc(obj)]
    assert not missing, f"{len(missing)} public callables have no example (>>>): {missing}"


def test_docstrings_describe_arguments_and_return_value():
    top, members = api_inventory.public_callables()
    no_args, no_returns = [], []
    for qualname, obj in top + [m for m in members if inspect.isfunction(m[1])]:
        doc = _doc(obj) + ("" if not inspect.isclass(obj) else _doc(obj.__init__))
        if _params(obj) and "Args:" not in doc:
            no_args.append(qualname)
        sig = _signature(obj)
        returns_none = sig is not None and (sig.return_annotation in (None, "None") or
                                            str(sig.return_annotation).endswith("NoReturn"))
        if (inspect.isfunction(obj) and not returns_none
                and not re.search(r"^(Returns|Yields):", doc, re.M)):
            no_returns.append(qualname)
    assert not no_args, f"docstrings without an Args: section: {no_args}"
    assert not no_returns, (f"docstrings without a Returns: section (or a `-> None` "
                            f"annotation): {no_returns}")


def test_public_functions_have_type_hints():
    top, _ = api_inventory.public_callables()
    missing = []
    for qualname, obj in top:
        sig = _signature(obj)
        if sig is None:
            continue
        bare = [p.name for p in _params(obj) if p.annotation is inspect.Parameter.empty]
        if inspect.isfunction(obj) and sig.return_annotation is inspect.Signature.empty:
            bare.append("return")
        if bare:
            missing.append(f"{qualname}({', '.join(bare)})")
    assert not missing, f"public callables without type hints: {missing}"


@pytest.mark.parametrize("cls_name", ["BuildStrategy", "ExecutionStrategy"])
def test_strategy_help_lists_every_option_with_its_default(cls_name):
    import numbaflow.static as static
    cls = getattr(static, cls_name)
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    instance = cls()
    for option in cls._SCHEMA:
        line = next((ln for ln in text.splitlines()
                     if ln.lstrip(" |-").startswith(option + " (")), None)
        assert line is not None, f"help({cls_name}) does not describe option {option!r}"
        default = getattr(instance, option)
        shown = default.name if hasattr(default, "name") else repr(default)
        if option not in ("num_trainers", "trainer_id"):    # these read the MPI environment
            assert shown in line, (f"help({cls_name}): option {option!r} should show its "
                                   f"default {shown}: {line!r}")


def test_py_typed_marker_ships_with_the_package():
    import numbaflow
    assert (Path(numbaflow.__file__).parent / "py.typed").is_file()
    pyproject = ROOT / "pyproject.toml"
    if pyproject.is_file():          # a source tree (not an installed copy of the tests)
        text = pyproject.read_text(encoding="utf-8")
        package_data = r'\[tool\.setuptools\.package-data\][^\[]*numbaflow\s*='
        assert re.search(package_data + r'\s*\[[^\]]*py\.typed', text), \
            "pyproject.toml must list py.typed as package data"


def test_every_public_module_is_listed_in_its_packages_all():
    # a package's submodule is part of its API only when the package's __all__ lists it (when
    # it has one): that is how numbaflow.distributed once lost its reference page
    import importlib
    unlisted = []
    for name in api_inventory.public_modules():
        parent, _, leaf = name.rpartition(".")
        if parent:
            listed = getattr(importlib.import_module(parent), "__all__", None)
            if listed is not None and leaf not in listed:
                unlisted.append(name)
    assert not unlisted, f"public modules missing from their package's __all__: {unlisted}"
