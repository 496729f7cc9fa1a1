"""models/*: the training steps of models.py (and ResNet-20's inference, against
onnxruntime running numbaflow's own ONNX export), numbaflow against its peers.

Every contender is a worker process (worker.py) started from its own interpreter: numbaflow
from this one, each peer from the interpreter the user named (`--peer-python jax=PATH`,
`torch=PATH`, `paddle=PATH`, or a JSON file of the same mapping: `--peer-file FILE`). torch
gives two contenders (eager, and torch.compile outside --quick), Paddle one per thread count
(its best is the fair comparison). numbaflow runs at the thread budget, at 1 thread, and
at the budget with one core taken by a spinning process (the "busy machine" row, compared
with the quiet 1-thread step: issue 27 asks for at most BUSY_TARGET x).

1. numbaflow's worker builds the program, runs startup and writes its initial weights and
   the batch; every other worker starts from those.
2. Agreement: every worker's first AGREE_STEPS losses must equal numbaflow's within
   LOSS_RTOL (relative; float32 sums in another order differ by ~1e-6; MODEL_RTOL per step
   where a deep model amplifies them), an inference model's outputs within LOSS_RTOL of
   the largest. A worker that differs gives an error row and is not timed.
3. Warm-up, then interleaved rounds: in each round every worker times one sample (a block
   of steps lasting about SAMPLE_MIN_TIMES x cfg.min_time), after an idle gap (IDLE_GAP)
   that lets the previous worker's thread pools go to sleep and SETTLE_STEPS untimed
   steps that wake its own (the first step after a pause pays for waking parked threads
   and refilling caches: with it in a 3-step GPT sample, samples spread by 7-22%); the
   order rotates from round to round.

A row's ratio is the median over rounds of numbaflow's sample / the peer's sample of the
same round (drift in the machine's load cancels); the times are the median, min and IQR
of each side's samples.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from . import models
from .harness import Case, Row, Skip, Timing
from ..executor.threads import worker_env

AGREE_STEPS = 3
LOSS_RTOL = 1e-4
# Per model, a tolerance per step where LOSS_RTOL is below float32's reach. ResNet-20 (lr
# 0.1, 21 batch norms): every float32 framework's third loss is 1e-5 to 5e-4 off PyTorch's
# float64 one from the same weights, numbaflow's, Paddle's and torch's alike, and their
# first-step gradients are as close to float64's as each other's (tools/peer_grads.py, four
# draws, docs/benchmarks.md): rounding that the steps amplify, not a semantic difference, so
# two frameworks may differ by ~1e-3 there. The forward and the first update stay at 1e-4.
MODEL_RTOL = {"resnet20": (LOSS_RTOL, LOSS_RTOL, 2e-3)}
IDLE_GAP = 0.1          # seconds before each sample
SETTLE_STEPS = 1        # untimed steps after the gap, before each sample
SAMPLE_MIN_TIMES = 10   # a sample lasts about this many cfg.min_time (0.5 s by default)
TARGET = 1.0            # numbaflow / each peer (issue 22), and the budget / 1 thread (27)
BUSY_TARGET = 2.0       # the budget with one core busy / the quiet 1-thread step, issue 27
# numbaflow's inference / onnxruntime on numbaflow's own export (issue 27's serving targets)
ONNX_TARGET = {"models/resnet20_infer_b1": 2.0, "models/resnet20_infer_b32": 1.2}
# the models the torch and JAX workers implement (peer_models.py); Paddle builds every model;
# the inference rows (models.INFER) run onnxruntime from the torch interpreter instead
PEER_MODELS = ("cnn", "gpt", "mlp", "conv", "resnet20", "gpt_medium", "lstm")
PEER_FRAMEWORKS = ("jax", "torch", "paddle")
# models/gpt_medium_memory: peak RSS per batch size against torch eager (issue 27's target:
# the width-512 GPT's at batch 16 <= PyTorch eager's), after MEMORY_STEPS training steps
MEMORY_BATCHES = (8, 16)
MEMORY_TARGET_BATCH = 16
MEMORY_STEPS = 2
HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Contender:
    """One worker to start: `framework` run by `python` with `threads` threads."""
    label: str
    framework: str
    python: str
    threads: int
    busy: bool = False      # timed while another process spins on one core


def contenders(peer_python, budget, quick, infer=False):
    """numbaflow at the budget (the subject) and at 1 thread, then each named peer (`infer`:
    an inference row, where torch's interpreter runs onnxruntime and JAX has no row)."""
    out = [Contender(f"numbaflow {budget}t", "numbaflow", sys.executable, budget)]
    if budget > 1 and not quick:
        out.append(Contender("numbaflow 1t", "numbaflow", sys.executable, 1))
        out.append(Contender(f"numbaflow {budget}t, one core busy", "numbaflow",
                             sys.executable, budget, busy=True))
    for name, python in peer_python.items():
        if name in ("jax", "torch") and infer:
            if name == "torch":
                out.append(Contender(f"onnxruntime {budget}t", "onnxruntime", python, budget))
        elif name == "jax":
            out.append(Contender(f"jax.jit {budget}t", "jax", python, budget))
        elif name == "torch":
            out.append(Contender(f"torch eager {budget}t", "torch", python, budget))
            if not quick:
                out.append(Contender(f"torch.compile {budget}t", "torch.compile", python, budget))
        elif name == "paddle":
            for t in sorted({1, budget} if not quick else {budget}):
                out.append(Contender(f"paddle static {t}t", "paddle", python, t))
        else:
            raise ValueError(f"--peer-python {name}=...: unknown peer {name!r}; expected one "
                             f"of {', '.join(PEER_FRAMEWORKS)}")
    return out


class Worker:
    """A running worker.py; `ask(cmd, **args)` sends one command and returns the answer."""

    def __init__(self, c, numbaflow_root):
        env = worker_env(os.environ, c.threads)
        env.pop("PYTHONPATH", None)
        if c.framework == "numbaflow":
            env["PYTHONPATH"] = numbaflow_root
        self.c = c
        self.log = tempfile.TemporaryFile(mode="w+")
        try:
            self.proc = subprocess.Popen([c.python, os.path.join(HERE, "worker.py"), c.framework],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.log, text=True, env=env)
        except OSError as e:
            raise RuntimeError(f"{c.label}: cannot start {c.python}: {e}") from None

    def ask(self, cmd, **args):
        self.proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("@@ "):
                answer = json.loads(line[3:])
                if "error" in answer:
                    raise RuntimeError(f"{self.c.label}: {answer['error']}")
                return answer
        self.log.seek(0)
        tail = " | ".join(self.log.read().strip().splitlines()[-3:])
        raise RuntimeError(f"{self.c.label} worker exited ({self.proc.wait()}): {tail}")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write('{"cmd": "quit"}\n')
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def agree(reference, losses, rtol=LOSS_RTOL, floor=1e-12):
    """None when `losses` equal `reference` within rtol (one for all, or one per step),
    relative to max(|reference|, floor), else what differs (a message)."""
    rtols = rtol if isinstance(rtol, (tuple, list)) else [rtol] * len(reference)
    bad = [(i, a, b, r) for i, (a, b, r) in enumerate(zip(losses, reference, rtols))
           if not abs(a - b) <= r * max(abs(b), floor)]
    if len(losses) != len(reference) or bad:
        return (f"losses differ from numbaflow's beyond rtol {bad[0][3]:g}: step {bad[0][0]} "
                f"{bad[0][1]!r} vs {bad[0][2]!r}" if bad else "a different number of losses")
    return None


def agree_outputs(reference, outputs, rtol=LOSS_RTOL):
    """An inference row's check: every output within rtol of the largest |reference|."""
    why = agree(reference, outputs, rtol, floor=max(map(abs, reference)))
    return why and why.replace("losses differ", "outputs differ").replace("step", "output")


def paired_ratio(subject, base):
    """Median over rounds of subject / base (per-round pairs)."""
    return statistics.median(a / b for a, b in zip(subject, base))


def measure_model(model, cfg, numbaflow_root):
    """Run the workers of one model; return (rows, errors) where rows compare the subject
    with every other contender."""
    infer = model in models.INFER
    cs = contenders(cfg.peer_python, cfg.threads, cfg.quick, infer)
    name = f"models/{model}"
    workers, rows, losses = [], [], {}
    if model not in PEER_MODELS and not infer:
        rows += [Row(name, "", cs[0].label, c.label, note=f"skipped: no {c.framework} version "
                     f"of {model} in peer_models.py yet")
                 for c in cs if c.framework in ("jax", "torch", "torch.compile")]
        cs = [c for c in cs if c.framework not in ("jax", "torch", "torch.compile")]
    with tempfile.TemporaryDirectory(prefix="numbaflow-bench-models-") as d:
        try:
            for c in cs:
                w = Worker(c, numbaflow_root)
                workers.append(w)
                try:
                    w.ask("setup", model=model, dir=d, reference=c is cs[0])
                    got = w.ask("losses", steps=1 if infer else AGREE_STEPS)["losses"]
                    losses[c.label] = got[0] if infer else got
                except RuntimeError as e:
                    if c is cs[0]:
                        raise
                    # torch.compile needs a C compiler and a supported Python: where it
                    # does not run, its row says so; any other failure is an error
                    what = "skipped: torch.compile does not run here:" \
                        if c.framework == "torch.compile" else "ERROR"
                    rows.append(Row(name, "", cs[0].label, c.label, note=f"{what} {e}"[:200]))
                    w.close()
                    workers.pop()
                    continue
                ref, got = losses[cs[0].label], losses[c.label]
                why = agree_outputs(ref, got) if infer else \
                    agree(ref, got, MODEL_RTOL.get(model, LOSS_RTOL))
                if why:
                    rows.append(Row(name, "", cs[0].label, c.label, note=f"ERROR {why}"))
                    w.close()
                    workers.pop()
            rows += _time(name, workers, cfg, alone=len(cs) == 1)
        finally:
            for w in workers:
                w.close()
    return rows


def _time(name, workers, cfg, alone):
    """Warm up, calibrate, sample in rotating interleaved rounds; rows subject vs others
    (`alone`: numbaflow was the only contender, its row says so)."""
    per_sample = {}
    warm = 3 if cfg.quick else 12      # numbaflow compiles a plan's segments after 8 runs
    for w in workers:     # then steps per sample, so that a sample lasts ~SAMPLE_MIN_TIMES
        w.ask("warmup", steps=warm)
        one = w.ask("time", steps=1)["seconds"]
        per_sample[w.c.label] = max(1, int(cfg.min_time * SAMPLE_MIN_TIMES / max(one, 1e-6)))
    samples = {w.c.label: [] for w in workers}
    rss = {}
    for r in range(cfg.repeat):
        k = r % len(workers)
        for w in workers[k:] + workers[:k]:
            time.sleep(IDLE_GAP)
            n = per_sample[w.c.label]
            spinner = _spin() if w.c.busy else None
            try:
                answer = w.ask("time", steps=n, settle=SETTLE_STEPS)
            finally:
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
            samples[w.c.label].append(answer["median_step"])
            rss[w.c.label] = answer["rss_mb"]
    subject = workers[0].c.label
    ts = Timing.of(samples[subject])
    out = []
    one = next((w.c.label for w in workers if w.c.label == "numbaflow 1t"), None)
    for w in workers[1:]:
        label = w.c.label
        if w.c.busy:    # the busy step against the quiet 1-thread one
            if one is not None:
                ratio = paired_ratio(samples[label], samples[one])
                out.append(Row(name, "", label, one, ratio, Timing.of(samples[label]),
                               Timing.of(samples[one]), "another process spins on one core",
                               checks={f"ratio <= {BUSY_TARGET:g}x": ratio <= BUSY_TARGET}))
            continue
        ratio = paired_ratio(samples[subject], samples[label])
        note = f"peak RSS {rss[subject]:.0f} MB vs {rss[label]:.0f} MB"
        target = ONNX_TARGET[name] if w.c.framework == "onnxruntime" else TARGET
        out.append(Row(name, "", subject, label, ratio, ts, Timing.of(samples[label]), note,
                       checks={f"ratio <= {target:g}x": ratio <= target}))
    if alone:
        out.append(Row(name, "", subject, "", float("nan"), ts, None,
                       f"no peer named (--peer-python); peak RSS {rss[subject]:.0f} MB"))
    return out


def _spin():
    """A process that keeps one core busy until killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def model_case(model):
    """models/<model>: a Case measured by its own worker processes."""

    def report(cfg):
        import numbaflow
        root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
        if cfg.quick and model != "mlp":
            raise Skip("--quick runs models/mlp only (drop --quick for the CNN and GPT)")
        return measure_model(model, cfg, root)

    return Case(f"models/{model}", models.WHAT[model], None, report=report)


def measure_memory(model, batches, cfg, numbaflow_root, steps=MEMORY_STEPS):
    """Peak RSS of numbaflow and of torch eager (when named) after `steps` training steps of
    `model` from the same weights and batch, per batch size; every worker is a fresh
    process (ru_maxrss is a process's maximum) and runs alone. Rows: numbaflow against
    torch, ratio = numbaflow's peak / torch's; no timing."""
    name, rows = f"models/{model}_memory", []
    for n in batches:
        cs = [Contender(f"numbaflow {cfg.threads}t b{n}", "numbaflow", sys.executable,
                        cfg.threads)]
        if "torch" in cfg.peer_python:
            cs.append(Contender(f"torch eager {cfg.threads}t b{n}", "torch",
                                cfg.peer_python["torch"], cfg.threads))
        rss, losses = {}, {}
        with tempfile.TemporaryDirectory(prefix="numbaflow-bench-memory-") as d:
            for c in cs:
                w = Worker(c, numbaflow_root)
                try:
                    w.ask("setup", model=model, dir=d, reference=c is cs[0], batch=n)
                    answer = w.ask("losses", steps=steps)
                    losses[c.label], rss[c.label] = answer["losses"], answer["rss_mb"]
                except RuntimeError as e:
                    if c is cs[0]:
                        raise
                    rows.append(Row(name, "", cs[0].label, c.label, note=f"ERROR {e}"[:200]))
                finally:
                    w.close()
        me = cs[0].label
        if len(cs) == 1:
            rows.append(Row(name, "", me, "", note=f"no torch named (--peer-python); peak "
                            f"RSS {rss[me]:.0f} MB after {steps} steps"))
        elif cs[1].label in rss:
            why = agree(losses[me], losses[cs[1].label])
            checks = {"peak RSS <= torch eager's": rss[me] <= rss[cs[1].label]} \
                if n == MEMORY_TARGET_BATCH else {}
            rows.append(Row(name, "", me, cs[1].label, rss[me] / rss[cs[1].label],
                            note=f"ERROR {why}" if why else f"peak RSS {rss[me]:.0f} MB vs "
                            f"{rss[cs[1].label]:.0f} MB after {steps} steps (ratio of peaks)",
                            checks=checks))
    return rows


def memory_case(model="gpt_medium", batches=MEMORY_BATCHES):
    """models/<model>_memory: peak RSS per batch size, numbaflow beside torch eager (not in
    --quick)."""

    def report(cfg):
        import numbaflow
        if cfg.quick:
            raise Skip("peak RSS per batch size runs in the full run or with --only")
        root = os.path.dirname(os.path.dirname(os.path.abspath(numbaflow.__file__)))
        return measure_memory(model, batches, cfg, root)

    return Case(f"models/{model}_memory", f"peak RSS at batch {', '.join(map(str, batches))}: "
                f"{models.WHAT[model]}", None, report=report)


def model_cases():
    """models/cnn, models/gpt, models/mlp, models/conv (the CNN's convolutions alone), and
    the real sizes: models/resnet20, models/gpt_medium, ResNet-20's inference rows and the
    GPT d512's peak RSS per batch size (models/gpt_medium_memory)."""
    return [model_case(m) for m in ("cnn", "gpt", "mlp", "conv", "resnet20", "gpt_medium",
                                    "lstm", *models.INFER)] + [memory_case()]
