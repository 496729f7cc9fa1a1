"""A/B of conv2d's CPU GEMMs (issue 27): B = the kernels as they are (numpy's OpenBLAS via
kernels/math/blas_numpy.matmul), A = the same kernels recompiled with the np.dot calls they
made before (scipy's OpenBLAS, what np.dot runs inside njit); and onnxruntime on
numbaflow's own ONNX export of the ResNet-20, all in one process, interleaved rounds.

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
from numbaflow.kernels.nn import conv, conv_im2col as ci

KERNELS = ("conv_fwd", "conv1x1_fwd", "conv_bwd", "conv1x1_bwd")
# (C, H, M, k, stride, pad): the ResNet-20's conv shapes (CIFAR: 16/32/64 channels)
SHAPES = [(16, 32, 16, 3, 1, 1), (32, 16, 32, 3, 1, 1), (64, 8, 64, 3, 1, 1),
          (16, 32, 32, 3, 2, 1), (32, 16, 64, 3, 2, 1), (16, 32, 32, 1, 2, 0)]


@njit(nogil=True)
def _np_dot(a, b, out, ta, tb):
    # the calls the kernels made before, with static layouts (a transposed view, no copy)
    if ta:
        np.dot(a.T, b, out)
    elif tb:
        np.dot(a, b.T, out)
    else:
        np.dot(a, b, out)


def _recompiled(f, **replace):
    g = dict(f.py_func.__globals__, **replace)
    return njit(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})(
        types.FunctionType(f.py_func.__code__, g, f.py_func.__name__))


NEW = {n: getattr(ci, n) for n in KERNELS}
PARALLEL_THREADS = ci.parallel_threads
_OLD_ADD = _recompiled(ci._add_dfilter, matmul=_np_dot)
OLD = {n: _recompiled(f, matmul=_np_dot, _add_dfilter=_OLD_ADD) for n, f in NEW.items()}


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
        for tag, kernels in (("A", OLD), ("B", NEW)):
            _use(kernels)
            runs[(c, h, m, k, s), tag] = (
                conv.backward_thunk(cop, x, w, y, np.empty_like(x), np.empty_like(w)) if grad
                else conv.forward_thunk(cop, x, w, y))
    _use(NEW)
    best = _interleaved(runs, reps, clock)
    ci.parallel_threads = PARALLEL_THREADS
    a = sum(v for (_, t), v in best.items() if t == "A")
    b = sum(v for (_, t), v in best.items() if t == "B")
    print(f"batch {n:2d} {threads} thread(s) {'grad' if grad else 'fwd '} {clock.__name__}: "
          f"A {a * 1e3:.2f} ms, B {b * 1e3:.2f} ms, A/B {a / b:.2f}", flush=True)


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
    for tag, kernels in (("numbaflow A", OLD), ("numbaflow B", NEW)):
        _use(kernels)      # bound when the executor builds its plan, at its first run
        exe = nf.static.Executor(nf.CPUPlace())
        if not runs:
            exe.run(built.startup, scope=scope)
        exe.run(built.test, feed=feed, fetch_list=[built.output], scope=scope)
        runs[tag] = _step(exe, built, feed, scope)
    _use(NEW)
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
