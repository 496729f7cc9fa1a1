"""A small char-level GPT written for Paddle 2.6's static graph, run unchanged on real
Paddle (tests/fixtures/make_paddle_gpt.py stores its numbers) and on numbaflow
(tests/training/test_paddle_gpt.py): the caller passes the module it imported as `paddle`, the
only difference between the two runs.

Every weight comes from a fixed numpy stream through `Assign` initializers and the
batches are fixed, so both frameworks train the same numbers. Dropout is off (its masks
are framework-specific random streams).
"""
import numpy as np

V, T, C, H, LAYERS, BATCH = 17, 8, 16, 2, 2, 4


def build(paddle, rng):
    """(main, startup, tokens, labels, loss, next_token_logits, scheduler)."""
    static, F = paddle.static, paddle.nn.functional

    def attr(*shape, scale=0.2):
        w = (rng.standard_normal(shape) * scale).astype("float32")
        return paddle.ParamAttr(initializer=paddle.nn.initializer.Assign(w))

    def fc(x, size):
        return static.nn.fc(x, size, num_flatten_dims=2, weight_attr=attr(x.shape[-1], size),
                            bias_attr=attr(size, scale=0.02))

    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        tokens = static.data("tokens", [None, T], "int64")
        labels = static.data("labels", [None, T], "int64")
        x = static.nn.embedding(tokens, size=[V, C], param_attr=attr(V, C))
        pos = static.create_parameter([T, C], "float32", attr=attr(T, C))
        x = x + pos
        mask = paddle.triu(paddle.full([T, T], -1e9, "float32"), diagonal=1)
        for _ in range(LAYERS):
            h = static.nn.layer_norm(x, begin_norm_axis=2)
            qkv = fc(h, 3 * C)
            q, k, v = paddle.split(qkv, 3, axis=-1)
            q, k, v = (paddle.transpose(paddle.reshape(t, [0, 0, H, C // H]), [0, 2, 1, 3])
                       for t in (q, k, v))
            att = paddle.matmul(q, k, transpose_y=True) * (1.0 / np.sqrt(C // H))
            att = F.softmax(att + mask, axis=-1)
            y = paddle.reshape(paddle.transpose(paddle.matmul(att, v), [0, 2, 1, 3]),
                               [0, 0, C])
            x = x + fc(y, C)
            w = static.create_parameter([C], "float32",
                                        default_initializer=paddle.nn.initializer.Constant(1.0))
            b = static.create_parameter([C], "float32", is_bias=True)
            x = x + fc(F.gelu(fc(F.layer_norm(x, C, weight=w, bias=b), 4 * C)), C)
        logits = fc(F.layer_norm(x, C), V)
        loss = F.cross_entropy(paddle.reshape(logits, [-1, V]),
                               paddle.reshape(labels, [-1, 1]))
        next_logits = logits[:, -1, :]
        test_program = main.clone(for_test=True)
        sched = paddle.optimizer.lr.LinearWarmup(learning_rate=3e-3, warmup_steps=5,
                                                 start_lr=0.0, end_lr=3e-3)
        paddle.optimizer.AdamW(learning_rate=sched, weight_decay=0.01).minimize(loss)
    return main, startup, test_program, loss, next_logits, sched


def batches(steps, seed=1):
    """Fixed (tokens, labels) batches of a repeating pattern with noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        start = rng.integers(0, V, (BATCH, 1))
        seq = (start + np.arange(T + 1) * rng.integers(1, 3, (BATCH, 1))) % V
        out.append((seq[:, :-1].astype("int64"), seq[:, 1:].astype("int64")))
    return out


def run(paddle, steps=30):
    """Train `steps` steps; returns {'losses': [...], 'topk': indices of the 3 likeliest
    next tokens of the first test batch after training (the test clone)}."""
    paddle.enable_static()
    main, startup, test_program, loss, next_logits, sched = build(
        paddle, np.random.default_rng(0))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    losses = []
    for tokens, labels in batches(steps):
        (value,) = exe.run(main, feed={"tokens": tokens, "labels": labels}, fetch_list=[loss])
        losses.append(float(np.asarray(value).reshape(-1)[0]))
        sched.step()
    tokens, labels = batches(1, seed=2)[0]
    (logits,) = exe.run(test_program, feed={"tokens": tokens, "labels": labels},
                        fetch_list=[next_logits])
    top3 = np.argsort(-np.asarray(logits), axis=-1, kind="stable")[:, :3]
    return {"losses": losses, "top3": top3.tolist(),
            "next_logits": np.asarray(logits).round(5).tolist()}
