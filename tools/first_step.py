"""Measure the README examples' first training step on a cold cache, after
``python -m numbaflow warmup``, and warm: the numbers in BENCHMARKS.md's "First step" section.

    python tools/first_step.py                 # --model cnn, mlp and gpt
    python tools/first_step.py --model cnn
    python tools/first_step.py --model resnet20    # a bench model of issue 27 (or gpt_medium)
    python tools/first_step.py --profile cnn   # where a cold first run's compile time goes
                                              # (CPU seconds per kernel, no helper process)
    python tools/first_step.py --profile resnet20   # the same for one step of a bench model
                                                   # (resnet20, gpt_medium: issue 27's sizes)

Each case runs in a fresh process with private, initially empty caches (NUMBAFLOW_CACHE_DIR
for the generated kernels, NUMBA_CACHE_DIR for numba's compiled code of every kernel), so
"cold" is a new machine:
  cold          the first run on empty caches
  after warmup  empty caches, then `python -m numbaflow warmup`, then the run
  warm          a second run on the caches the cold run filled
cnn / mlp run ``python -m numbaflow.examples.train_digits --epochs 1`` and read its own
"first step (compile) N s" line; gpt builds the programs of ``numbaflow.examples.train_gpt``
(its default sizes), runs the startup program and times the first training ``exe.run``
(the same thing: plan, feed checks and every kernel's first compile). Prints a markdown table.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def _env(cache):
    env = dict(os.environ, NUMBAFLOW_CACHE_DIR=os.path.join(cache, "kernels"),
               NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
    env.pop("NUMBAFLOW_LOG_LEVEL", None)
    return env


def _run(args, cache, timeout=1200):
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, *args], env=_env(cache), capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode not in (0, 1):      # 1: accuracy target not reached in one epoch (fine)
        raise RuntimeError(f"{args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout, time.perf_counter() - t0


# train_gpt prints no first-step line: this builds its programs and times the first step
GPT_FIRST_STEP = """
import sys, time
import numpy as np
import numbaflow as paddle
from numbaflow import static
from numbaflow.examples import train_gpt
args = train_gpt.parse_args(sys.argv[1:])
text, chars = train_gpt.load_corpus()
paddle.enable_static()
main, startup, _, loss, _, _ = train_gpt.build_programs(args, len(chars))
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
seq = np.random.default_rng(0).integers(0, len(chars), (args.batch_size, args.context + 1))
t0 = time.perf_counter()
exe.run(main, feed={"tokens": seq[:, :-1], "labels": seq[:, 1:]}, fetch_list=[loss])
print(f"first step (compile) {time.perf_counter() - t0:.2f} s")
"""

# the bench models of issue 27 at the bench's batch sizes: build, startup, one timed step
BENCH_FIRST_STEP = """
import sys, time
import numbaflow as nf
from numbaflow.bench import models
nf.enable_static()
built = models.PROGRAMS[sys.argv[1]](nf)
exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
exe.run(built.startup, scope=scope)
feed = models.batch(sys.argv[1])
t0 = time.perf_counter()
exe.run(built.main, feed=feed, fetch_list=[built.loss], scope=scope)
print(f"first step (compile) {time.perf_counter() - t0:.2f} s")
"""


def first_step(model, cache):
    """Seconds of the example's first training step with the caches in `cache`."""
    if model == "gpt":
        out, _ = _run(["-c", GPT_FIRST_STEP], cache)
    elif model in BENCH_MODELS:
        out, _ = _run(["-c", BENCH_FIRST_STEP, model], cache)
    else:
        out, _ = _run(["-m", "numbaflow.examples.train_digits", "--model", model, "--epochs",
                       "1"], cache)
    return float(re.search(r"first step \(compile\) ([0-9.]+) s", out).group(1))


def measure(model):
    """{case: seconds} for one model; 'warmup' is the warm-up command's own time."""
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as warmed:
        got = {"cold": first_step(model, cold)}
        got["warm"] = first_step(model, cold)
        _, got["warmup"] = _run(["-m", "numbaflow", "warmup"], warmed)
        got["after warmup"] = first_step(model, warmed)
    return got


PROFILE = """
import collections, sys, time
from numba.core import event
from numbaflow.executor import precompile
precompile.MIN_COLD = float("inf")    # no helper process: every compile happens (and is seen) here
stack, seconds = [], collections.Counter()
class Clock(event.Listener):          # numba's real compiles (a cache load is not one)
    def on_start(self, ev):           # CPU seconds of the compiling thread: the load of other
        stack.append(time.thread_time())   # jobs on the machine does not count
    def on_end(self, ev):
        t0 = stack.pop()
        if not stack:                 # a top-level compile (its callees compile inside it)
            f = ev.data["dispatcher"].py_func
            seconds[f.__module__ + "." + f.__qualname__] += time.thread_time() - t0
event.register("numba:compile", Clock())
if sys.argv[1] == "gpt":     # 20 steps: the segments (built after 8 runs) compile too
    from numbaflow.examples import train_gpt
    train_gpt.main(["--steps", "20", "--log-every", "10", "--sample", "0"])
elif sys.argv[1] in ("resnet20", "gpt_medium"):     # one step of the bench model
    import numbaflow as nf
    from numbaflow.bench import models
    nf.enable_static()
    built = models.PROGRAMS[sys.argv[1]](nf)
    exe, scope = nf.static.Executor(nf.CPUPlace()), nf.static.Scope()
    exe.run(built.startup, scope=scope)
    exe.run(built.main, feed=models.batch(sys.argv[1]), fetch_list=[built.loss], scope=scope)
else:
    from numbaflow.examples import train_digits
    train_digits.main(["--model", sys.argv[1], "--epochs", "1"])
total = sum(seconds.values())
print(f"numba compiled for {total:.1f} s of CPU in all")
for name, s in seconds.most_common(12):
    print(f"{s:7.1f} s {100 * s / total:4.0f}%  {name}")
"""


def profile(model):
    """Print the kernels a cold first run of `model` spends its compile time on."""
    with tempfile.TemporaryDirectory() as cold:
        out, _ = _run(["-c", PROFILE, model], cold)
    print(out[out.index("numba compiled for"):])


MODELS = ["cnn", "mlp", "gpt"]
BENCH_MODELS = ["resnet20", "gpt_medium"]
PROFILED = MODELS + BENCH_MODELS


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=PROFILED, action="append")
    p.add_argument("--profile", choices=PROFILED, help="profile one cold run instead")
    args = p.parse_args(argv)
    if args.profile:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        profile(args.profile)
        return 0
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| model | first step, cold | after `warmup` | warm | `warmup` itself |")
    print("|---|---|---|---|---|")
    for model in args.model or MODELS:
        got = measure(model)
        print(f"| {model} | {got['cold']:.1f} s | {got['after warmup']:.2f} s | "
              f"{got['warm']:.2f} s | {got['warmup']:.0f} s |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
