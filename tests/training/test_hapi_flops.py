"""paddle.flops against counts worked out by hand from Paddle 2.6's rules, and against
real Paddle's output for the same nets (tests/fixtures/paddle_flops/make_flops_fixture.py)."""
import json
import os

import pytest

import numbaflow as paddle
from numbaflow import nn, static
from numbaflow.utils import unique_name
from locations import TESTS

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

with open(os.path.join(str(TESTS), "fixtures", "paddle_flops", "flops.json"),
          encoding="utf-8") as _f:
    PADDLE = json.load(_f)


def cnn():
    return nn.Sequential(nn.Conv2D(3, 4, 3, padding=1), nn.BatchNorm2D(4), nn.LeakyReLU(),
                         nn.AvgPool2D(2), nn.Conv2D(4, 8, 3, groups=2, bias_attr=False),
                         nn.MaxPool2D(1), nn.AdaptiveAvgPool2D(1), nn.Flatten(),
                         nn.Linear(8, 5))


def mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 10),
                         nn.ReLU6())


# By hand, input [1, 3, 8, 8]: conv 8*8*4 outputs x (3*9 + 1 bias) = 7168; batch norm
# 2 x 256 inputs = 512; leaky relu 256; avg pool 4*4*4 outputs = 64; grouped conv
# 2*2*8 outputs x (4/2 * 9) = 576; max pool 0; adaptive pool 8 outputs x (2*2 + 1) = 40;
# flatten 0; linear 8 in x 5 outputs = 40.
CNN_BY_HAND = [7168, 512, 256, 64, 576, 0, 40, 0, 40]
# input [2, 16]: 16 in x 2*32 outputs = 1024; 32 in x 2*10 outputs = 640; the rest 0.
MLP_BY_HAND = [1024, 0, 0, 640, 0]


def _layer_flops(make, size, capsys, **kw):
    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        total = paddle.flops(make(), size, print_detail=True, **kw)
    return total, capsys.readouterr().out


@pytest.mark.parametrize("name,make,by_hand", [("cnn", cnn, CNN_BY_HAND),
                                               ("mlp", mlp, MLP_BY_HAND)])
def test_layer_flops_by_hand_and_as_paddle_prints_them(name, make, by_hand, capsys):
    total, printed = _layer_flops(make, PADDLE[name]["input_size"], capsys)
    assert total == sum(by_hand) == PADDLE[name]["total"]
    rows = [line for line in printed.splitlines() if line.startswith("|")][1:]
    assert [int(r.split("|")[-2]) for r in rows] == by_hand
    # everything Paddle printed, the table and the totals included, with our module paths
    assert printed == PADDLE[name]["printed"].replace("paddle.nn.layer", "numbaflow.nn.layer")


@pytest.mark.parametrize("name,make", [("cnn", cnn), ("mlp", mlp)])
def test_program_flops_count_ops_as_paddle(name, make, capsys):
    main = static.Program()
    with static.program_guard(main, static.Program()), unique_name.guard():
        make()(static.data("x", PADDLE[name]["input_size"], "float32"))
    assert paddle.flops(main, None) == PADDLE[name]["static_total"]
    paddle.flops(main, None, print_detail=True)
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines()
            if line.startswith("|")][1:]
    assert sum(int(r[2]) for r in rows) == PADDLE[name]["static_total"]
    assert {r[0].strip() for r in rows} == (
        {"conv2d", "elementwise_add", "batch_norm", "pool2d"} if name == "cnn"
        else {"elementwise_add"})


def test_custom_ops_and_bad_arguments(capsys):
    def count_relu(m, x, y):
        m.total_ops += int(x[0].numel())
    total, printed = _layer_flops(mlp, [2, 16], capsys, custom_ops={nn.ReLU: count_relu})
    assert total == 1664 + 2 * 32
    assert "Customize Function has been applied to <class 'numbaflow.nn" in printed
    # a transposed convolution: 6*7*7 outputs x (4 in / 2 groups * 9 + 1 bias)
    total, _ = _layer_flops(lambda: nn.Sequential(nn.Conv2DTranspose(4, 6, 3, groups=2)),
                            [1, 4, 5, 5], capsys)
    assert total == 6 * 7 * 7 * (4 // 2 * 9 + 1)
    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        net = mlp()
    with pytest.raises(ValueError, match="input_size"):
        paddle.flops(net, [-1, 16])
    with pytest.raises(TypeError, match="Layer or a paddle.static.Program"):
        paddle.flops("net", [1, 16])
