"""train_gpt samples in one run of a static.nn.while_loop (issue 29 item 7): with greedy
decoding (temperature 0) its characters are those of the per-token path (one program run
per character, --per-token), the reference, from the same trained weights."""
import pytest

from numbaflow.examples import train_gpt

GREEDY = ["--steps", "4", "--log-every", "4", "--layers", "1", "--width", "32",
          "--context", "16", "--batch-size", "8", "--sample", "24", "--temperature", "0"]


@pytest.mark.slow       # two short trainings and the loop's compile
def test_sampling_loop_gives_the_per_token_characters():
    looped = train_gpt.train(train_gpt.parse_args(GREEDY))["sample"]
    per_token = train_gpt.train(train_gpt.parse_args(GREEDY + ["--per-token"]))["sample"]
    assert len(looped) == 24
    assert looped == per_token
