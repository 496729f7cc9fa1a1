"""`run_check()`: what numbaflow runs on, and whether it can train (paddle.utils.run_check).

``python -m numbaflow`` calls it. It reports versions, threads, the kernel cache, MPI and
CUDA, then trains a tiny program on CPU (and on the GPU when one is usable) and checks the
result against numpy.
"""
from __future__ import annotations

import os
import platform
import shutil
import sys
import traceback
from typing import TextIO

import numpy as np

from . import config, optimizer, static
from ._version import __version__
from .executor import CPUPlace, CUDAPlace
from .param_attr import ParamAttr
from .tensor.math import mean, square, subtract
from .utils import unique_name


def _version(module):
    try:
        mod = __import__(module)
        return getattr(mod, "__version__", "installed")
    except ImportError:
        return "not installed"
    except Exception as e:       # a broken install: say so instead of failing the whole check
        return f"broken ({type(e).__name__}: {e})"


def _parallel_sum(n):
    import numba

    @numba.njit(parallel=True, cache=True)
    def psum(n):
        s = 0.0
        for i in numba.prange(n):
            s += i
        return s
    return psum(n)


def _threads():
    import numba
    layer = numba.config.THREADING_LAYER
    try:    # run one parallel loop so that numba starts (and names) its threading layer
        if _parallel_sum(1000) != 499500.0:
            return "FAILED: a numba parallel loop computed a wrong sum"
    except Exception as e:
        return f"FAILED: a numba parallel loop failed: {type(e).__name__}: {e}"
    try:
        layer = f"{numba.threading_layer()} (chosen: {layer})"
    except ValueError:
        layer = f"{layer} (not started yet)"
    return (f"{layer}; numba threads {numba.get_num_threads()} of "
            f"{numba.config.NUMBA_NUM_THREADS}; CPUs {os.cpu_count()}; "
            f"OMP_WAIT_POLICY={config.omp_wait_policy()}")


def _cache():
    from .kernels.codegen import cache
    info = cache.info()
    return (f"{info['path']} ({info['entries']} entries, {info['bytes'] / 2**20:.1f} MB of "
            f"{info['limit_bytes'] / 2**20:.0f} MB; numba code in {info['numba_path']})")


def _mpi():
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    exe = exe if os.path.exists(exe) else shutil.which("mpiexec")
    found = f"mpiexec {exe}" if exe else "mpiexec not found (install the 'mpich' package)"
    from .distributed.mpi import env_size
    if env_size() <= 1:     # importing mpi4py.MPI would start MPI: only under mpiexec
        return f"{found}; not launched by mpiexec (world size 1)"
    from . import distributed
    return f"{found}; rank {distributed.get_rank()} of {distributed.get_world_size()}"


def _cuda():
    """(usable, description)."""
    if config.cuda_simulator():
        return True, "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): correct, not fast"
    from .utils.cuda_check import device_problem
    problem = device_problem(0)         # no GPU, then the driver, then the toolkit
    if problem:
        return False, f"no usable GPU: {problem}"
    from numba import cuda
    try:
        from numba.cuda.cudadrv.driver import driver
        drv = ".".join(map(str, driver.get_version()))
        try:
            toolkit = ".".join(map(str, cuda.runtime.get_version()))
        except Exception as e:
            toolkit = f"unknown ({type(e).__name__})"
        devices = ", ".join(f"{g.id}: {g.name.decode() if isinstance(g.name, bytes) else g.name}"
                            f" (cc {'.'.join(map(str, g.compute_capability))})" for g in cuda.gpus)
        return True, f"driver {drv}, runtime {toolkit}, devices [{devices}]"
    except Exception as e:
        return False, f"CUDA failed to start: {type(e).__name__}: {e}"


