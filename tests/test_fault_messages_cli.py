"""Messages of issue 30, item 8 that name the argument, what was expected and the fix:
numbaflow-bench's --size / --repeat, einsum's letters."""
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.bench import __main__ as bench

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


@pytest.mark.parametrize("argv", [["--size", "0"], ["--repeat", "-1"], ["--size", "x"]])
def test_bench_refuses_sizes_and_repeats_below_one_before_running(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench.parse_args(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert argv[0] in err and ">= 1" in err and repr(argv[1]) in err, err


def test_einsum_size_mismatch_names_the_letter_and_sizes():
    with static.program_guard(static.Program(), static.Program()):
        a = static.data("a", [2, 3], "float32")
        b = static.data("b", [4, 5], "float32")
        with pytest.raises(ValueError, match=r"einsum.*letter 'j' is 3 in one operand and 4 "
                                             r"in b"):
            paddle.einsum("ij,jk->ik", a, b)


def test_einsum_output_letter_in_no_operand_is_named():
    with static.program_guard(static.Program(), static.Program()):
        a = static.data("a", [2, 3], "float32")
        with pytest.raises(ValueError, match=r"einsum.*output letter 'z' is in no operand"):
            paddle.einsum("ij->iz", a)
