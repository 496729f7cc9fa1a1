"""`--only NAME`: the cases whose name contains NAME, except that a NAME equal to one case's
whole name selects that case alone (`--only models/gpt` once also ran models/gpt_medium)."""
from numbaflow.bench import __main__ as bench
from numbaflow.bench.cases import all_cases


def _names(only):
    return [c.name for c in bench.select(all_cases(), only, False)]


def test_a_whole_case_name_selects_that_case_alone():
    assert _names(["models/gpt"]) == ["models/gpt"]
    assert _names(["models/resnet20", "models/gpt"]) == ["models/gpt", "models/resnet20"]


def test_a_part_of_a_name_selects_every_case_containing_it():
    names = _names(["models/resnet20"[:-2]])
    assert {"models/resnet20", "models/resnet20_infer_b1", "models/resnet20_infer_b32"} <= set(names)
    assert "models/gpt_medium" in _names(["models/gpt_"]) and \
        "models/gpt" not in _names(["models/gpt_"])
