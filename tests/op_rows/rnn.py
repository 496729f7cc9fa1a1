"""Table rows for rnn: the numpy reference (numbaflow.testing.rnn_reference, written one
sequence and one step at a time from Paddle's cell equations) for every mode, two layers,
both directions and padded sequences; the gradient rows check BPTT by finite differences."""
from numbaflow.testing.op_test import const, uniform
from numbaflow.testing.rnn_reference import GATES, rnn_reference

from . import row

T, B, IN, H = 4, 3, 2, 2


def _weights(mode, layers, dirs):
    g, shapes = GATES[mode] * H, []
    for l in range(layers):
        for _ in range(dirs):
            shapes += [(g, IN if l == 0 else dirs * H), (g, H)]
    return [uniform(s, -0.8, 0.8) for s in shapes] + [uniform((g,), -0.5, 0.5)
                                                       for _ in shapes]


def rnn_ref(ins, a):
    lens = ins.get("SequenceLength")
    out, states = rnn_reference(ins["Input"], ins["PreState"], ins["WeightList"], a["mode"],
                                a["hidden_size"], a["num_layers"], a["is_bidirec"], lens)
    dt = ins["Input"].dtype
    return {"Out": out.astype(dt), "State": [s.astype(dt) for s in states]}


for _mode in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"):
    for _layers, _bi, _lens in ((1, False, None), (2, True, [4, 2, 1])):
        _d = 2 if _bi else 1
        _ins = {"Input": uniform((T, B, IN)),
                "PreState": [uniform((_layers * _d, B, H))] * (2 if _mode == "LSTM" else 1),
                "WeightList": _weights(_mode, _layers, _d)}
        if _lens is not None:
            _ins["SequenceLength"] = const(_lens, "int32")
        row("rnn", _ins, rnn_ref, f"rnn-{_mode}-L{_layers}-{'bi' if _bi else 'fw'}"
            + ("-lens" if _lens else ""),
            attrs={"mode": _mode, "hidden_size": H, "input_size": IN, "num_layers": _layers,
                   "is_bidirec": _bi}, outputs_for_grad=("Out", "State"), grad_rtol=1e-5,
            grad_atol=1e-7)
