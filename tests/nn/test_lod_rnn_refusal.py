"""fluid.layers.dynamic_lstm / dynamic_lstmp / dynamic_gru (Paddle 1.x's LoD sequence layers)
are refused by name with what is unsupported (LoD input, their cells) and what to use instead
(issue 29 item 4)."""
import pytest

import numbaflow.fluid as fluid


@pytest.mark.parametrize("name,says", [
    ("dynamic_lstm", ["LoDTensor", "peephole", "paddle.nn.LSTM", "sequence_length"]),
    ("dynamic_lstmp", ["LoDTensor", "projection", "paddle.nn.LSTM"]),
    ("dynamic_gru", ["LoDTensor", "reset gate", "paddle.nn.GRU", "sequence_length"])])
def test_lod_rnn_layers_are_refused_by_name(name, says):
    with pytest.raises(AttributeError) as info:
        getattr(fluid.layers, name)
    for word in says:
        assert word in str(info.value)
    assert not hasattr(fluid.layers, name)


def test_other_missing_names_keep_the_plain_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_layer'"):
        fluid.layers.no_such_layer
    assert callable(fluid.layers.lstm)
