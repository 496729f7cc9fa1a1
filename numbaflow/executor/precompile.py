"""A plan's first run on a cold cache compiles its kernels in two processes.

numba compiles one function at a time in a process (a global compiler lock), and a cold
first run of the README's CNN spends ~95% of its time compiling. So before a plan's first
run, the kernels that numba's disk cache does not hold yet are compiled by this process
and by one helper process at once (`python -m numbaflow.executor.precompile`), the helper
from the front of the list and this process from the back; each kernel is claimed by
creating a file (O_EXCL), so none is compiled twice. The run then loads the helper's
share from the disk cache. A warm cache, a handful of cold kernels, one core, or a process
under mpiexec (the ranks use the cores) starts no helper. A helper that fails costs
nothing but time: whatever it did not compile, the run compiles as usual.
"""
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time

from .. import config
from ..kernels.codegen import cache
from .segments import compilable, flatten

log = logging.getLogger("numbaflow.compile")

MIN_COLD = 6          # cold kernels below which a helper (~1 s of CPU to start) cannot pay
HELPER_TIMEOUT_S = 600
_GENERATED = "numbaflow_generated."
_lock = threading.Lock()      # one helper at a time (replica threads first-run together)


def cold_kernels(thunks):
    """[(dispatcher, signature)] of the bound CPU kernels in `thunks` that are neither
    compiled in this process nor in numba's disk cache, in program order."""
    seen, cold = set(), []
    for thunk in thunks:
        for call in flatten(thunk):
            if not compilable(call):
                continue
            disp = call.func
            sig = tuple(disp.typeof_pyval(a) for a in call.args)
            if (id(disp), sig) in seen or sig in disp.overloads:
                continue
            seen.add((id(disp), sig))
            if not cache.in_disk_cache(disp, sig):
                cold.append((disp, sig))
    return cold


def _spec(disp, sig):
    """(module, name, generated source or None, signature): how the helper finds a kernel."""
    fn = disp.py_func
    source = None
    if fn.__module__.startswith(_GENERATED):
        with open(sys.modules[fn.__module__].__file__) as f:
            source = f.read()
    return fn.__module__, fn.__name__, source, sig


def _claim(claims, i):
    try:
        os.close(os.open(os.path.join(claims, str(i)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def _compile_all(order, kernel, claims):
    """Compile each kernel `kernel(i)` -> (dispatcher, signature) for i in `order` that the
    other side has not claimed; return the indices claimed here."""
    ours = []
    for i in order:
        if _claim(claims, i):
            ours.append(i)
            try:
                disp, sig = kernel(i)
                disp.compile(sig)
            except Exception as e:      # the run's own call raises it, naming the op
                log.debug("precompile of kernel %d failed: %r", i, e)
    return ours


def start_helper(cold, work):
    """Start the helper process on the kernels `cold` ([(dispatcher, signature)]) in the
    directory `work` (its list, its claims, its stderr); returns (Popen, stderr file)."""
    payload = pickle.dumps([_spec(d, s) for d, s in cold])
    os.makedirs(os.path.join(work, "claims"), exist_ok=True)   # (may hold claims already)
    with open(os.path.join(work, "kernels.pkl"), "wb") as f:
        f.write(payload)
    err = open(os.path.join(work, "stderr"), "w+b")
    try:
        return subprocess.Popen([sys.executable, "-m", __name__, work], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err), err
    except BaseException:
        err.close()
        raise


def precompile(thunks):
    """Before a plan's first run: compile the cold kernels of `thunks` in this process
    and a helper process together (see the module's docstring). Returns the number of
    kernels the helper was offered (0: no helper)."""
    if (os.cpu_count() or 1) < 2 or config.launcher_rank_size()[1] > 1:
        return 0
    with _lock:
        cold = cold_kernels(thunks)
        if len(cold) < MIN_COLD:
            return 0
        t0, c0 = time.perf_counter(), os.times().children_user
        with tempfile.TemporaryDirectory(prefix="numbaflow-compile-") as work:
            try:
                helper, err = start_helper(cold, work)
            except Exception as e:      # a type numba cannot pickle: compile here, as usual
                log.debug("no compile helper: %s", e)
                return 0
            with err:
                try:
                    ours = _compile_all(reversed(range(len(cold))), cold.__getitem__,
                                        os.path.join(work, "claims"))
                    if len(ours) == len(cold):  # the helper claimed nothing: do not wait for it
                        helper.kill()
                    helper.wait(timeout=HELPER_TIMEOUT_S)
                except subprocess.TimeoutExpired:       # the run compiles what is missing
                    helper.kill()
                    helper.wait()
                except BaseException:
                    helper.kill()
                    helper.wait()
                    raise
                err.seek(0)
                why = err.read()[-500:].decode(errors="replace") if helper.returncode else ""
        log.debug("compiled %d cold kernels in %.1f s: %d here, %d by the helper (%.1f s of "
                  "CPU, exit %s)%s", len(cold), time.perf_counter() - t0, len(ours),
                  len(cold) - len(ours),
                  os.times().children_user - c0,
                  helper.returncode, f": {why}" if why else "")
        return len(cold)


def _helper(work):
    """The helper's side: compile the kernels listed in `work`, from the front, each found
    only once claimed (so that claiming starts at once)."""
    import importlib

    with open(os.path.join(work, "kernels.pkl"), "rb") as f:
        specs = pickle.load(f)

    def kernel(i):      # one defined in the user's __main__ is not found here: it fails
        module, name, source, sig = specs[i]
        mod = cache.load_source(source) if source is not None else \
            importlib.import_module(module)
        return getattr(mod, name), sig

    _compile_all(range(len(specs)), kernel, os.path.join(work, "claims"))


if __name__ == "__main__":
    _helper(sys.argv[1])
