"""The layer zoo (issue 28): each layer's forward against numpy written from the maths
(parameters set through set_state_dict), containers, and the Transformer against real
Paddle 2.6.2 (tests/fixtures/paddle_layer/transformer.*, make_layer_fixture.py)."""
import json
import math
import os

import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static
from numbaflow.utils import unique_name
from locations import TESTS

pytestmark = pytest.mark.slow      # every test runs programs (compiles kernels)

FIXTURE = os.path.join(str(TESTS), "fixtures", "paddle_layer")
RNG = np.random.default_rng(0)


def run(make, *arrays, state=None, train=False, dtypes=None):
    """Build `make()` (a Layer) on data inputs of the arrays' shapes (batch dim free), set
    `state`, run once; (layer, outputs as a list)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        ins = [static.data(f"in{i}", [None] + list(a.shape[1:]), str(a.dtype))
               for i, a in enumerate(arrays)]
        layer = make()
        if not train:
            layer.eval()
        out = layer(*ins)
    scope, exe = static.Scope(), static.Executor()
    exe.run(startup, scope=scope)
    if state:
        layer.set_state_dict(state, scope=scope)
    outs = out if isinstance(out, (tuple, list)) else [out]
    got = exe.run(main, feed={f"in{i}": a for i, a in enumerate(arrays)}, fetch_list=outs,
                  scope=scope)
    return layer, got


def f32(*shape):
    return RNG.normal(size=shape).astype("float32")


def erf(x):
    return np.vectorize(math.erf)(x)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


ACTIVATIONS = [
    ("ReLU", {}, lambda x: np.maximum(x, 0)),
    ("ReLU6", {}, lambda x: np.clip(x, 0, 6)),
    ("Sigmoid", {}, lambda x: 1 / (1 + np.exp(-x))),
    ("Tanh", {}, np.tanh),
    ("GELU", {}, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2)))),
    ("GELU", {"approximate": True},
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("LeakyReLU", {"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    ("Softmax", {"axis": 1}, lambda x: softmax(x, 1)),
    ("LogSoftmax", {}, lambda x: np.log(softmax(x))),
    ("Silu", {}, lambda x: x / (1 + np.exp(-x))),
    ("Swish", {}, lambda x: x / (1 + np.exp(-x))),
    ("ELU", {"alpha": 0.5}, lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    ("Hardswish", {}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("Hardsigmoid", {}, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("Softplus", {}, lambda x: np.log1p(np.exp(x))),
    ("Mish", {}, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
]


@pytest.mark.parametrize("cls, kwargs, ref", ACTIVATIONS,
                         ids=[f"{a[0]}{a[1] or ''}" for a in ACTIVATIONS])
def test_activation_layer_matches_numpy(cls, kwargs, ref):
    if not hasattr(paddle.nn, cls):
        pytest.skip(f"F.* of nn.{cls} is not in this tree yet")
    x = f32(3, 4) * 3
    _, (got,) = run(lambda: getattr(paddle.nn, cls)(**kwargs), x)
    np.testing.assert_allclose(got, ref(x.astype("float64")), rtol=1e-5, atol=1e-6)


def test_linear_embedding_layer_norm_flatten_identity_pad():
    x = f32(3, 4)
    w, b = f32(4, 2), f32(2)
    fc, (got,) = run(lambda: paddle.nn.Linear(4, 2), x, state={"weight": w, "bias": b})
    np.testing.assert_allclose(got, x @ w + b, rtol=1e-5, atol=1e-6)
    assert fc.bias is not None
    with static.program_guard(static.Program(), static.Program()):
        assert paddle.nn.Linear(2, 2, bias_attr=False).bias is None

    ids = RNG.integers(0, 6, (2, 3)).astype("int64")
    table = f32(6, 5)
    _, (got,) = run(lambda: paddle.nn.Embedding(6, 5), ids, state={"weight": table})
    np.testing.assert_array_equal(got, table[ids])

    x = f32(2, 3, 8)
    g, bb = f32(8), f32(8)
    _, (got,) = run(lambda: paddle.nn.LayerNorm(8), x, state={"weight": g, "bias": bb})
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + bb
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    x = f32(2, 3, 4)
    _, (got,) = run(lambda: paddle.nn.Flatten(), x)
    np.testing.assert_array_equal(got, x.reshape(2, 12))
    _, (got,) = run(lambda: paddle.nn.Sequential(paddle.nn.Identity(), paddle.nn.ReLU()), x)
    np.testing.assert_array_equal(got, np.maximum(x, 0))
    x = f32(1, 2, 3, 3)
    _, (got,) = run(lambda: paddle.nn.Pad2D([1, 0, 2, 1], value=7.0), x)
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (0, 0), (2, 1), (1, 0)],
                                              constant_values=7.0))


def conv_ref(x, w, b, stride, pad):
    x = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + b[None, :, None, None]


def test_conv2d_and_pooling_layers():
    x = f32(2, 3, 6, 6)
    w, b = f32(4, 3, 3, 3), f32(4)
    conv, (got,) = run(lambda: paddle.nn.Conv2D(3, 4, 3, stride=2, padding=1), x,
                       state={"weight": w, "bias": b})
    np.testing.assert_allclose(got, conv_ref(x, w, b, 2, 1), rtol=1e-4, atol=1e-5)
    assert conv.weight.name == "conv2d_0.w_0"
    _, (got,) = run(lambda: paddle.nn.MaxPool2D(2), x)
    np.testing.assert_array_equal(got, x.reshape(2, 3, 3, 2, 3, 2).max((3, 5)))
    _, (got,) = run(lambda: paddle.nn.AvgPool2D(2, stride=2), x)
    np.testing.assert_allclose(got, x.reshape(2, 3, 3, 2, 3, 2).mean((3, 5)), rtol=1e-5)
    _, (got,) = run(lambda: paddle.nn.AdaptiveAvgPool2D(1), x)
    np.testing.assert_allclose(got, x.mean((2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls, shape", [("BatchNorm1D", (4, 3)), ("BatchNorm1D", (4, 3, 5)),
                                        ("BatchNorm2D", (4, 3, 2, 2)),
                                        ("SyncBatchNorm", (4, 3, 2, 2)),
                                        ("BatchNorm", (4, 3, 2, 2))])
def test_batch_norm_layers_train_and_eval(cls, shape):
    x = f32(*shape) * 2 + 1
    axes = tuple(i for i in range(len(shape)) if i != 1)
    c = (slice(None),) + (None,) * (len(shape) - 2)
    st = {"weight": f32(3), "bias": f32(3), "_mean": f32(3),
          "_variance": np.abs(f32(3)) + 0.5}
    _, (got,) = run(lambda: getattr(paddle.nn, cls)(3), x, state=st, train=True)
    want = (x - x.mean(axes)[c]) / np.sqrt(x.var(axes)[c] + 1e-5)
    np.testing.assert_allclose(got, want * st["weight"][c] + st["bias"][c], rtol=1e-4,
                               atol=1e-5)
    _, (got,) = run(lambda: getattr(paddle.nn, cls)(3), x, state=st)
    want = (x - st["_mean"][c]) / np.sqrt(st["_variance"][c] + 1e-5)
    np.testing.assert_allclose(got, want * st["weight"][c] + st["bias"][c], rtol=1e-4,
                               atol=1e-5)


def test_loss_layers():
    x, y = f32(5, 3), RNG.integers(0, 3, (5, 1)).astype("int64")
    _, (got,) = run(lambda: paddle.nn.CrossEntropyLoss(), x, y)
    logp = np.log(softmax(x.astype("float64")))
    np.testing.assert_allclose(got, -logp[np.arange(5), y[:, 0]].mean(), rtol=1e-5)
    t = f32(5, 3)
    _, (got,) = run(lambda: paddle.nn.MSELoss(reduction="sum"), x, t)
    np.testing.assert_allclose(got, ((x - t) ** 2).sum(), rtol=1e-5)
    if hasattr(paddle.nn, "L1Loss"):
        _, (got,) = run(lambda: paddle.nn.L1Loss(), x, t)
        np.testing.assert_allclose(got, np.abs(x - t).mean(), rtol=1e-5)


def test_containers_and_multi_head_attention_against_numpy():
    x = f32(2, 4)
    blocks = lambda: paddle.nn.Sequential(  # noqa: E731
        ("fc", paddle.nn.Linear(4, 4)), ("act", paddle.nn.Tanh()))
    seq, (got,) = run(blocks, x, state={"fc.weight": np.eye(4, dtype="float32"),
                                        "fc.bias": np.ones(4, "float32")})
    np.testing.assert_allclose(got, np.tanh(x + 1), rtol=1e-5)
    assert isinstance(seq[0], paddle.nn.Linear) and len(seq[1:]) == 1

    with static.program_guard(static.Program(), static.Program()), unique_name.guard():
        ll = paddle.nn.LayerList([paddle.nn.Linear(2, 2)])
        ll.append(paddle.nn.ReLU())
        ll.insert(0, paddle.nn.Tanh())
        assert [type(m).__name__ for m in ll] == ["Tanh", "Linear", "ReLU"]
        assert list(ll.state_dict(keys_only=True)) == ["1.weight", "1.bias"]
        del ll[0]
        assert type(ll[0]).__name__ == "Linear" and len(ll) == 2
        d = paddle.nn.LayerDict({"a": paddle.nn.ReLU()})
        d["b"] = paddle.nn.Linear(2, 3)
        assert list(d.keys()) == ["a", "b"] and "b" in d
        assert list(d.state_dict(keys_only=True)) == ["b.weight", "b.bias"]

    q = f32(2, 3, 4)
    mha_state = {f"{p}.weight": f32(4, 4) for p in ("q_proj", "k_proj", "v_proj", "out_proj")}
    mha_state.update({f"{p}.bias": f32(4) for p in ("q_proj", "k_proj", "v_proj", "out_proj")})
    _, (got,) = run(lambda: paddle.nn.MultiHeadAttention(4, 2), q, state=mha_state)

    def proj(name, a):
        h = a @ mha_state[f"{name}.weight"] + mha_state[f"{name}.bias"]
        return h.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3)
    s = proj("q_proj", q) @ proj("k_proj", q).transpose(0, 1, 3, 2) / np.sqrt(2)
    o = (softmax(s) @ proj("v_proj", q)).transpose(0, 2, 1, 3).reshape(2, 3, 4)
    want = o @ mha_state["out_proj.weight"] + mha_state["out_proj.bias"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_transformer_matches_paddle_from_its_pdparams():
    data = np.load(os.path.join(FIXTURE, "transformer.npz"))
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup), unique_name.guard():
        src = static.data("src", [None, 5, 8])
        tgt = static.data("tgt", [None, 4, 8])
        keep = static.data("keep", [None, 1, 1, 5], "bool")
        model = paddle.nn.Transformer(8, 2, 1, 1, 16, activation="gelu")
        model.eval()
        out = model(src, tgt, src_mask=keep, tgt_mask=model.generate_square_subsequent_mask(4))
    assert [p.name for p in model.parameters()] == list(data["param_names"])
    assert list(model.state_dict(keys_only=True)) == list(data["state_keys"])
    scope, exe = static.Scope(), static.Executor()
    exe.run(startup, scope=scope)
    model.set_state_dict(paddle.load(os.path.join(FIXTURE, "transformer.pdparams")),
                         scope=scope)
    (got,) = exe.run(main, feed={k: data[k] for k in ("src", "tgt", "keep")},
                     fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, data["out"], rtol=1e-4, atol=1e-5)


with open(os.path.join(FIXTURE, "zoo.json")) as _f:
    ZOO = json.load(_f)


@pytest.mark.parametrize("i", range(len(ZOO)), ids=[row["ctor"][10:] for row in ZOO])
def test_layer_matches_paddle(i):
    # built as Paddle built it (make_zoo_fixture.py), Paddle's state loaded, eval mode
    row, data = ZOO[i], np.load(os.path.join(FIXTURE, "zoo.npz"))
    layer_name = row["ctor"].split("(")[0].split(".")[-1]
    if not hasattr(paddle.nn, layer_name):
        pytest.skip(f"nn.{layer_name}'s functional op is not in this tree")
    prefix = f"{i}/state/"
    state = {k[len(prefix):]: data[k] for k in data.files if k.startswith(prefix)}
    layer, (got,) = run(lambda: eval(row["ctor"], {"paddle": paddle}), data[f"{i}/x"],
                        state=state)
    assert [p.name for p in layer.parameters()] == row["param_names"]
    assert list(layer.state_dict(keys_only=True)) == row["state_keys"]
    np.testing.assert_allclose(got, data[f"{i}/out"], rtol=1e-5, atol=1e-5)
