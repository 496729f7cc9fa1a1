"""The kernel-level benchmark cases: elementwise ops (kernel and Executor.run), the fused
bias + relu, matmul, depthwise and conv2d."""
import functools

import numpy as np

from . import baselines
from .common import (check_close, executor_runner, fresh_names, fused_compiled, is_fused,
                     load_numbaflow, passed_ops)
from .harness import Candidate, Case, Skip


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
        load_numbaflow()  # registers the ops
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
        check_close(name, outs["Out"][0], np_fn(x, y, ref))
        return [Candidate(f"kernel {op_type}", thunk),
                Candidate("numpy out=", lambda: np_fn(x, y, ref))]

    return Case(f"elementwise/{name}/kernel", _what(name), build)


def elementwise_executor_case(name):
    """A one-op program through Executor.run (feed x, fetch out) vs the numpy expression."""
    _, layer, np_fn, second = ELEMENTWISE[name]

    def build(cfg):
        nf = load_numbaflow()
        x, y = _elementwise_inputs(cfg.size, second)
        main, startup = nf.static.Program(), nf.static.Program()
        with fresh_names(nf), nf.static.program_guard(main, startup):
            xv = nf.static.data(name="x", shape=[None, cfg.size], dtype="float32")
            yv = None
            if y is not None:
                yv = nf.static.data(name="y", shape=[None, cfg.size] if y.ndim == 2 else [cfg.size],
                                    dtype="float32")
            out = layer(nf, xv, yv)
        feed = {"x": x} if y is None else {"x": x, "y": y}
        run = executor_runner(nf, main, feed, [out], nf.static.Scope())
        check_close(name, run()[0], np_fn(x, y, np.empty_like(x)))
        return [Candidate("Executor.run", run),
                Candidate("numpy (allocates)", lambda: np_fn(x, y, np.empty_like(x)))]

    return Case(f"elementwise/{name}/executor", _what(name), build)


def _what(name):
    bias = " * b[{size}]" if ELEMENTWISE[name][3] == "bias" else ""
    return f"{name} {{size}}x{{size}}{bias} f32"


def serial_note(cfg):
    """A hand-written loop's note: with --quick it runs serial (its parallel compile costs
    a cold --quick run seconds of CPU; --quick judges no ratio)."""
    return "loops serial with --quick" if cfg.quick else ""


def depthwise_baseline(cfg, x, k, g, relu_first):
    """(label, step, o, dx, dw): the padded-plane numba loops, or with --quick (which judges
    no ratio) the same planes in numpy, whose compile-free run saves a cold --quick ~10 s."""
    o, dx, dw = np.empty_like(x), np.empty_like(x), np.empty_like(k)
    if cfg.quick:
        return "numpy padded planes", functools.partial(
            baselines.numpy_depthwise_step, x, k, g, o, dx, dw, relu_first), o, dx, dw
    step = baselines.relu_depthwise_step if relu_first else baselines.depthwise_relu_step
    return "numba padded-plane loops", functools.partial(step, x, k, g, o, dx, dw), o, dx, dw


def bias_relu_case():
    """SPEC 7, first row: relu(x + bias) through a fused CompiledProgram."""

    def build(cfg):
        nf = load_numbaflow()
        n = cfg.bias_relu_size
        x, b = _elementwise_inputs(n, "bias", seed=1)
        main, startup = nf.static.Program(), nf.static.Program()
        with fresh_names(nf), nf.static.program_guard(main, startup):
            xv = nf.static.data(name="x", shape=[None, n], dtype="float32")
            bv = nf.static.data(name="b", shape=[n], dtype="float32")
            out = nf.nn.functional.relu(nf.add(xv, bv))
        compiled = fused_compiled(nf, main)
        # the same C-contiguous f32 arrays every call: the executor uses them without a copy
        run = executor_runner(nf, compiled, {"x": x, "b": b}, [out], nf.static.Scope())
        loop_out = np.empty_like(x)
        loop = baselines.bias_relu_loop.serial if cfg.quick else baselines.bias_relu_loop
        loop(x, b, loop_out)
        want = np.maximum(x + b, 0)
        check_close("bias_relu", run()[0], want)
        check_close("bias_relu numba loop", loop_out, want)
        types = passed_ops(compiled)
        fused = [t for t in types if is_fused(t)]
        assert len(fused) == 1 and "relu" not in types and "elementwise_add" not in types, \
            f"bias_relu: expected one fused op in the compiled program, got {types}"
        return [Candidate("CompiledProgram fused", run,
                          note=f"runs 1 {fused[0]} op; the fetched array is handed over "
                               "without a copy (reused once the caller dropped it)"),
                Candidate("numba fused loop", lambda: loop(x, b, loop_out), note=serial_note(cfg)),
                Candidate("numpy maximum(x+b,0)", lambda: np.maximum(x + b, 0),
                          note="unfused, allocates x+b and the result")]

    return Case("fused/bias_relu", "relu(x + b), x {bias_relu_size}^2 f32, fetched", build,
                targets={"numba": 1.3, "numpy": 0.25})


