"""The real models of the `models/` bench group, written in Paddle 2.6's spelling.

Each `*_program(pd)` takes the framework module (`numbaflow` or `paddle`) and returns a
`Built` (main and startup programs, the loss, the LR scheduler to `step()` after each run
or None). The very same function builds numbaflow's program and Paddle's, so the two are
the same program by construction. `batch(name, seed)` makes the feed of one step.

This module imports nothing but numpy at load: it is also imported by the peer worker
(numbaflow/bench/worker.py) inside Paddle's venv (numpy 1.x, no numba, no numbaflow), and
the kernel work imports the builders from here (`from numbaflow.bench.models import
cnn_program`).

Every parameter has an explicit name (ParamAttr) so the torch and JAX versions of the
same model (worker.py) can take numbaflow's initial weights by name.
"""
import importlib
from dataclasses import dataclass

import numpy as np

# The sizes of issue 22 (the models a user brings; numbers the peers are compared on).
CNN = {"batch": 64, "image": 28, "classes": 10, "lr": 0.01, "momentum": 0.9}
GPT = {"batch": 32, "ctx": 64, "vocab": 65, "d_model": 128, "heads": 4, "layers": 2,
       "lr": 1e-3, "warmup": 100, "weight_decay": 0.01}
MLP = {"batch": 128, "sizes": (784, 512, 512, 10), "lr": 0.1}
# The real sizes of issue 27: a CIFAR ResNet-20 and a GPT at width 512.
RESNET20 = {"batch": 64, "image": 32, "classes": 10, "widths": (16, 32, 64), "blocks": 3,
            "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}
GPT_MEDIUM = dict(GPT, batch=8, ctx=256, d_model=512, heads=8, layers=4)
# issue 29: an LSTM language model (the recurrent layers' row)
LSTM = {"batch": 32, "ctx": 64, "vocab": 65, "hidden": 256, "layers": 2, "lr": 0.5}
# inference rows (issue 27): the model whose `test` program runs, at this batch size
INFER = {"resnet20_infer_b1": ("resnet20", 1), "resnet20_infer_b32": ("resnet20", 32)}

WHAT = {
    "cnn": "LeNet CNN 28x28 b64: conv5x5(6)-bn-relu-pool x2 (16), fc 120-84-10, Momentum",
    "gpt": "char GPT 2 layers d128 4 heads ctx64 b32, layer_norm, GELU, AdamW+warmup",
    "mlp": "MLP 784-512-512-10 b128, relu, softmax cross-entropy, SGD",
    "resnet20": "CIFAR ResNet-20 3x32x32 b64: 3 stages x 3 basic blocks (16/32/64), "
                "batch_norm, 1x1 projection shortcuts, global avg pool, Momentum + L2Decay",
    "gpt_medium": "GPT 4 layers d512 8 heads ctx256 b8, layer_norm, GELU, AdamW+warmup",
    "lstm": "char LSTM language model: embedding 256, nn.LSTM 2 layers hidden 256, seq 64 "
            "b32, fc to 65, softmax cross-entropy, SGD",
    "conv": "the CNN's convolutions, forward + backward: conv5x5(6, pad 2) -> max_pool2 -> "
            "conv5x5(16) on 28x28 b64, loss = mean(out^2), Momentum",
    **{name: f"ResNet-20 for_test inference, batch {n}: the logits (onnxruntime runs "
             f"numbaflow's own ONNX export)" for name, (_, n) in INFER.items()},
}

MASK_VALUE = -1e4   # added to the scores above the diagonal (masked before softmax)


@dataclass
class Built:
    """One training program: run `main` with a feed, fetch `loss`, then `scheduler.step()`;
    where the model has an inference form, `test` (main's for_test clone taken before the
    backward) computes `output`."""
    main: object
    startup: object
    loss: object
    scheduler: object = None
    test: object = None
    output: object = None


def _guard(pd):
    """A fresh unique-name generator, so auto-named variables are the same in every run."""
    return importlib.import_module(pd.__name__ + ".utils.unique_name").guard()


def _attr(pd, name):
    return pd.ParamAttr(name=name)


def _layer_norm(pd, x, name, axis):
    # paddle.static.nn.layer_norm (Paddle 2.6); numbaflow has fluid.layers.layer_norm with the
    # same signature today (helper `tensor` adds static.nn.layer_norm / F.layer_norm)
    fn = getattr(pd.static.nn, "layer_norm", None) or pd.fluid.layers.layer_norm
    return fn(x, begin_norm_axis=axis, param_attr=_attr(pd, name + ".w"),
              bias_attr=_attr(pd, name + ".b"))


def cnn_program(pd):
    """LeNet-style CNN: 1x28x28 -> conv5x5(6, pad 2) -> batch_norm -> relu -> max_pool2 ->
    conv5x5(16) -> batch_norm -> relu -> max_pool2 -> fc 120 -> relu -> fc 84 -> relu ->
    fc 10; softmax cross-entropy on int64 labels; Momentum(0.01, 0.9)."""
    F = pd.nn.functional
    main, startup = pd.static.Program(), pd.static.Program()
    with _guard(pd), pd.static.program_guard(main, startup):
        s = CNN["image"]
        h = pd.static.data(name="image", shape=[None, 1, s, s], dtype="float32")
        label = pd.static.data(name="label", shape=[None, 1], dtype="int64")
        for i, (filters, pad) in enumerate(((6, 2), (16, 0))):
            h = pd.static.nn.conv2d(h, filters, 5, padding=pad,
                                    param_attr=_attr(pd, f"conv{i}.w"),
                                    bias_attr=_attr(pd, f"conv{i}.b"))
            h = pd.static.nn.batch_norm(h, param_attr=_attr(pd, f"bn{i}.w"),
                                        bias_attr=_attr(pd, f"bn{i}.b"),
                                        moving_mean_name=f"bn{i}.mean",
                                        moving_variance_name=f"bn{i}.var")
            h = F.max_pool2d(F.relu(h), kernel_size=2, stride=2)
        for i, n in enumerate((120, 84, CNN["classes"])):
            h = pd.static.nn.fc(h, n, weight_attr=_attr(pd, f"fc{i}.w"),
                                bias_attr=_attr(pd, f"fc{i}.b"),
                                activation="relu" if i < 2 else None)
        loss = F.cross_entropy(h, label)
        pd.optimizer.Momentum(learning_rate=CNN["lr"], momentum=CNN["momentum"]).minimize(loss)
    return Built(main, startup, loss)


def conv_program(pd):
    """The CNN's two convolutions alone, forward and backward (data and filter gradients):
    1x28x28 -> conv5x5(6, pad 2) -> max_pool2 -> conv5x5(16); loss = mean of the output's squares;
    Momentum as the CNN. What issue 22's "conv forward+backward against PyTorch's (oneDNN)
    and JAX's" target is measured on; the pool is the CNN's own between the two."""
    F = pd.nn.functional
    main, startup = pd.static.Program(), pd.static.Program()
    with _guard(pd), pd.static.program_guard(main, startup):
        s = CNN["image"]
        h = pd.static.data(name="image", shape=[None, 1, s, s], dtype="float32")
        for i, (filters, pad) in enumerate(((6, 2), (16, 0))):
            if i:
                h = F.max_pool2d(h, kernel_size=2, stride=2)
            h = pd.static.nn.conv2d(h, filters, 5, padding=pad,
                                    param_attr=_attr(pd, f"conv{i}.w"),
                                    bias_attr=_attr(pd, f"conv{i}.b"))
        loss = pd.mean(h * h)     # positive: the peers' losses compare relatively
        pd.optimizer.Momentum(learning_rate=CNN["lr"], momentum=CNN["momentum"]).minimize(loss)
    return Built(main, startup, loss)


def _attention(pd, x, mask, i, g):
    """Causal multi-head self-attention of x [B, T, d] (q, k, v, proj: four fc layers)."""
    F = pd.nn.functional
    t, d, nh = g["ctx"], g["d_model"], g["heads"]
    heads = []
    for part in ("q", "k", "v"):
        y = pd.static.nn.fc(x, d, num_flatten_dims=2, weight_attr=_attr(pd, f"h{i}.{part}.w"),
                            bias_attr=_attr(pd, f"h{i}.{part}.b"))
        heads.append(pd.transpose(pd.reshape(y, [-1, t, nh, d // nh]), [0, 2, 1, 3]))
    q, k, v = heads
    # scale by 1/sqrt(d_head) as its own op, as a user writes it (the `scale` the fusion
    # work folds into the GEMM's alpha)
    scores = pd.scale(pd.matmul(q, k, transpose_y=True), scale=(d // nh) ** -0.5)
    att = F.softmax(scores + mask, axis=-1)
    y = pd.reshape(pd.transpose(pd.matmul(att, v), [0, 2, 1, 3]), [-1, t, d])
    return pd.static.nn.fc(y, d, num_flatten_dims=2, weight_attr=_attr(pd, f"h{i}.proj.w"),
                           bias_attr=_attr(pd, f"h{i}.proj.b"))


def _conv_bn(pd, h, filters, k, stride, name, relu=True):
    h = pd.static.nn.conv2d(h, filters, k, stride=stride, padding=k // 2,
                            param_attr=_attr(pd, name + ".w"), bias_attr=False)
    h = pd.static.nn.batch_norm(h, param_attr=_attr(pd, name + ".bn.w"),
                                bias_attr=_attr(pd, name + ".bn.b"),
                                moving_mean_name=name + ".bn.mean",
                                moving_variance_name=name + ".bn.var")
    return pd.nn.functional.relu(h) if relu else h


def resnet20_program(pd):
    """CIFAR ResNet-20: conv3x3(16)-bn-relu, then 3 stages of 3 basic blocks (conv3x3-bn-relu-
    conv3x3-bn, + the input, or its 1x1 conv-bn projection where the shape changes; relu),
    16/32/64 channels with stride 2 into stages 2 and 3; global average pool, fc 10;
    softmax cross-entropy; Momentum(0.1, 0.9) with L2Decay(1e-4)."""
    F, r = pd.nn.functional, RESNET20
    main, startup = pd.static.Program(), pd.static.Program()
    with _guard(pd), pd.static.program_guard(main, startup):
        s = r["image"]
        x = pd.static.data(name="image", shape=[None, 3, s, s], dtype="float32")
        label = pd.static.data(name="label", shape=[None, 1], dtype="int64")
        h = _conv_bn(pd, x, r["widths"][0], 3, 1, "stem")
        for si, width in enumerate(r["widths"]):
            for b in range(r["blocks"]):
                stride = 2 if si and not b else 1
                name = f"s{si}b{b}"
                y = _conv_bn(pd, h, width, 3, stride, name + ".c1")
                y = _conv_bn(pd, y, width, 3, 1, name + ".c2", relu=False)
                if stride != 1 or h.shape[1] != width:
                    h = _conv_bn(pd, h, width, 1, stride, name + ".proj", relu=False)
                h = F.relu(y + h)
        h = pd.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        logits = pd.static.nn.fc(h, r["classes"], weight_attr=_attr(pd, "fc.w"),
                                 bias_attr=_attr(pd, "fc.b"))
        test = main.clone(for_test=True)      # the logits alone, batch_norm at its statistics
        loss = F.cross_entropy(logits, label)
        pd.optimizer.Momentum(learning_rate=r["lr"], momentum=r["momentum"],
                              weight_decay=pd.regularizer.L2Decay(r["weight_decay"])
                              ).minimize(loss)
    return Built(main, startup, loss, test=test, output=logits)


def gpt_program(pd, g=GPT):
    """Char-level GPT: token + position embeddings, `layers` pre-LN blocks (causal attention,
    MLP 4d with GELU), final layer_norm, fc to the vocabulary; cross-entropy over every
    position; AdamW(weight_decay 0.01) under LinearWarmup(0 -> lr over `warmup` steps).
    The causal mask ([T, T]: 0 on and below the diagonal, MASK_VALUE above) and the position
    ids are constants of the program (paddle.assign of numpy arrays): paddle.triu and
    paddle.arange are not in numbaflow yet (helper `tensor` adds them). Only `tokens` and
    `target` are fed, so data parallelism splits every feed along the batch."""
    F = pd.nn.functional
    t, d, v = g["ctx"], g["d_model"], g["vocab"]
    main, startup = pd.static.Program(), pd.static.Program()
    with _guard(pd), pd.static.program_guard(main, startup):
        tokens = pd.static.data(name="tokens", shape=[None, t], dtype="int64")
        target = pd.static.data(name="target", shape=[None, t, 1], dtype="int64")
        pos = pd.assign(np.arange(t, dtype=np.int64)[None])
        mask = pd.assign(causal_mask(t))
        h = pd.static.nn.embedding(tokens, size=[v, d], param_attr=_attr(pd, "tok_emb"))
        # position table as an embedding of fed ids: static.create_parameter is missing here
        h = h + pd.static.nn.embedding(pos, size=[t, d], param_attr=_attr(pd, "pos_emb"))
        for i in range(g["layers"]):
            h = h + _attention(pd, _layer_norm(pd, h, f"h{i}.ln1", 2), mask, i, g)
            m = _layer_norm(pd, h, f"h{i}.ln2", 2)
            m = pd.static.nn.fc(m, 4 * d, num_flatten_dims=2, weight_attr=_attr(pd, f"h{i}.fc.w"),
                                bias_attr=_attr(pd, f"h{i}.fc.b"))
            m = pd.static.nn.fc(F.gelu(m), d, num_flatten_dims=2,
                                weight_attr=_attr(pd, f"h{i}.out.w"),
                                bias_attr=_attr(pd, f"h{i}.out.b"))
            h = h + m
        h = _layer_norm(pd, h, "ln_f", 2)
        logits = pd.static.nn.fc(h, v, num_flatten_dims=2, weight_attr=_attr(pd, "head.w"),
                                 bias_attr=_attr(pd, "head.b"))
        loss = F.cross_entropy(pd.reshape(logits, [-1, v]), pd.reshape(target, [-1, 1]))
        sched = pd.optimizer.lr.LinearWarmup(learning_rate=g["lr"], warmup_steps=g["warmup"],
                                             start_lr=0.0, end_lr=g["lr"])
        pd.optimizer.AdamW(learning_rate=sched, weight_decay=g["weight_decay"]).minimize(loss)
    return Built(main, startup, loss, sched)


def mlp_program(pd, sizes=MLP["sizes"], lr=MLP["lr"]):
    """MLP `sizes` (default 784-512-512-10), relu between, softmax cross-entropy on int64
    labels, SGD. Parameters keep Paddle's automatic names fc_0.w_0, fc_0.b_0, ..."""
    main, startup = pd.static.Program(), pd.static.Program()
    with _guard(pd), pd.static.program_guard(main, startup):
        h = pd.static.data(name="x", shape=[None, sizes[0]], dtype="float32")
        y = pd.static.data(name="y", shape=[None, 1], dtype="int64")
        for i, n in enumerate(sizes[1:]):
            h = pd.static.nn.fc(h, size=n, activation="relu" if i < len(sizes) - 2 else None)
        loss = pd.nn.functional.cross_entropy(h, y)
        pd.optimizer.SGD(learning_rate=lr).minimize(loss)
    return Built(main, startup, loss)


PROGRAMS = {"cnn": cnn_program, "gpt": gpt_program, "mlp": mlp_program, "conv": conv_program,
            "resnet20": resnet20_program,
            "gpt_medium": lambda pd: gpt_program(pd, GPT_MEDIUM),
            **{name: resnet20_program for name in INFER}}


def lstm_program(pd, g=LSTM):
    """Char LSTM language model: embedding (the hidden width) -> `layers` single-layer
    nn.LSTMs (one per layer, so each parameter has its own name: l<i>.w_ih, ...; the same
    math as nn.LSTM(num_layers=layers)) -> fc to the vocabulary; cross-entropy over every
    position; SGD."""
    F = pd.nn.functional
    t, h, v = g["ctx"], g["hidden"], g["vocab"]
    main, startup = pd.static.Program(), pd.static.Program()
    with _guard(pd), pd.static.program_guard(main, startup):
        tokens = pd.static.data(name="tokens", shape=[None, t], dtype="int64")
        target = pd.static.data(name="target", shape=[None, t, 1], dtype="int64")
        x = pd.static.nn.embedding(tokens, size=[v, h], param_attr=_attr(pd, "emb"))
        for i in range(g["layers"]):
            x, _ = pd.nn.LSTM(h, h, **{f"{k}_attr": _attr(pd, f"l{i}.{k}")
                                       for k in ("weight_ih", "weight_hh", "bias_ih",
                                                 "bias_hh")})(x)
        logits = pd.static.nn.fc(x, v, num_flatten_dims=2, weight_attr=_attr(pd, "head.w"),
                                 bias_attr=_attr(pd, "head.b"))
        loss = F.cross_entropy(pd.reshape(logits, [-1, v]), pd.reshape(target, [-1, 1]))
        pd.optimizer.SGD(learning_rate=g["lr"]).minimize(loss)
    return Built(main, startup, loss)


PROGRAMS["lstm"] = lstm_program


def causal_mask(t):
    """[t, t] float32: 0 on and below the diagonal, MASK_VALUE above."""
    return np.triu(np.full((t, t), MASK_VALUE, np.float32), 1)


def batch(name, seed=0, batch_size=None):
    """The feed of one training step of model `name` (fixed by `seed`)."""
    rng = np.random.default_rng(seed)
    if name in INFER:       # the model's inputs at the row's batch size, no label
        model, n = INFER[name]
        feed = batch(model, seed, batch_size or n)
        del feed["label"]
        return feed
    if name in ("cnn", "conv"):
        n, s = batch_size or CNN["batch"], CNN["image"]
        feed = {"image": rng.standard_normal((n, 1, s, s)).astype(np.float32),
                "label": rng.integers(0, CNN["classes"], (n, 1)).astype(np.int64)}
        if name == "conv":
            del feed["label"]
        return feed
    if name == "resnet20":
        n, s = batch_size or RESNET20["batch"], RESNET20["image"]
        return {"image": rng.standard_normal((n, 3, s, s)).astype(np.float32),
                "label": rng.integers(0, RESNET20["classes"], (n, 1)).astype(np.int64)}
    if name in ("gpt", "gpt_medium", "lstm"):
        g = {"gpt": GPT, "gpt_medium": GPT_MEDIUM, "lstm": LSTM}[name]
        n, t, v = batch_size or g["batch"], g["ctx"], g["vocab"]
        seq = rng.integers(0, v, (n, t + 1)).astype(np.int64)
        return {"tokens": seq[:, :-1].copy(), "target": seq[:, 1:, None].copy()}
    if name == "mlp":
        n = batch_size or MLP["batch"]
        return {"x": rng.standard_normal((n, MLP["sizes"][0])).astype(np.float32),
                "y": rng.integers(0, MLP["sizes"][-1], (n, 1)).astype(np.int64)}
    raise ValueError(f"unknown model {name!r}; expected one of {sorted(PROGRAMS)}")


def parameters(built):
    """The names of the program's trainable parameters and batch-norm statistics, in
    program order (what a peer must start from)."""
    block = built.main.global_block()
    names = [p.name for p in block.all_parameters()]
    stats = [v.name for v in block.vars.values() if v.persistable and
             (v.name.endswith(".mean") or v.name.endswith(".var"))]
    return list(dict.fromkeys(names + sorted(stats)))
