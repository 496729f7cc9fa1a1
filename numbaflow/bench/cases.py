"""The benchmark cases (the model steps here, the kernel-level ones in kernel_cases.py).
Each `build(cfg)` returns candidates, numbaflow first.

Programs are built by functions that take the framework module, so the very same
code builds the paddle peer: `build(numbaflow)` or `build(paddle)`.
"""
import functools

import numpy as np

from . import baselines
from .common import (check_close, executor_runner, fused_compiled, fused_summary, is_fused,
                     load_numbaflow, passed_ops)
from .compile_time import compile_case
from .config import Config, quick_config  # noqa: F401 (the bench's entry names them here)
from .harness import Candidate, Case
from .kernel_cases import (ELEMENTWISE, bias_relu_case, conv2d_case, depthwise_relu_case,
                           elementwise_executor_case, elementwise_kernel_case,
                           fused_depthwise_case, matmul_case)
from .steps import mlp_batch, mlp_program, seed_batch, seed_program


# ---------------------------------------------------------------- model steps

def _param_names(layers):
    return [f"fc_{i}.{k}_0" for i in range(layers) for k in ("w", "b")]


def _initialised(nf, build, layers):
    """Build with numbaflow, run startup in a fresh scope; return (main, loss, scope, params)."""
    main, startup, loss = build(nf)
    scope = nf.static.Scope()
    nf.static.Executor(nf.CPUPlace()).run(startup, scope=scope)
    params = [np.array(scope.find_var(n).get_tensor()) for n in _param_names(layers)]
    return main, loss, scope, params


def _check_steps(name, candidates, steps=2):
    """Both candidates start from the same parameters: numbaflow's first losses must match
    numpy's."""
    ref = [float(candidates[1].fn()) for _ in range(steps)]
    check_close(f"{name} {candidates[0].label}",
           [float(np.asarray(candidates[0].fn()).ravel()[0]) for _ in range(steps)],
           ref, rtol=1e-4, atol=1e-6)


def model_case(name, what, build, layers, batch, make_numpy, targets, fused=False,
               compiled=False):
    """A training step of a numbaflow program vs the hand-written numpy step (peers, each in
    its own process: models/*).
    fused: through CompiledProgram with fuse_elewise_add_act_ops, enable_auto_fusion and
    fuse_all_optimizer_ops (the fused ops it really runs are listed in the note).
    compiled: the seed doc's call, `exe.run(CompiledProgram(main), feed,
    fetch_list=[loss.name])` (default strategies)."""

    def build_case(cfg):
        nf = load_numbaflow()
        x, y, feed, lr, _ = batch(cfg)
        main, loss, scope, params = _initialised(nf, build, layers)
        if compiled:
            program, fetch, label = nf.static.CompiledProgram(main), [loss.name], \
                "CompiledProgram, fetch by name"
        elif fused:
            program, fetch, label = fused_compiled(nf, main, fuse_all_optimizer_ops=True), [loss], \
                "CompiledProgram fused"
        else:
            program, fetch, label = main, [loss], "Executor.run"
        run = executor_runner(nf, program, feed, fetch, scope)
        candidates = [Candidate(label, lambda: run()[0]),
                      Candidate("numpy by hand", make_numpy(params, x, y, lr))]
        _check_steps(name, candidates)
        if fused:
            types = passed_ops(program)
            assert any(is_fused(t) for t in types), f"{name}: nothing fused: {types}"
            candidates[0].note = "runs " + fused_summary(types)
        return candidates

    return Case(name, what, build_case, targets=targets)


def backup_overhead_case():
    """What failure atomicity costs: the MLP step with its per-run backups of every
    persistable it writes, against the same plan with the backups switched off."""

    def build(cfg):
        from ..executor.executor import cached_plans
        nf = load_numbaflow()
        x, y, feed, lr, _ = mlp_batch(cfg)
        runs = []
        for backups in (True, False):
            main, loss, scope, params = _initialised(nf, mlp_program, 3)
            exe = nf.static.Executor(nf.CPUPlace())
            run = functools.partial(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)
            run()
            if not backups:
                plan, = cached_plans(exe)
                plan.skip_backups()           # (kept off: same plan, no rebind)
            runs.append(run)
        return [Candidate("backups on", lambda: runs[0]()[0]),
                Candidate("backups off", lambda: runs[1]()[0])]

    return Case("fault/backup_overhead", "MLP 784-512-512-10, batch {mlp_batch}, SGD step",
                build, targets={"backups off": 1.05})


def _numpy_seed(params, x, y, lr):
    return baselines.NumpySeedStep(params[0], params[1], x, lr)


def _numpy_mlp(params, x, y, lr):
    return baselines.NumpyMLPStep(params, x, y, lr)


def seed_x100_case(k=100):
    """K iterations per Executor.run (ExecutionStrategy.num_iteration_per_run), per iteration."""

    def build(cfg):
        nf = load_numbaflow()
        x, _, feed, lr, _ = seed_batch(cfg)
        main, loss, scope, params = _initialised(nf, seed_program, 1)
        es = nf.static.ExecutionStrategy()
        es.num_iteration_per_run = k
        program = nf.static.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, exec_strategy=es, places=[nf.CPUPlace()])
        run = executor_runner(nf, program, feed, [loss], scope)
        step = _numpy_seed(params, x, None, lr)
        want = [step() for _ in range(k)][-1]  # the fetch is the last iteration's loss
        check_close(f"seed x{k}", np.asarray(run()[0]).ravel()[0], want, rtol=1e-3)
        return [Candidate(f"CompiledProgram x{k}", run, iterations=k,
                          note="time per iteration (num_iteration_per_run, one place)"),
                Candidate("numpy by hand", step, note="one step per call")]

    return Case(f"model/seed_step_x{k}", f"seed step, {k} iterations per run", build,
                max_time=1e-6)


def all_cases():
    """Every case, in report order."""
    cases = [elementwise_kernel_case(n) for n in ELEMENTWISE]
    cases += [elementwise_executor_case(n) for n in ELEMENTWISE]
    cases += [bias_relu_case(), matmul_case()]
    cases += [fused_depthwise_case(), depthwise_relu_case(), conv2d_case()]
    cases.append(model_case("model/seed_step", "fc 1->10, mean, SGD, batch 10", seed_program, 1,
                            seed_batch, _numpy_seed, {"numpy": 0.7}))
    cases.append(model_case("model/seed_step_compiled", "fc 1->10, mean, SGD, batch 10",
                            seed_program, 1, seed_batch, _numpy_seed, {"numpy": 0.8},
                            compiled=True))
    cases.append(seed_x100_case())
    for fused in (False, True):
        cases.append(model_case("model/mlp_step" + ("_fused" if fused else ""),
                                "MLP 784-512-512-10, batch {mlp_batch}, SGD", mlp_program, 3,
                                mlp_batch, _numpy_mlp, {"numpy": 0.95}, fused=fused))
    cases.append(backup_overhead_case())
    cases.append(compile_case())
    from .deep_mlp import deep_mlp_cases
    cases += deep_mlp_cases()
    from .data_parallel import dp_cases
    cases += dp_cases()
    from .model_rows import model_cases
    cases += model_cases()
    from .fusion import fusion_cases
    cases += fusion_cases()
    from .loop_cases import while_loop_case
    cases.append(while_loop_case())
    return cases
