"""fusion/<flag>/<model>: each BuildStrategy fusion flag on each issue-22 model, against
the same program through CompiledProgram with every fusion flag off, the default-on ones
included (issue 22 item 4: a flag must never make a program slower; where it cannot win,
its pass's cost rule keeps it from firing). `fold_conv_batch_norm` rewrites inference
programs only: it is measured on the CNN's `clone(for_test=True)` (`cnn_inference`).

Both contenders live in this process, each with its own scope holding the same initial
weights, and must compute the same losses for AGREE_STEPS steps (rtol LOSS_RTOL) before
they are timed. Timing: warm-up (the plan goes hot and its segments compile), then
`cfg.repeat` interleaved rounds, the order alternating; each sample is a block of steps
lasting about 4 x cfg.min_time. The ratio is the median over rounds of flagged / unfused
from the same round. At 1 thread the clock is the process's CPU time (what a loaded
machine inflates least; the background segment compiles are finished before timing), at
more threads the wall clock (CPU time would count spinning pools).

A flag whose passes changed nothing runs the very same program as the baseline: its row
says so, and its ratio is the run's noise.
"""
import statistics
import time

import numpy as np

from ..compiler.pipeline import PIPELINE
from . import models
from .harness import Case, Row, Skip, Timing

# every flag of the pass table whose pass is a fusion (priced by the cost rule;
# sync_batch_norm is a rewrite for correctness), inference-only ones on their own
_FUSION_ROWS = [r for r in PIPELINE if r.flag and r.pass_class.cost_rule]
FLAGS = tuple(r.flag for r in _FUSION_ROWS if r.programs != "inference")
INFERENCE_FLAGS = tuple(r.flag for r in _FUSION_ROWS if r.programs == "inference")
MODELS = ("cnn", "gpt", "mlp")
INFERENCE = "_inference"        # a model name's suffix: its clone(for_test=True)
AGREE_STEPS = 2
LOSS_RTOL = 1e-4
TARGET = 1.0


class Contender:
    """One CompiledProgram of `model` (with `flag` alone, or no fusion flag), its scope
    and feed. `model` + INFERENCE: its forward-only clone, parameters unchanged."""

    def __init__(self, nf, model, flag, weights=None):
        base = model.removesuffix(INFERENCE)
        self.built = models.PROGRAMS[base](nf)
        self.build_strategy = bs = nf.static.BuildStrategy()
        for f in FLAGS + INFERENCE_FLAGS:
            setattr(bs, f, f == flag)
        program = self.built.main
        if model != base:
            program = program.clone(for_test=True)
        self.compiled = nf.static.CompiledProgram(program, build_strategy=bs)
        self.exe, self.scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
        self.exe.run(self.built.startup, scope=self.scope)
        names = models.parameters(self.built)
        if weights is None:
            weights = {n: np.array(self.scope.find_var(n).get_tensor()) for n in names}
        for n in names:
            self.scope.find_var(n).get_tensor().set(weights[n].copy(), nf.CPUPlace())
        self.weights = weights
        self.feed = models.batch(base)

    def step(self):
        loss, = self.exe.run(self.compiled, feed=self.feed, fetch_list=[self.built.loss],
                             scope=self.scope)
        if self.built.scheduler is not None:
            self.built.scheduler.step()
        return float(np.asarray(loss).ravel()[0])

    def fired(self):
        """(whether any pass changed the program, the passes run)."""
        passes = self.compiled.passes
        return any(p.changed for p in passes), passes


def _sample(step, n, clock):
    t0 = clock()
    for _ in range(n):
        step()
    return (clock() - t0) / n


def paired(flagged, plain, repeat, min_time, clock):
    """Interleaved samples of the two steps: (flagged samples, plain samples)."""
    from ..executor.segments import wait_for_compiles
    for c in (flagged, plain):
        for _ in range(12):     # a plan compiles its segments after 8 runs
            c()
    wait_for_compiles()
    for c in (flagged, plain):
        c()
    t0 = time.perf_counter()
    plain()
    n = max(1, int(4 * min_time / max(time.perf_counter() - t0, 1e-6)))
    a, b = [], []
    for r in range(repeat):
        if r % 2:
            b.append(_sample(plain, n, clock))
            a.append(_sample(flagged, n, clock))
        else:
            a.append(_sample(flagged, n, clock))
            b.append(_sample(plain, n, clock))
    return a, b


def _summary(passes):
    parts = []
    for p in passes:
        parts.append(f"{p.name} {'fired' if p.changed else 'did not fire'}"
                     + (f" ({len(p.refusals)} refused)" if p.refusals else ""))
    return "; ".join(parts)


def measure_flag(flag, model, cfg):
    """The row of `flag` on `model` (see the module docstring)."""
    import numbaflow as nf
    nf.enable_static()
    plain = Contender(nf, model, None)
    flagged = Contender(nf, model, flag, plain.weights)
    want = [plain.step() for _ in range(AGREE_STEPS)]
    got = [flagged.step() for _ in range(AGREE_STEPS)]
    name = f"fusion/{flag}/{model}"
    if not np.allclose(got, want, rtol=LOSS_RTOL, atol=0):
        return Row(name, "", "with the flag", "no flag", note=f"ERROR losses differ: {got} vs {want}")
    changed, passes = flagged.fired()
    one_thread = cfg.threads == 1
    clock = time.process_time if one_thread else time.perf_counter
    a, b = paired(flagged.step, plain.step, cfg.repeat, cfg.min_time, clock)
    ratio = statistics.median(x / y for x, y in zip(a, b))
    note = (("CPU time" if one_thread else "wall time") + f", {cfg.threads} thread(s); "
            + (_summary(passes) if changed else "no pass changed the program: the same "
               "program as the baseline, the ratio is noise"))
    checks = {f"ratio <= {TARGET:g}x": ratio <= TARGET} if changed else \
        {"fires only where it pays": True}
    return Row(name, "", "with the flag", "no flag", ratio,
               Timing.of(a), Timing.of(b), note, checks)


def fusion_case(flag, model):
    """fusion/<flag>/<model>, measured by itself (two programs in this process)."""
    def report(cfg):
        if cfg.quick and model != "mlp":
            raise Skip("--quick runs the MLP only (drop --quick for the CNN and GPT)")
        return [measure_flag(flag, model, cfg)]

    what = models.WHAT[model.removesuffix(INFERENCE)]
    if model.endswith(INFERENCE):
        what = "inference (clone(for_test=True)) of " + what
    return Case(f"fusion/{flag}/{model}", f"{flag}: " + what, None, report=report)


def fusion_cases():
    """fusion/<flag>/<model> for every fusion flag and model (the inference-only flags on
    the CNN's inference program)."""
    return [fusion_case(f, m) for f in FLAGS for m in MODELS] + \
        [fusion_case(f, "cnn" + INFERENCE) for f in INFERENCE_FLAGS]