def _train(place):
    """Train y = x @ w_true with SGD on `place`; return the last loss (checked against numpy)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    w0 = rng.standard_normal((4, 1)).astype(np.float32)
    main, startup = static.Program(), static.Program()
    with unique_name.guard(), static.scope_guard(static.Scope()), \
            static.program_guard(main, startup):
        xv = static.data("x", [None, 4])
        yv = static.data("y", [None, 1])
        pred = static.nn.fc(xv, size=1, weight_attr=ParamAttr(name="w"), bias_attr=False)
        loss = mean(square(subtract(pred, yv)))
        optimizer.SGD(learning_rate=0.1).minimize(loss)
        exe = static.Executor(place)
        exe.run(startup)
        static.global_scope().set("w", w0)
        losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss])[0])
                  for _ in range(30)]
        w_final = np.asarray(static.global_scope().get("w"))
    ref, wr = [], w0.astype(np.float64)
    for _ in range(30):                      # the same steps in numpy
        err = x @ wr - y
        ref.append(float(np.mean(err ** 2)))
        wr = wr - 0.1 * (2.0 / len(x)) * x.T @ err
    if not np.allclose(losses, ref, rtol=1e-3, atol=1e-5) or not np.allclose(w_final, wr,
                                                                               atol=1e-3):
        raise AssertionError(f"losses {losses[:3]}... differ from numpy's {ref[:3]}...")
    if not losses[-1] < 0.01 * losses[0]:
        raise AssertionError(f"loss did not fall: {losses[0]:.4g} -> {losses[-1]:.4g}")
    return losses[-1]


def run_check(out: TextIO | None = None) -> bool:
    """Print what numbaflow runs on, train a tiny program on CPU (and GPU when usable), and
    say "numbaflow works" or what failed (as ``paddle.utils.run_check``).

    Reports the numbaflow, Python, numba, llvmlite, numpy, scipy and mpi4py versions, the
    kernel cache, MPI (``mpiexec``, world size), CUDA (driver, runtime, devices, or why
    not), and numba's threading layer and thread counts. ``python -m numbaflow`` runs it.

    Args:
        out (file, optional): where to write the report; default ``sys.stdout``.

    Returns:
        bool: True when every training check passed.

    Example:
        >>> import io
        >>> report = io.StringIO()
        >>> paddle.utils.run_check(out=report)
        True
        >>> report.getvalue().splitlines()[-1]
        'numbaflow works (CPU...)'
    """
    out = out or sys.stdout

    def say(label, value=""):
        print(f"{label:<16}{value}" if value else label, file=out, flush=True)

    say("numbaflow", f"{__version__} ({os.path.dirname(os.path.abspath(__file__))})")
    say("python", f"{platform.python_version()} ({sys.executable}) on {platform.platform()}")
    say("packages", ", ".join(f"{m} {_version(m)}" for m in
                              ("numba", "llvmlite", "numpy", "scipy", "mpi4py")))
    failures, worked = [], []
    for label, probe in (("kernel cache", _cache), ("MPI", _mpi)):
        try:
            say(label, probe())
        except Exception as e:
            say(label, f"FAILED: {type(e).__name__}: {e}")
    gpu_ok, gpu_text = _cuda()
    say("CUDA", gpu_text)
    places = [("CPU", CPUPlace)] + ([("GPU", lambda: CUDAPlace(0))] if gpu_ok else [])
    for name, make in places:
        try:
            last = _train(make())
            say(f"train on {name}", f"ok (30 SGD steps match numpy; final loss {last:.2e})")
            worked.append(name)
        except Exception as e:
            say(f"train on {name}", f"FAILED: {type(e).__name__}: {e}")
            failures.append((name, traceback.format_exc()))
    say("threads", _threads())          # after training: the threading layer has started
    for name, tb in failures:
        say(f"--- {name} traceback ---\n{tb.rstrip()}")
    if failures:
        say(f"numbaflow FAILED on {', '.join(n for n, _ in failures)} (see above)")
        return False
    say(f"numbaflow works ({', '.join(worked)})")
    return True
