"""The size budget (.ci/size_budget.py): product files within 500 lines, except the
listed ones with a reason, each area and the total within their caps; the duplicate budget
(tools/duplicates.py); each check itself notices what it guards against."""
import importlib.util
import pathlib

import pytest
from locations import ROOT

SCRIPT = ROOT / ".ci" / "size_budget.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists() or not (ROOT / "numbaflow").is_dir(),
                                reason="needs a source checkout (.ci/ and numbaflow/)")


def budget():
    spec = importlib.util.spec_from_file_location("size_budget", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_product_files_are_within_the_budget(capsys):
    mod = budget()
    assert mod.main() == 0, capsys.readouterr().err
    assert "product lines in" in capsys.readouterr().out
    for path, (limit, why) in mod.EXCEPTIONS.items():
        assert limit > mod.LIMIT and len(why) > 20, path


def test_the_check_sees_a_file_over_the_budget(tmp_path):
    mod = budget()
    (tmp_path / "numbaflow" / "sub").mkdir(parents=True)
    (tmp_path / "numbaflow" / "small.py").write_text("x = 1\n" * 10)
    (tmp_path / "numbaflow" / "sub" / "big.py").write_text("x = 1\n" * (mod.LIMIT + 1))
    total, problems = mod.check(tmp_path)
    assert total == 10 + mod.LIMIT + 1
    assert any(p.startswith("numbaflow/sub/big.py: 501 lines") for p in problems), problems


def test_an_area_over_its_cap_and_a_new_area_are_reported(tmp_path, monkeypatch):
    mod = budget()
    (tmp_path / "numbaflow" / "kernels").mkdir(parents=True)
    (tmp_path / "numbaflow" / "newarea").mkdir()
    (tmp_path / "numbaflow" / "kernels" / "a.py").write_text("x = 1\n" * 30)
    (tmp_path / "numbaflow" / "newarea" / "b.py").write_text("x = 1\n")
    monkeypatch.setitem(mod.AREA_CAPS, "kernels", 20)
    monkeypatch.setattr(mod, "TOTAL_CAP", 25)
    areas = {}
    total, problems = mod.check(tmp_path, areas)
    assert areas == {"kernels": [1, 30], "newarea": [1, 1]}
    assert any(p.startswith("numbaflow/kernels: 30 lines, over its cap of 20") for p in problems)
    assert any(p.startswith("numbaflow/newarea: a new area with no cap") for p in problems)
    assert any("over TOTAL_CAP 25" in p for p in problems), problems
    assert "kernels" in mod.table(areas, total).splitlines()[1]


DUPLICATES = ROOT / "tools" / "duplicates.py"


def duplicates():
    spec = importlib.util.spec_from_file_location("duplicates", DUPLICATES)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not DUPLICATES.exists(), reason="needs a source checkout (tools/)")
def test_duplicate_pairs_are_within_their_cap(capsys):
    mod = duplicates()
    assert mod.main([]) == 0, capsys.readouterr().err
    assert "pairs of places share runs of 6+" in capsys.readouterr().out


@pytest.mark.skipif(not DUPLICATES.exists(), reason="needs a source checkout (tools/)")
def test_the_duplicate_count_sees_a_repeated_run(tmp_path):
    mod = duplicates()
    (tmp_path / "numbaflow").mkdir()
    lines = [f"v{i} = f(x, {i})\n" for i in range(7)]
    body = "".join(lines)
    # the same 7 lines in two files, with a comment, a blank line and an import between them
    # in the second (passed over); a 5-line run in a third file does not count
    (tmp_path / "numbaflow" / "a.py").write_text("def a():\n" + body)
    (tmp_path / "numbaflow" / "b.py").write_text(
        "import os\n" + "".join(lines[:3]) + "\n# why\nimport sys\n" + "".join(lines[3:]))
    (tmp_path / "numbaflow" / "c.py").write_text("".join(lines[:5]))
    found = mod.pairs(tmp_path)
    assert list(found) == [("numbaflow/a.py", "numbaflow/b.py")], found
    assert found[("numbaflow/a.py", "numbaflow/b.py")][0] == 7
