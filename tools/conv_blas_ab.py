"""A/B of conv2d's CPU kernels (issue 27), all in one process, interleaved rounds:
per conv shape of the ResNet-20, A = im2col + GEMM with the direct CBLAS call the kernels
made before (blas_numpy's former `matmul`), B = the same through gemm_cpu.gemm (what they
call now), C = the NCHWc direct kernel (conv_nchwc.py, float32: the forward, and the input
gradient at stride 1 as a forward of dOut) forced on; then
the whole `for_test` model with im2col everywhere (A), with conv.use_nchwc's rule (B) and
onnxruntime on numbaflow's own ONNX export of it.

    PYTHONPATH=. python tools/conv_blas_ab.py            # thunks, then the model at batch 1, 32

Readings: CPU time of the calling thread (time.thread_time: robust to a shared machine) at
1 thread, and the wall time at 2 threads; min over 5 rounds.
"""
import time
import types
from types import SimpleNamespace

import numba
import numpy as np
from numba import njit

import numbaflow as nf
from numbaflow.kernels.math.blas_numpy import cblas_gemm
from numbaflow.kernels.nn import conv, conv_im2col as ci

KERNELS = ("conv_fwd", "conv1x1_fwd", "conv_bwd", "conv1x1_bwd")
# (C, H, M, k, stride, pad): the ResNet-20's conv shapes (CIFAR: 16/32/64 channels)
SHAPES = [(16, 32, 16, 3, 1, 1), (32, 16, 32, 3, 1, 1), (64, 8, 64, 3, 1, 1),
          (16, 32, 32, 3, 2, 1), (32, 16, 64, 3, 2, 1), (16, 32, 32, 1, 2, 0)]


@njit(nogil=True)
def _direct_cblas(a, b, out, ta, tb, ab):
    # the call the kernels made before (blas_numpy.matmul): C-contiguous operands
    m, n = out.shape
    k = a.shape[0] if ta else a.shape[1]
    cblas_gemm(ta, tb, m, n, k, 1.0, a, a.shape[1], b, b.shape[1], 0.0, out, n)


def _recompiled(f, **replace):
    g = dict(f.py_func.__globals__, **replace)
    return njit(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})(
        types.FunctionType(f.py_func.__code__, g, f.py_func.__name__))


NEW = {n: getattr(ci, n) for n in KERNELS}
PARALLEL_THREADS = ci.parallel_threads
_OLD_ADD = _recompiled(ci._add_dfilter, gemm=_direct_cblas)
OLD = {n: _recompiled(f, gemm=_direct_cblas, _add_dfilter=_OLD_ADD) for n, f in NEW.items()}
RULE = conv.use_nchwc


def _nchwc(on):
    """conv.use_nchwc forced: on where the kernel can run (float32, 16 | M, 3x3), or off."""
    conv.use_nchwc = ((lambda k, dt: dt == np.float32 and k["groups"] == 1 and k["m"] % 16 == 0
                       and k["kh"] * k["kw"] > 1) if on else (lambda k, dt: False))


def _use(kernels):
    for name, f in kernels.items():
        setattr(ci, name, f)


def _interleaved(runs, reps, clock):
    for f in runs.values():
        f()
    best = {}
    for _ in range(5):
        for key, f in runs.items():
            t0 = clock()
            for _ in range(reps):
                f()
            best[key] = min(best.get(key, 1e9), (clock() - t0) / reps)
    return best


