"""The size budget (.ci/size_budget.py): product files within 500 lines, except the
listed ones with a reason; the check itself notices a file over its budget."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
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
