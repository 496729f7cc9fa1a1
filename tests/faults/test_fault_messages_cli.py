"""Messages of issue 30, item 8 that name the argument, what was expected and the fix:
numbaflow-bench's --size / --repeat, einsum's letters, attention's shapes."""
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


@pytest.mark.parametrize("kshape,vshape,match", [
    ([2, 5, 4, 6], [2, 5, 4, 8], r"query q .* and key k .* same head_dim .* got 8 and 6"),
    ([2, 5, 4, 8], [2, 7, 4, 8], r"key k .* and value v .* same seq_len .* got 5 and 7"),
    ([2, 5, 3, 8], [2, 5, 3, 8], r"query q .* and key k .* same num_heads .* got 4 and 3"),
])
def test_attention_shape_mismatches_name_the_arguments(kshape, vshape, match):
    # before: an error about a matmul_v2 of the lowered temporaries
    with static.program_guard(static.Program(), static.Program()):
        q = static.data("q", [2, 5, 4, 8], "float32")
        k = static.data("k", kshape, "float32")
        v = static.data("v", vshape, "float32")
        with pytest.raises(ValueError, match="scaled_dot_product_attention: " + match):
            paddle.nn.functional.scaled_dot_product_attention(q, k, v)