def thunks(n, threads, grad, clock, reps):
    ci.parallel_threads = lambda work, units: min(threads, units)
    runs = {}
    for c, h, m, k, s, p in SHAPES:
        x = np.random.rand(n, c, h, h).astype(np.float32)
        w = np.random.rand(m, c, k, k).astype(np.float32)
        cop = SimpleNamespace(type="conv2d", attrs=dict(
            strides=[s, s], paddings=[p, p], dilations=[1, 1], groups=1, data_format="NCHW"),
            input=lambda slot, x=x, w=w: x if slot == "Input" else w)
        oh = (h + 2 * p - k) // s + 1
        y = np.random.rand(n, m, oh, oh).astype(np.float32)
        for tag, kernels, on in (("A", OLD, False), ("B", NEW, False), ("C", NEW, True)):
            _use(kernels)
            _nchwc(on)
            runs[(c, h, m, k, s), tag] = (
                conv.backward_thunk(cop, x, w, y, np.empty_like(x), np.empty_like(w)) if grad
                else conv.forward_thunk(cop, x, w, y))
    _use(NEW)
    conv.use_nchwc = RULE
    best = _interleaved(runs, reps, clock)
    ci.parallel_threads = PARALLEL_THREADS
    kind = "grad" if grad else "fwd "
    for shape in dict.fromkeys(key for key, _ in best):
        row = {t: v for (sh, t), v in best.items() if sh == shape}
        print(f"  batch {n:2d} {threads}T {kind} {shape}: " + ", ".join(
            f"{t} {v * 1e6:.0f} us" for t, v in row.items())
            + "".join(f", {t}/B {row[t] / row['B']:.2f}" for t in "AC" if t in row))
    tot = {t: sum(v for (_, tt), v in best.items() if tt == t) for t in "ABC"}
    print(f"batch {n:2d} {threads} thread(s) {kind} {clock.__name__}: " + ", ".join(
        f"{t} {v * 1e3:.2f} ms" for t, v in tot.items() if v) + f", A/B {tot['A'] / tot['B']:.2f}"
        + (f", C/B {tot['C'] / tot['B']:.2f}" if tot["C"] else ""), flush=True)


def model(batch, reps, threads=1):
    import onnxruntime as ort
    from numbaflow.bench import models
    nf.enable_static()
    numba.set_num_threads(threads)
    if threads == 1:
        ci.parallel_threads = lambda work, units: 1    # all of the work on the timed thread
    built = models.PROGRAMS["resnet20"](nf)
    scope = nf.static.Scope()
    feed = {"image": np.random.default_rng(0).standard_normal((batch, 3, 32, 32))
            .astype("float32")}
    runs = {}
    for tag, rule in (("im2col A", lambda k, dt: False), ("rule B", RULE)):
        conv.use_nchwc = rule      # read when the executor builds its plan, at its first run
        exe = nf.static.Executor(nf.CPUPlace())
        if not runs:
            exe.run(built.startup, scope=scope)
        exe.run(built.test, feed=feed, fetch_list=[built.output], scope=scope)
        runs[tag] = _step(exe, built, feed, scope)
    conv.use_nchwc = RULE
    path = f"/tmp/conv_blas_ab_resnet20_b{batch}.onnx"
    nf.onnx.export(built.test, [built.test.global_block().var("image")], [built.output], path,
                   scope=scope)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    runs["onnxruntime"] = lambda: sess.run(None, feed)
    clock = time.thread_time if threads == 1 else time.perf_counter
    best = _interleaved(runs, reps, clock)
    ci.parallel_threads = PARALLEL_THREADS
    for key, v in best.items():
        print(f"ResNet-20 for_test batch {batch}, {threads} thread(s): {key:12s} {v * 1e3:7.2f} ms "
              f"{'CPU' if threads == 1 else 'wall'}, "
              f"{v / best['onnxruntime']:.2f}x onnxruntime", flush=True)


def _step(exe, built, feed, scope):
    return lambda: exe.run(built.test, feed=feed, fetch_list=[built.output], scope=scope)


if __name__ == "__main__":
    from numbaflow.executor.threads import limit_blas
    limit_blas(1)
    for n, reps in ((1, 30), (32, 2)):
        thunks(n, 1, False, time.thread_time, reps)
        thunks(n, 1, True, time.thread_time, reps)
        thunks(n, 2, False, time.perf_counter, reps)
        thunks(n, 2, True, time.perf_counter, reps)
    for threads in (1, 2):
        model(1, 100, threads)
        model(32, 4, threads)
