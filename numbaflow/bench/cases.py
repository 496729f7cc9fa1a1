"""The benchmark cases. Each `build(cfg)` returns candidates, numbaflow first.

Programs are built by functions that take the framework module, so the very same
code builds the paddle peer: `build(numbaflow)` or `build(paddle)`.
"""
import functools
import importlib
from dataclasses import dataclass, field

import numpy as np

from . import baselines, models
from .harness import Candidate, Case, Skip


@dataclass
class Config:
    """Sizes and sampling; `quick` shrinks both for a smoke test."""
    size: int = 2048          # elementwise arrays: size x size float32
    bias_relu_size: int = 4096
    matmul_size: int = 512
    mlp_batch: int = 128
    depthwise_shape: tuple = (32, 64, 56, 56)     # PERF_ANCHORS W5
    conv_shape: tuple = (16, 32, 28, 28)          # conv2d input; 64 filters 3x3, padding 1
    compile_model: str = "mlp"  # compile/*: the training program compiled in fresh processes
    compile_warm_runs: int = 3    # warm-cache processes (the cold one runs once)
    repeat: int = 15
    min_time: float = 0.05    # seconds per sample
    quick: bool = False
    peer_python: dict = field(default_factory=dict)   # models/*: framework -> interpreter
    threads: int = 1          # models/*: numbaflow's thread budget (set from the machine)


def quick_config():
    # quick compiles the seed model: a cold compile costs per kernel, not per element,
    # so a smaller MLP would not be quicker
    return Config(size=256, bias_relu_size=512, matmul_size=128, mlp_batch=16,
                  depthwise_shape=(2, 8, 16, 16), conv_shape=(2, 8, 12, 12),
                  compile_model="seed", compile_warm_runs=1,
                  repeat=3, min_time=0.005, quick=True)


def _nf():
    import numbaflow
    numbaflow.enable_static()
    return numbaflow


def _guard(pd):
    """A fresh unique-name generator: parameters are always named fc_0.w_0, fc_0.b_0, ..."""
    return importlib.import_module(pd.__name__ + ".utils.unique_name").guard()


