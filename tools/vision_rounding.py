#!/usr/bin/env python3
"""Where numbaflow's first training step of a paddle.vision model parts from Paddle's:
every tensor of step 1 (forward values and gradients) of numbaflow float32 and Paddle
float32 against Paddle float64, from the weights and batch of
tests/nn/test_vision_models.py (tests/fixtures/paddle_layer/vision_weights.py).

    PYTHONPATH=. python tools/vision_rounding.py resnet18 --paddle-python /path/to/paddle/python

Why it exists: that test's step-2/3 tolerances (issue 28). A semantic difference shows as
numbaflow's error jumping far above Paddle float32's at one op; float32 rounding shows as
both off float64 by the same order. Prints, in numbaflow's op order, each tensor both
programs name alike with the two relative errors (||a - a64|| / ||a64||), then the
first ReLU output that is on (> 0) where float64's is off, or off where it is on, in
numbaflow only (an input rounded across 0 switches that element's gradient).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "paddle_layer")


def paddle_worker(name, dtype, out_file):
    """In Paddle's interpreter: one step of `name` in `dtype`, every temporary saved."""
    import paddle
    import paddle.nn.functional as F
    from make_vision_fixture import MODELS
    from vision_weights import feed, weights
    paddle.enable_static()
    paddle.set_default_dtype(dtype)
    make, chw = MODELS[name]
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        img = paddle.static.data("img", [None] + chw, dtype)
        label = paddle.static.data("label", [None, 1], "int64")
        model = make()
        if name == "mobilenet_v2":
            model.classifier[0].p = 0.0
        paddle.optimizer.SGD(0.005).minimize(F.cross_entropy(model(img), label))
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        state = model.state_dict()
        values = weights({k: list(v.shape) for k, v in state.items()})
        for k, v in state.items():
            scope.find_var(v.name).get_tensor().set(values[k].astype(dtype), paddle.CPUPlace())
        data = feed(chw)
        data["img"] = data["img"].astype(dtype)
        names = [v.name for v in main.list_vars() if not v.persistable and "tmp" in v.name]
        got = exe.run(main, feed=data, fetch_list=names)
    np.savez(out_file, **dict(zip(names, got)))


def main(name, paddle_python):
    sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "nn"), FIXTURE]
    tmp = tempfile.mkdtemp()
    ref = {}
    for dtype in ("float64", "float32"):
        path = os.path.join(tmp, dtype + ".npz")
        subprocess.run([paddle_python, __file__, "--worker", name, dtype, path], check=True,
                       cwd=FIXTURE, env=dict(os.environ, PYTHONPATH=FIXTURE))
        ref[dtype] = np.load(path)
    import numbaflow as paddle
    import test_vision_models as T
    from vision_weights import feed, weights
    paddle.enable_static()
    main_p, startup, model, _, chw = T.build(name)
    scope, exe = paddle.static.Scope(), paddle.static.Executor()
    exe.run(startup, scope=scope)
    state = model.state_dict(keys_only=True)
    model.set_state_dict(weights({k: list(v.shape) for k, v in state.items()}), scope=scope)
    block = main_p.global_block()
    order = [v.name for op in block.ops for vs in op.outputs.values() for v in vs]
    names = [n for n in dict.fromkeys(order) if n in ref["float64"].files]
    ours = dict(zip(names, exe.run(main_p, feed=feed(chw), fetch_list=names, scope=scope)))
    first = None
    relus = {v.name for op in block.ops if op.type == "relu" for v in op.outputs["Out"]}
    print(f"{'numbaflow f32':>14} {'Paddle f32':>11}  tensor (relative error against Paddle f64)")
    for n in names:
        exact = ref["float64"][n]
        errs = [np.linalg.norm(a - exact) / max(np.linalg.norm(exact), 1e-30)
                for a in (ours[n], ref["float32"][n])]
        print(f"{errs[0]:14.2e} {errs[1]:11.2e}  {n}")
        if n in relus and first is None:       # a ReLU whose on/off differs from float64's
            on = [a.ravel() > 0 for a in (ours[n], ref["float32"][n], exact)]
            flips = np.flatnonzero((on[0] != on[2]) & (on[1] == on[2]))
            if flips.size:
                first = (n, flips[:5], exact.ravel()[flips[:5]], ours[n].ravel()[flips[:5]],
                         ref["float32"][n].ravel()[flips[:5]])
    if first:
        print("first ReLU switched in numbaflow only: %s at %s: float64 %s, numbaflow %s, "
              "Paddle float32 %s" % first)


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        paddle_worker(*sys.argv[2:5])
    else:
        main(sys.argv[1], sys.argv[sys.argv.index("--paddle-python") + 1])
