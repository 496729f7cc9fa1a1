"""A check for functions built from tensor ops: numpy forward, finite-difference backward
(used by tests/api/test_tensor_api.py and tests/api/test_transformer_blocks.py)."""
import numpy as np

import numbaflow as paddle
import numbaflow.static as static


def check(build, feeds, want=None, grad=True, rtol=1e-10):
    """Build `out = build(*vars)` over float64 / int data vars fed from `feeds` (a list of
    arrays), compare with `want` (numpy), and, with `grad`, compare d sum(out * w) / d
    each float input with central finite differences. Returns the output."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        xs = []
        for i, a in enumerate(feeds):
            v = static.data(f"in{i}", list(a.shape), str(a.dtype))
            v.stop_gradient = a.dtype.kind != "f"
            xs.append(v)
        out = build(*xs)
        outs = out if isinstance(out, (tuple, list)) else [out]
        floats = [v for v in xs if not v.stop_gradient]
        if grad and floats:
            w = static.data("w", list(outs[0].shape), "float64")
            loss = paddle.sum(outs[0] * w)
            grads = static.gradients(loss, floats)
    exe = static.Executor(paddle.CPUPlace())
    feed = {f"in{i}": a for i, a in enumerate(feeds)}
    got = exe.run(main, feed=dict(feed, w=np.zeros(outs[0].shape)) if grad and floats
                  else feed, fetch_list=outs)
    if want is not None:
        wants = want if isinstance(want, (tuple, list)) else [want]
        for g, w_ in zip(got, wants):
            assert g.dtype == np.asarray(w_).dtype, (g.dtype, np.asarray(w_).dtype)
            np.testing.assert_allclose(g, w_, rtol=rtol, atol=1e-12)
    if grad and floats:
        wv = np.random.default_rng(1).uniform(-1, 1, got[0].shape)
        fwd = main.clone(for_test=True)
        have = [g for g in grads if g is not None]      # None: no gradient flows there
        vals = iter(exe.run(main, feed=dict(feed, w=wv), fetch_list=have))
        gs = [next(vals) if g is not None else np.zeros_like(feed[v.name])
              for v, g in zip(floats, grads)]
        for k, (v, g) in enumerate(zip(floats, gs)):
            name = v.name
            base = feed[name]
            num = np.zeros_like(base)
            for i in np.ndindex(base.shape):
                e = np.zeros_like(base)
                e[i] = 1e-6
                f = [exe.run(fwd, feed=dict(feed, **{name: base + s * e}, w=wv),
                             fetch_list=[loss])[0] for s in (1, -1)]
                num[i] = (f[0] - f[1]) / 2e-6
            np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8, err_msg=name)
    return got[0] if len(got) == 1 else got