def _check(name, got, want, rtol=1e-4, atol=1e-5):
    """The candidates must agree before their times mean anything."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
        raise AssertionError(f"{name}: result differs from the baseline "
                             f"(shapes {got.shape} vs {want.shape}, max abs err {err})")


def _runner(nf, program, feed, fetch, scope):
    exe = nf.static.Executor(nf.CPUPlace())
    return lambda: exe.run(program, feed=feed, fetch_list=fetch, scope=scope)


def _fused(nf, program, **flags):
    """CompiledProgram with Paddle's add+act fusion and the general elementwise fuser
    (plus any other BuildStrategy flags given)."""
    bs = nf.static.BuildStrategy()
    bs.fuse_elewise_add_act_ops = True
    bs.enable_auto_fusion = True
    for name, value in flags.items():
        setattr(bs, name, value)
    return nf.static.CompiledProgram(program, build_strategy=bs)


def _passed_ops(compiled):
    """The op types of the program a CompiledProgram really ran (after its passes);
    it must have run exactly one feed/fetch signature."""
    from ..compiler.compiled_program import passed_programs
    programs = passed_programs(compiled)
    assert len(programs) == 1, f"expected one compiled program, got {len(programs)}"
    return [op.type for op in programs[0].global_block().ops]


def _is_fused(op_type):
    from ..kernels.registry import FUSED, get_op_def
    return get_op_def(op_type).has(FUSED)


def _fused_summary(types):
    """'3 fused_elementwise, 1 fused_sgd' for the fused ops of a compiled program."""
    counts = {t: types.count(t) for t in dict.fromkeys(types) if t.startswith("fused")}
    return ", ".join(f"{n} {t}" for t, n in counts.items()) or "no fused op"


# ---------------------------------------------------------------- elementwise

def _np_sigmoid(x, y, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


# name: (op type, numbaflow layer, numpy with out=, second input: None / "same" / "bias")
ELEMENTWISE = {
    "add": ("elementwise_add", lambda pd, x, y: pd.add(x, y),
            lambda x, y, out: np.add(x, y, out=out), "same"),
    "relu": ("relu", lambda pd, x, y: pd.nn.functional.relu(x),
             lambda x, y, out: np.maximum(x, 0, out=out), None),
    "sigmoid": ("sigmoid", lambda pd, x, y: pd.nn.functional.sigmoid(x), _np_sigmoid, None),
    "tanh": ("tanh", lambda pd, x, y: pd.tanh(x), lambda x, y, out: np.tanh(x, out=out), None),
    "mul_bias": ("elementwise_mul", lambda pd, x, y: pd.multiply(x, y),
                 lambda x, y, out: np.multiply(x, y, out=out), "bias"),
}


def _elementwise_inputs(n, second, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n), dtype=np.float32)
    y = {None: None, "same": rng.standard_normal((n, n), dtype=np.float32),
         "bias": rng.standard_normal((n,), dtype=np.float32)}[second]
    return x, y


def elementwise_kernel_case(name):
    """The numbaflow CPU kernel alone (preallocated output) vs numpy with out=."""
    op_type, _, np_fn, second = ELEMENTWISE[name]

    def build(cfg):
        _nf()  # registers the ops
        try:
            from numbaflow.kernels.registry import build_cpu_kernel
        except ImportError as e:
            raise Skip(f"no kernel hook ({e}); see the executor row") from None
        x, y = _elementwise_inputs(cfg.size, second)
        inputs = {"X": x} if y is None else {"X": x, "Y": y}
        # thunk() recomputes outs["Out"][0] in place: the kernel without executor overhead.
        thunk, outs = build_cpu_kernel(op_type, inputs, {})
        thunk()
        ref = np.empty_like(x)
        _check(name, outs["Out"][0], np_fn(x, y, ref))
        return [Candidate(f"kernel {op_type}", thunk),
                Candidate("numpy out=", lambda: np_fn(x, y, ref))]

    return Case(f"elementwise/{name}/kernel", _what(name), build)


def elementwise_executor_case(name):
    """A one-op program through Executor.run (feed x, fetch out) vs the numpy expression."""
    _, layer, np_fn, second = ELEMENTWISE[name]

    def build(cfg):
        nf = _nf()
        x, y = _elementwise_inputs(cfg.size, second)
        main, startup = nf.static.Program(), nf.static.Program()
        with _guard(nf), nf.static.program_guard(main, startup):
            xv = nf.static.data(name="x", shape=[None, cfg.size], dtype="float32")
            yv = None
            if y is not None:
                yv = nf.static.data(name="y", shape=[None, cfg.size] if y.ndim == 2 else [cfg.size],
                                    dtype="float32")
            out = layer(nf, xv, yv)
        feed = {"x": x} if y is None else {"x": x, "y": y}
        run = _runner(nf, main, feed, [out], nf.static.Scope())
        _check(name, run()[0], np_fn(x, y, np.empty_like(x)))
        return [Candidate("Executor.run", run),
                Candidate("numpy (allocates)", lambda: np_fn(x, y, np.empty_like(x)))]

    return Case(f"elementwise/{name}/executor", _what(name), build)


def _what(name):
    bias = " * b[{size}]" if ELEMENTWISE[name][3] == "bias" else ""
    return f"{name} {{size}}x{{size}}{bias} f32"


def bias_relu_case():
    """SPEC 7, first row: relu(x + bias) through a fused CompiledProgram."""

    def build(cfg):
        nf = _nf()
        n = cfg.bias_relu_size
        x, b = _elementwise_inputs(n, "bias", seed=1)
        main, startup = nf.static.Program(), nf.static.Program()
        with _guard(nf), nf.static.program_guard(main, startup):
            xv = nf.static.data(name="x", shape=[None, n], dtype="float32")
            bv = nf.static.data(name="b", shape=[n], dtype="float32")
            out = nf.nn.functional.relu(nf.add(xv, bv))
        compiled = _fused(nf, main)
        # the same C-contiguous f32 arrays every call: the executor uses them without a copy
        run = _runner(nf, compiled, {"x": x, "b": b}, [out], nf.static.Scope())
        loop_out = np.empty_like(x)
        baselines.bias_relu_loop(x, b, loop_out)
        want = np.maximum(x + b, 0)
        _check("bias_relu", run()[0], want)
        _check("bias_relu numba loop", loop_out, want)
        types = _passed_ops(compiled)
        fused = [t for t in types if _is_fused(t)]
        assert len(fused) == 1 and "relu" not in types and "elementwise_add" not in types, \
            f"bias_relu: expected one fused op in the compiled program, got {types}"
        return [Candidate("CompiledProgram fused", run,
                          note=f"runs 1 {fused[0]} op; the fetched array is handed over "
                               "without a copy (reused once the caller dropped it)"),
                Candidate("numba fused loop", lambda: baselines.bias_relu_loop(x, b, loop_out)),
                Candidate("numpy maximum(x+b,0)", lambda: np.maximum(x + b, 0),
                          note="unfused, allocates x+b and the result")]

    return Case("fused/bias_relu", "relu(x + b), x {bias_relu_size}^2 f32, fetched", build,
                targets={"numba": 1.3, "numpy": 0.25})


def matmul_case():
    """matmul of two fed matrices through Executor.run vs np.matmul (both allocate)."""

    def build(cfg):
        nf = _nf()
        n = cfg.matmul_size
        rng = np.random.default_rng(2)
        a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
        main, startup = nf.static.Program(), nf.static.Program()
        with _guard(nf), nf.static.program_guard(main, startup):
            av = nf.static.data(name="a", shape=[n, n], dtype="float32")
            bv = nf.static.data(name="b", shape=[n, n], dtype="float32")
            out = nf.matmul(av, bv)
        run = _runner(nf, main, {"a": a, "b": b}, [out], nf.static.Scope())
        _check("matmul", run()[0], a @ b, rtol=1e-4, atol=1e-3)
        return [Candidate("Executor.run", run), Candidate("np.matmul", lambda: np.matmul(a, b))]

    return Case("matmul", "{matmul_size}^2 @ {matmul_size}^2 f32", build)


# ---------------------------------------------------------------- convolution

def _conv2d_fn(nf):
    fn = getattr(nf.nn.functional, "conv2d", None)
    if fn is None:      # not re-exported yet
        from numbaflow.nn.functional_conv import conv2d as fn
    return fn


def _depthwise_program(nf, shape, seed, relu_first):
    """(x, filter, cotangent g, program, [dx, dw]) for relu(depthwise3x3(x)), or
    depthwise3x3(relu(x)) with `relu_first`. g is the cotangent of the output: the
    gradients of sum(out * g), without the elementwise multiply, reduce_sum and their
    grads that spelling it out adds."""
    n, c, h, w = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    k = rng.standard_normal((c, 1, 3, 3), dtype=np.float32)
    g = rng.standard_normal((n, c, h, w), dtype=np.float32)
    main, startup = nf.static.Program(), nf.static.Program()
    with _guard(nf), nf.static.program_guard(main, startup):
        xv = nf.static.data(name="x", shape=[n, c, h, w], dtype="float32")
        wv = nf.static.data(name="w", shape=[c, 1, 3, 3], dtype="float32")
        gv = nf.static.data(name="g", shape=[n, c, h, w], dtype="float32")
        xv.stop_gradient = wv.stop_gradient = False
        relu, conv = nf.nn.functional.relu, _conv2d_fn(nf)
        out = conv(relu(xv), wv, padding=1, groups=c) if relu_first else \
            relu(conv(xv, wv, padding=1, groups=c))
        grads = nf.static.gradients([out], [xv, wv], target_gradients=[gv])
    return x, k, g, main, grads


def depthwise_relu_case():
    """SPEC 7 / PERF_ANCHORS W5: relu(depthwise 3x3 conv), forward and backward, through a
    program (dx, dw of sum(out * g) fetched; feeds and fetches copied, as in training) vs
    the hand-written padded-plane numba loops."""

    def build(cfg):
        nf = _nf()
        x, k, g, main, grads = _depthwise_program(nf, cfg.depthwise_shape, 6,
                                                  relu_first=False)
        assert "depthwise_conv2d" in [op.type for op in main.global_block().ops]
        run = _runner(nf, main, {"x": x, "w": k, "g": g}, grads, nf.static.Scope())
        o, dx, dw = np.empty_like(x), np.empty_like(x), np.empty_like(k)

        def step():
            baselines.depthwise_relu_step(x, k, g, o, dx, dw)

        step()
        got_dx, got_dw = run()
        _check("depthwise dx", got_dx, dx, rtol=1e-4, atol=1e-4)
        _check("depthwise dw", got_dw, dw, rtol=1e-3, atol=1e-3 * np.abs(dw).max())
        return [Candidate("Executor.run", run), Candidate("numba padded-plane loops", step)]

    return Case("conv/depthwise_relu_fwd_bwd",
                "relu(depthwise3x3(x)) fwd+bwd, x {depthwise_shape} f32", build,
                targets={"numba": 1.5})


def fused_depthwise_case():
    """SPEC 7 depthwise row with fuse_relu_depthwise_conv: depthwise3x3(relu(x)) (the
    order Paddle's pass fuses) forward and backward (dx, dw for the cotangent g fetched)
    through CompiledProgram with the flag vs the same program without it, and vs
    hand-written padded-plane numba loops applying the relu while filling the plane."""

    def build(cfg):
        nf = _nf()
        x, k, g, main, grads = _depthwise_program(nf, cfg.depthwise_shape, 8,
                                                  relu_first=True)
        bs = nf.static.BuildStrategy()
        bs.fuse_relu_depthwise_conv = True
        fused = nf.static.CompiledProgram(main, build_strategy=bs)
        plain = nf.static.CompiledProgram(main)     # same executor path, no fusion pass
        feed = {"x": x, "w": k, "g": g}
        run_fused = _runner(nf, fused, feed, grads, nf.static.Scope())
        run_plain = _runner(nf, plain, feed, grads, nf.static.Scope())
        o, dx, dw = np.empty_like(x), np.empty_like(x), np.empty_like(k)

        def step():
            baselines.relu_depthwise_step(x, k, g, o, dx, dw)

        step()
        for label, run in (("fused", run_fused), ("unfused", run_plain)):
            got_dx, got_dw = run()
            _check(f"relu->depthwise {label} dx", got_dx, dx, rtol=1e-4, atol=1e-4)
            _check(f"relu->depthwise {label} dw", got_dw, dw, rtol=1e-3,
                   atol=1e-3 * np.abs(dw).max())
        types, plain_types = _passed_ops(fused), _passed_ops(plain)
        assert "relu" not in types and "relu_grad" not in types and \
            "depthwise_conv2d" in types, f"fuse_relu_depthwise_conv did not fuse: {types}"
        assert "relu" in plain_types, f"the unfused program lost its relu: {plain_types}"
        return [Candidate("CompiledProgram fused", run_fused,
                          note="relu inside depthwise_conv2d(+_grad); dx, dw fetched"),
                Candidate("CompiledProgram unfused", run_plain, note="relu, relu_grad separate"),
                Candidate("numba padded-plane loops", step)]

    return Case("fused/depthwise_relu",
                "depthwise3x3(relu(x)) fwd+bwd, x {depthwise_shape} f32", build,
                targets={"numba": 1.3})


def conv2d_case():
    """conv2d forward (3x3, padding 1, 64 filters) through Executor.run vs a numpy im2col +
    matmul (the CNN against torch and JAX: models/cnn)."""

    def build(cfg):
        nf = _nf()
        n, c, h, w = cfg.conv_shape
        m = 64 if not cfg.quick else 8
        rng = np.random.default_rng(7)
        x = rng.standard_normal((n, c, h, w), dtype=np.float32)
        k = rng.standard_normal((m, c, 3, 3), dtype=np.float32) / np.float32(3 * c ** 0.5)
        main, startup = nf.static.Program(), nf.static.Program()
        with _guard(nf), nf.static.program_guard(main, startup):
            xv = nf.static.data(name="x", shape=[n, c, h, w], dtype="float32")
            wv = nf.static.data(name="w", shape=[m, c, 3, 3], dtype="float32")
            out = _conv2d_fn(nf)(xv, wv, padding=1)
        run = _runner(nf, main, {"x": x, "w": k}, [out], nf.static.Scope())
        want = baselines.numpy_conv2d_im2col(x, k, 1)
        _check("conv2d", run()[0], want, rtol=1e-3, atol=1e-3)
        return [Candidate("Executor.run", run),
                Candidate("numpy im2col+matmul", lambda: baselines.numpy_conv2d_im2col(x, k, 1))]

    return Case("conv/conv2d", "conv2d fwd x {conv_shape}, 64 3x3 filters (quick: 8), pad 1, f32",
                build)


# ---------------------------------------------------------------- model steps

def seed_program(pd):
    """Paddle's quick-start model: X [N,1] -> fc 10 -> mean -> SGD 0.01."""
    main, startup = pd.static.Program(), pd.static.Program()
    with _guard(pd), pd.static.program_guard(main, startup):
        x = pd.static.data(name="X", shape=[None, 1], dtype="float32")
        hidden = pd.static.nn.fc(x, size=10)
        loss = pd.mean(hidden)
        pd.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def mlp_program(pd):
    """models.mlp_program as (main, startup, loss), the form the model cases take."""
    built = models.mlp_program(pd)
    return built.main, built.startup, built.loss


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
    _check(f"{name} {candidates[0].label}",
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
        nf = _nf()
        x, y, feed, lr, _ = batch(cfg)
        main, loss, scope, params = _initialised(nf, build, layers)
        if compiled:
            program, fetch, label = nf.static.CompiledProgram(main), [loss.name], \
                "CompiledProgram, fetch by name"
        elif fused:
            program, fetch, label = _fused(nf, main, fuse_all_optimizer_ops=True), [loss], \
                "CompiledProgram fused"
        else:
            program, fetch, label = main, [loss], "Executor.run"
        run = _runner(nf, program, feed, fetch, scope)
        candidates = [Candidate(label, lambda: run()[0]),
                      Candidate("numpy by hand", make_numpy(params, x, y, lr))]
        _check_steps(name, candidates)
        if fused:
            types = _passed_ops(program)
            assert any(_is_fused(t) for t in types), f"{name}: nothing fused: {types}"
            candidates[0].note = "runs " + _fused_summary(types)
        return candidates

    return Case(name, what, build_case, targets=targets)


def backup_overhead_case():
    """What failure atomicity costs: the MLP step with its per-run backups of every
    persistable it writes, against the same plan with the backups switched off."""

    def build(cfg):
        from ..executor.executor import cached_plans
        nf = _nf()
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


def seed_batch(cfg):
    """The seed step's batch: (x, y, feed, learning rate, loss kind)."""
    x = np.random.default_rng(3).random((10, 1), dtype=np.float32)
    return x, None, {"X": x}, 0.01, "mean"


def mlp_batch(cfg):
    """The MLP step's batch: (x, y, feed, learning rate, loss kind)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((cfg.mlp_batch, 784), dtype=np.float32)
    y = rng.integers(0, 10, size=(cfg.mlp_batch, 1), dtype=np.int64)
    return x, y, {"x": x, "y": y}, 0.1, "ce"


def _numpy_seed(params, x, y, lr):
    return baselines.NumpySeedStep(params[0], params[1], x, lr)


def _numpy_mlp(params, x, y, lr):
    return baselines.NumpyMLPStep(params, x, y, lr)


def seed_x100_case(k=100):
    """K iterations per Executor.run (ExecutionStrategy.num_iteration_per_run), per iteration."""

    def build(cfg):
        nf = _nf()
        x, _, feed, lr, _ = seed_batch(cfg)
        main, loss, scope, params = _initialised(nf, seed_program, 1)
        es = nf.static.ExecutionStrategy()
        es.num_iteration_per_run = k
        program = nf.static.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, exec_strategy=es, places=[nf.CPUPlace()])
        run = _runner(nf, program, feed, [loss], scope)
        step = _numpy_seed(params, x, None, lr)
        want = [step() for _ in range(k)][-1]  # the fetch is the last iteration's loss
        _check(f"seed x{k}", np.asarray(run()[0]).ravel()[0], want, rtol=1e-3)
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
    from .compile_time import compile_case     # it imports this module
    cases.append(compile_case())
    from .deep_mlp import deep_mlp_cases
    cases += deep_mlp_cases()
    from .data_parallel import dp_cases
    cases += dp_cases()
    from .model_rows import model_cases
    cases += model_cases()
    from .fusion import fusion_cases
    cases += fusion_cases()
    return cases
