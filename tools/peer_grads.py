#!/usr/bin/env python3
"""First-step gradients and first losses of a bench model in numbaflow, Paddle and PyTorch,
each against PyTorch in float64 from the same weights and batch (numbaflow's).

    PYTHONPATH=. python tools/peer_grads.py resnet20 --peer-file peers.json [--steps 5]

Why it exists: models/resnet20's Paddle worker missed the bench's 1e-4 loss agreement at the
third step (issue 27). A semantic difference (batch-norm variance, L2Decay on some parameters,
Momentum's order) shows as a gradient or update off by far more than float32 rounding in
one framework only; float32 accumulation shows as every float32 framework off the float64
reference by the same order, and a gap that grows step by step. This prints, per framework,
the worst relative gradient error over the parameters (||g - g64|| / ||g64||, per
parameter) and each step's loss error against float64.

Each framework runs in its own interpreter (numbaflow this one; paddle and torch from the
peer file, as `numbaflow-bench --peer-file`): this file runs itself as the worker there.
"""
import json
import os
import subprocess
import sys
import tempfile

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numbaflow", "bench")


def static_run(framework, model, d, steps, reference):
    """numbaflow or paddle: first-step gradients (name@GRAD) and `steps` losses."""
    import models
    import numpy as np
    import worker
    s = worker.StaticStep(framework, model, d, reference)
    names = [n for n in models.parameters(s.built) if not n.endswith((".mean", ".var"))]
    out = s.exe.run(s.built.main, feed=s.feed, scope=s.scope,
                    fetch_list=[s.built.loss] + [n + "@GRAD" for n in names])
    if s.built.scheduler is not None:
        s.built.scheduler.step()
    losses = [float(np.asarray(out[0]).ravel()[0])] + [s.step() for _ in range(steps - 1)]
    return losses, {n: np.asarray(g, np.float64) for n, g in zip(names, out[1:])}


def torch_run(model, d, steps, bits):
    """PyTorch (float32 or float64) from the same weights: gradients of step 0, losses."""
    import numpy as np
    import torch
    import peer_models
    import worker
    dt = {32: torch.float32, 64: torch.float64}[bits]
    s = peer_models.TorchStep(model, worker.read_index(d), d)
    with torch.no_grad():
        for v in s.p.values():
            v.data = v.data.to(dt)
    s.feed = {k: v.to(dt) if v.is_floating_point() else v for k, v in s.feed.items()}
    loss = s.fwd(s.p, **s.feed)     # step 0 by hand, to keep its gradients (no LR schedule)
    loss.backward()
    grads = {n: v.grad.double().numpy().copy() for n, v in s.p.items() if v.grad is not None}
    s.opt.step()
    s.opt.zero_grad(set_to_none=True)
    s.k = 1
    return [loss.item()] + [s.step() for _ in range(steps - 1)], grads


def work(framework, model, d, steps):
    """The worker side: run one framework, write its losses and gradients to d."""
    import numpy as np
    sys.path.insert(0, BENCH)
    if framework.startswith("torch"):
        losses, grads = torch_run(model, d, steps, int(framework[5:]))
    else:
        losses, grads = static_run(framework, model, d, steps, framework == "numbaflow")
    np.savez(os.path.join(d, framework + ".npz"), **grads)
    with open(os.path.join(d, framework + ".json"), "w", encoding="utf-8") as f:
        json.dump(losses, f)


def main(argv):
    import argparse

    import numpy as np
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--peer-file", required=True, help='{"torch": PYTHON, "paddle": PYTHON}')
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--keep", metavar="DIR", help="write the weights, batch and gradients here")
    a = p.parse_args(argv)
    with open(a.peer_file, encoding="utf-8") as f:
        peers = json.load(f)
    runs = [("numbaflow", sys.executable), ("torch64", peers["torch"]),
            ("torch32", peers["torch"])] + ([("paddle", peers["paddle"])] if "paddle" in peers
                                             else [])
    with tempfile.TemporaryDirectory() as tmp:
        d = a.keep or tmp
        os.makedirs(d, exist_ok=True)
        for name, python in runs:   # numbaflow first: it writes the weights and the batch
            subprocess.run([python, os.path.abspath(__file__), "--work", name, a.model, d,
                            str(a.steps)], check=True)
        ref = np.load(os.path.join(d, "torch64.npz"))
        with open(os.path.join(d, "torch64.json"), encoding="utf-8") as f:
            ref_losses = json.load(f)
        print("framework  gradient rel. error vs float64: worst (param), median;  "
              "loss rel. error per step")
        for name, _ in runs:
            g = np.load(os.path.join(d, name + ".npz"))
            with open(os.path.join(d, name + ".json"), encoding="utf-8") as f:
                losses = json.load(f)
            errs = {n: np.linalg.norm(g[n] - ref[n]) / max(np.linalg.norm(ref[n]), 1e-30)
                    for n in ref.files}
            worst = max(errs, key=errs.get)
            steps = " ".join(f"{abs(x - y) / abs(y):.1e}" for x, y in zip(losses, ref_losses))
            median = np.median(list(errs.values()))
            print(f"{name:10s} {errs[worst]:.1e} ({worst:18s}) median {median:.1e};  {steps}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--work"]:
        work(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        main(sys.argv[1:])
