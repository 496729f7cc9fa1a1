"""A/B of the nchwc_layout pass (issue 27) on the ResNet-20 `for_test` program, one process,
interleaved rounds: the program compiled with the pass (the default) against the same
program with `BuildStrategy.nchwc_layout = False`, and onnxruntime on numbaflow's own ONNX
export of it; the outputs of the two numbaflow programs are compared.

    PYTHONPATH=. python tools/nchwc_ab.py [batch ...]        # default: 1 32
    PYTHONPATH=. python tools/nchwc_ab.py dfilter            # conv2d_grad's dFilter

`dfilter`: per 3x3 conv shape of the ResNet-20 at batch 64, conv2d_grad's filter gradient
bound with conv.use_nchwc off (im2col + GEMM) and on (the NCHWc dw tile).

Readings: CPU time of the calling thread (time.thread_time) at 1 thread, min and median
over 7 rounds (dfilter: min of 5).
"""
import sys
import time

import numba
import numpy as np

import numbaflow as nf
from numbaflow.bench import models
from numbaflow.executor.threads import limit_blas
from numbaflow.kernels.nn import conv_im2col


def main(batches):
    import onnxruntime as ort
    limit_blas(1)
    numba.set_num_threads(1)
    conv_im2col.parallel_threads = lambda work, units: 1     # all of the work on this thread
    nf.enable_static()
    built = models.PROGRAMS["resnet20"](nf)
    scope = nf.static.Scope()
    exe = nf.static.Executor(nf.CPUPlace())
    exe.run(built.startup, scope=scope)
    for batch in batches:
        feed = {"image": np.random.default_rng(0).standard_normal((batch, 3, 32, 32))
                .astype("float32")}
        runs, outs = {}, {}
        for tag, on in (("pass on", True), ("pass off", False)):
            bs = nf.static.BuildStrategy()
            bs.nchwc_layout = on
            prog = nf.static.CompiledProgram(built.test, build_strategy=bs)
            outs[tag] = exe.run(prog, feed=feed, fetch_list=[built.output], scope=scope)[0]
            runs[tag] = (lambda p=prog: exe.run(p, feed=feed, fetch_list=[built.output],
                                                scope=scope))
        path = f"/tmp/nchwc_ab_resnet20_b{batch}.onnx"
        nf.onnx.export(built.test, [built.test.global_block().var("image")], [built.output],
                       path, scope=scope)
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        runs["onnxruntime"] = lambda: sess.run(None, feed)
        diff = np.abs(outs["pass on"] - outs["pass off"]).max()
        reps = max(1, 64 // batch)
        times = {k: [] for k in runs}
        for f in runs.values():
            f()
        for _ in range(7):
            for k, f in runs.items():
                t0 = time.thread_time()
                for _ in range(reps):
                    f()
                times[k].append((time.thread_time() - t0) / reps)
        ref = min(times["onnxruntime"])
        print(f"ResNet-20 for_test batch {batch}, 1 thread, CPU time (max |on - off| "
              f"{diff:.2e}):")
        for k, v in times.items():
            print(f"  {k:12s} min {min(v) * 1e3:7.3f} ms, median {np.median(v) * 1e3:7.3f} ms, "
                  f"{min(v) / ref:.2f}x onnxruntime", flush=True)
        print(f"  on / off {min(times['pass on']) / min(times['pass off']):.2f}")


def dfilter(n=64):
    from types import SimpleNamespace
    from numbaflow.kernels.nn import conv
    limit_blas(1)
    conv_im2col.parallel_threads = lambda work, units: 1
    rule = conv.use_nchwc
    for c, h, m, s in [(16, 32, 16, 1), (32, 16, 32, 1), (64, 8, 64, 1), (16, 32, 32, 2),
                       (32, 16, 64, 2)]:
        x, w = np.random.rand(n, c, h, h).astype("f4"), np.random.rand(m, c, 3, 3).astype("f4")
        cop = SimpleNamespace(type="conv2d", input=lambda slot, x=x, w=w: x if slot == "Input"
                              else w, attrs=dict(strides=[s, s], paddings=[1, 1], groups=1,
                                                 dilations=[1, 1], data_format="NCHW"))
        d = np.random.rand(n, m, (h - 1) // s + 1, (h - 1) // s + 1).astype("f4")
        runs, best = {}, {}
        for tag, pick in (("im2col", lambda k, dt: False), ("dw tile", rule)):
            conv.use_nchwc = pick           # read when the thunk is bound
            runs[tag] = conv.backward_thunk(cop, x, w, d, None, np.empty_like(w))
        conv.use_nchwc = rule
        for f in runs.values():
            f()
        for _ in range(5):
            for tag, f in runs.items():
                t0 = time.thread_time()
                f()
                best[tag] = min(best.get(tag, 1e9), time.thread_time() - t0)
        print(f"dFilter batch {n} C{c} {h}x{h} M{m} stride {s}: im2col {best['im2col'] * 1e3:.2f}"
              f" ms, dw tile {best['dw tile'] * 1e3:.2f} ms, "
              f"{best['dw tile'] / best['im2col']:.2f}x", flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["dfilter"]:
        dfilter()
    else:
        main([int(b) for b in sys.argv[1:]] or [1, 32])