def matmul_case():
    """matmul of two fed matrices through Executor.run vs np.matmul (both allocate)."""

    def build(cfg):
        nf = load_numbaflow()
        n = cfg.matmul_size
        rng = np.random.default_rng(2)
        a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
        main, startup = nf.static.Program(), nf.static.Program()
        with fresh_names(nf), nf.static.program_guard(main, startup):
            av = nf.static.data(name="a", shape=[n, n], dtype="float32")
            bv = nf.static.data(name="b", shape=[n, n], dtype="float32")
            out = nf.matmul(av, bv)
        run = executor_runner(nf, main, {"a": a, "b": b}, [out], nf.static.Scope())
        check_close("matmul", run()[0], a @ b, rtol=1e-4, atol=1e-3)
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
    with fresh_names(nf), nf.static.program_guard(main, startup):
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
        nf = load_numbaflow()
        x, k, g, main, grads = _depthwise_program(nf, cfg.depthwise_shape, 6,
                                                  relu_first=False)
        assert "depthwise_conv2d" in [op.type for op in main.global_block().ops]
        run = executor_runner(nf, main, {"x": x, "w": k, "g": g}, grads, nf.static.Scope())
        label, step, _, dx, dw = depthwise_baseline(cfg, x, k, g, relu_first=False)
        step()
        got_dx, got_dw = run()
        check_close("depthwise dx", got_dx, dx, rtol=1e-4, atol=1e-4)
        check_close("depthwise dw", got_dw, dw, rtol=1e-3, atol=1e-3 * np.abs(dw).max())
        return [Candidate("Executor.run", run), Candidate(label, step)]

    return Case("conv/depthwise_relu_fwd_bwd",
                "relu(depthwise3x3(x)) fwd+bwd, x {depthwise_shape} f32", build,
                targets={"numba": 1.5})


def fused_depthwise_case():
    """SPEC 7 depthwise row with fuse_relu_depthwise_conv: depthwise3x3(relu(x)) (the
    order Paddle's pass fuses) forward and backward (dx, dw for the cotangent g fetched)
    through CompiledProgram with the flag vs the same program without it, and vs
    hand-written padded-plane numba loops applying the relu while filling the plane."""

    def build(cfg):
        nf = load_numbaflow()
        x, k, g, main, grads = _depthwise_program(nf, cfg.depthwise_shape, 8,
                                                  relu_first=True)
        bs = nf.static.BuildStrategy()
        bs.fuse_relu_depthwise_conv = True
        fused = nf.static.CompiledProgram(main, build_strategy=bs)
        plain = nf.static.CompiledProgram(main)     # same executor path, no fusion pass
        feed = {"x": x, "w": k, "g": g}
        run_fused = executor_runner(nf, fused, feed, grads, nf.static.Scope())
        run_plain = executor_runner(nf, plain, feed, grads, nf.static.Scope())
        base, step, _, dx, dw = depthwise_baseline(cfg, x, k, g, relu_first=True)
        step()
        for label, run in (("fused", run_fused), ("unfused", run_plain)):
            got_dx, got_dw = run()
            check_close(f"relu->depthwise {label} dx", got_dx, dx, rtol=1e-4, atol=1e-4)
            check_close(f"relu->depthwise {label} dw", got_dw, dw, rtol=1e-3,
                   atol=1e-3 * np.abs(dw).max())
        types, plain_types = passed_ops(fused), passed_ops(plain)
        assert "relu" not in types and "relu_grad" not in types and \
            "depthwise_conv2d" in types, f"fuse_relu_depthwise_conv did not fuse: {types}"
        assert "relu" in plain_types, f"the unfused program lost its relu: {plain_types}"
        return [Candidate("CompiledProgram fused", run_fused,
                          note="relu inside depthwise_conv2d(+_grad); dx, dw fetched"),
                Candidate("CompiledProgram unfused", run_plain, note="relu, relu_grad separate"),
                Candidate(base, step)]

    return Case("fused/depthwise_relu",
                "depthwise3x3(relu(x)) fwd+bwd, x {depthwise_shape} f32", build,
                targets={"numba": 1.3})


def conv2d_case():
    """conv2d forward (3x3, padding 1, 64 filters) through Executor.run vs a numpy im2col +
    matmul (the CNN against torch and JAX: models/cnn)."""

    def build(cfg):
        nf = load_numbaflow()
        n, c, h, w = cfg.conv_shape
        m = 64 if not cfg.quick else 8
        rng = np.random.default_rng(7)
        x = rng.standard_normal((n, c, h, w), dtype=np.float32)
        k = rng.standard_normal((m, c, 3, 3), dtype=np.float32) / np.float32(3 * c ** 0.5)
        main, startup = nf.static.Program(), nf.static.Program()
        with fresh_names(nf), nf.static.program_guard(main, startup):
            xv = nf.static.data(name="x", shape=[n, c, h, w], dtype="float32")
            wv = nf.static.data(name="w", shape=[m, c, 3, 3], dtype="float32")
            out = _conv2d_fn(nf)(xv, wv, padding=1)
        run = executor_runner(nf, main, {"x": x, "w": k}, [out], nf.static.Scope())
        want = baselines.numpy_conv2d_im2col(x, k, 1)
        check_close("conv2d", run()[0], want, rtol=1e-3, atol=1e-3)
        return [Candidate("Executor.run", run),
                Candidate("numpy im2col+matmul", lambda: baselines.numpy_conv2d_im2col(x, k, 1))]

    return Case("conv/conv2d", "conv2d fwd x {conv_shape}, 64 3x3 filters (quick: 8), pad 1, f32",
                build)
