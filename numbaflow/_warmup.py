"""``python -m numbaflow warmup``: compile the kernels of the common ops ahead of time.

numba compiles each kernel the first time it runs with a given type signature and keeps
the machine code on disk, so only the first run on a machine pays (tens of seconds for a
small CNN on a cold cache). This runs a few small programs that use the common ops in
float32 (the README's MLP and CNN with Adam, an fc regression with SGD and Momentum, the
char-level GPT with AdamW), each in its own process so that they compile in parallel, and
lets their compiled segments finish, so that the user's own first run loads kernels
instead of compiling them.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import time

# name -> what it compiles (shown by --list and in the report)
TASKS = {
    "mlp": "fc, relu, softmax, cross_entropy, accuracy, Adam (train_digits' MLP)",
    "cnn": "conv2d, batch_norm, max_pool2d, reshape, fc, Adam (train_digits --model cnn)",
    "quickstart": "fc, mean, square_error_cost, SGD, Momentum (the Quick start, fit-a-line)",
    "gpt": "embedding, layer_norm, matmul, softmax, gelu, cross_entropy, AdamW, multinomial "
           "(train_gpt)",
}
STEPS = 10      # more than a plan's hot-run count, so that its segments compile too


def _steps(exe, program, feed, fetch, scope):
    for _ in range(STEPS):
        exe.run(program, feed=feed, fetch_list=fetch, scope=scope)


def _wait_for_segments(exe):
    from .executor.executor import cached_plans
    for plan in cached_plans(exe):     # the background compiles of the hot plans
        plan.wait_compiled()


def _run_task(name):
    """Build and run the programs of one task in this process; return its seconds."""
    import logging

    import numpy as np

    import numbaflow as paddle
    from numbaflow import static
    from numbaflow.examples import train_digits
    from numbaflow.utils import unique_name

    t0 = time.perf_counter()
    # the compile notices are what this process is for: not worth a line each
    logging.getLogger("numbaflow").setLevel(logging.ERROR)
    paddle.enable_static()
    rng = np.random.default_rng(0)
    with unique_name.guard():
        scope = static.Scope()
        exe = static.Executor(paddle.CPUPlace())
        if name in ("mlp", "cnn"):
            args = argparse.Namespace(model=name, lr=5e-3)
            main, startup, test_prog, loss, acc = train_digits.build_programs(args)
            feed = {"x": rng.standard_normal((64, 64)).astype(np.float32),
                    "y": rng.integers(0, 10, (64, 1)).astype(np.int64)}
            exe.run(startup, scope=scope)
            _steps(exe, main, feed, [loss, acc], scope)
            exe.run(test_prog, feed=feed, fetch_list=[acc], scope=scope)
        elif name == "gpt":
            _gpt(exe, scope, rng)
        else:
            # the README's Quick start (SGD), then fit-a-line (Momentum)
            for features, size, opt in ((1, 10, paddle.optimizer.SGD(learning_rate=0.01)),
                                        (13, 1, paddle.optimizer.Momentum(learning_rate=0.01,
                                                                          momentum=0.9))):
                main, startup = static.Program(), static.Program()
                with static.program_guard(main, startup):
                    x = static.data(name="x", shape=[None, features], dtype="float32")
                    y = static.data(name="y", shape=[None, size], dtype="float32")
                    pred = static.nn.fc(x, size=size)
                    loss = paddle.mean(pred) if size > 1 else \
                        paddle.mean(paddle.nn.functional.square_error_cost(pred, y))
                    opt.minimize(loss)
                feed = {"x": rng.standard_normal((32, features)).astype(np.float32)}
                if size == 1:
                    feed["y"] = rng.standard_normal((32, 1)).astype(np.float32)
                exe.run(startup, scope=scope)
                _steps(exe, main, feed, [loss], scope)
        _wait_for_segments(exe)
    return time.perf_counter() - t0


def _gpt(exe, scope, rng):
    """train_gpt's training steps at its default sizes, then one sampling run."""
    from numbaflow.examples import train_gpt

    args = train_gpt.parse_args(["--steps", str(STEPS)])
    vocab = 64
    main, startup, sample_prog, loss, sample, _ = train_gpt.build_programs(args, vocab)
    seq = rng.integers(0, vocab, (args.batch_size, args.context + 1))
    exe.run(startup, scope=scope)
    _steps(exe, main, {"tokens": seq[:, :-1], "labels": seq[:, 1:]}, [loss], scope)
    window = seq[:1, :-1]
    exe.run(sample_prog, feed={"tokens": window, "labels": window}, fetch_list=[sample],
            scope=scope)


def _run_task_checked(name, cache_dir):
    """(seconds, [directories that could not keep compiled code]) of one task: a full or
    unwritable disk makes the caches degrade silently but for one warning, and then the
    warm-up compiled for nothing."""
    seconds = _run_task(name)
    from . import config
    from .kernels.codegen import cache
    lost = cache.write_failures()
    if config.kernel_cache_dir() != cache_dir:
        lost.append(cache_dir)
    return seconds, lost


def warmup(tasks=None, processes=None, report=print, lost=None):
    """Run the warm-up `tasks` (default: all of TASKS) in up to `processes` processes at
    once (default: one per task, at most one per core); return {task: seconds}.

    Each task compiles what it needs into the kernel cache (`python -m numbaflow cache
    info`); a second warm-up finds everything there and takes seconds. The directories
    where compiled code could not be kept (full, unwritable) are added to the list `lost`.
    """
    from .config import kernel_cache_dir
    tasks = list(TASKS) if tasks is None else list(tasks)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"warmup: unknown task(s) {unknown}; the tasks are {list(TASKS)}")
    processes = processes or max(1, min(len(tasks), os.cpu_count() or 1))
    # spawn, not fork: a fresh interpreter per task (no inherited locks or threads)
    ctx = multiprocessing.get_context("spawn")
    seconds = {}
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=ctx) as pool:
        futures = {pool.submit(_run_task_checked, t, kernel_cache_dir()): t for t in tasks}
        for f in concurrent.futures.as_completed(futures):
            seconds[futures[f]], dirs = f.result()
            if lost is not None:
                lost.extend(d for d in dirs if d not in lost)
            report(f"  {futures[f]:<12} {seconds[futures[f]]:6.1f} s   {TASKS[futures[f]]}")
    return seconds
