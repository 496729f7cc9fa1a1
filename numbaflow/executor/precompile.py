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

A helper that stops making progress (stopped by SIGSTOP, a frozen cgroup or a debugger;
swapped out) cannot stall the run: while this process waits for it, it watches the
helper's heartbeat file, its claims and its CPU time, and kills it when none moved for
HELPER_STALL_S, then compiles the helper's share itself. The helper exits when its parent
dies; work directories (`numbaflow-compile-<pid>-*`) of runs that were killed are removed
by the next start.
"""
import functools
import logging
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from .. import config
from ..kernels.codegen import cache
from ..kernels.workshare import run_workers
from .segments import compilable, flatten

log = logging.getLogger("numbaflow.compile")

MIN_COLD = 6          # cold kernels below which a helper (~1 s of CPU to start) cannot pay
HELPER_TIMEOUT_S = 600   # the most a helper that keeps making progress is waited for
HELPER_STALL_S = 3.0     # no heartbeat, claim or CPU tick for this long: the helper is stuck
_BEAT_S = 0.25           # the helper's heartbeat period
_WORK_PREFIX = "numbaflow-compile-"
_GENERATED = "numbaflow_generated."
_lock = threading.Lock()      # one helper at a time (replica threads first-run together)


def kernel_calls(thunk):
    """The bound kernel calls of `thunk` (its flattened steps), a kernel run on several
    threads (workshare.bind_workers) given by its first worker's call: the workers are the
    largest kernels of a step (conv2d's), and the helper compiles them like any other."""
    for call in flatten(thunk):
        if isinstance(call, functools.partial) and call.func is run_workers:
            call = call.args[1][0]
        yield call


def cold_kernels(thunks):
    """[(dispatcher, signature)] of the bound CPU kernels in `thunks` that are neither
    compiled in this process nor in numba's disk cache, in program order."""
    seen, cold = set(), []
    for thunk in thunks:
        for call in kernel_calls(thunk):
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
        with open(sys.modules[fn.__module__].__file__, encoding="utf-8") as f:
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
        if claims is None or _claim(claims, i):       # None: no one else left to claim
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


def _progress(helper, work):
    """What moves while the helper works: its heartbeat, its claims and its CPU time."""
    try:
        beat = os.stat(os.path.join(work, "heartbeat")).st_mtime_ns
    except OSError:
        beat = None
    try:
        claims = len(os.listdir(os.path.join(work, "claims")))
    except OSError:
        claims = None
    try:
        with open(f"/proc/{helper.pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        cpu = (fields[0], int(fields[11]) + int(fields[12]))    # state, utime + stime
    except (OSError, IndexError, ValueError):
        cpu = None
    return beat, claims, cpu


def _wait_watched(helper, work):
    """Wait for the helper; True if it ended, False if it was killed for making no
    progress for HELPER_STALL_S (or running past HELPER_TIMEOUT_S)."""
    start = last = time.monotonic()
    seen = _progress(helper, work)
    while True:
        try:
            helper.wait(timeout=0.05)
            return True
        except subprocess.TimeoutExpired:
            pass
        now, mark = time.monotonic(), _progress(helper, work)
        if mark != seen:
            seen, last = mark, now
        elif now - last > HELPER_STALL_S or now - start > HELPER_TIMEOUT_S:
            helper.kill()
            helper.wait()
            log.warning("the kernel compile helper (pid %d) made no progress for %.0f s "
                        "(stopped, frozen or swapped out?); killed it, compiling its kernels "
                        "in this process", helper.pid, now - last)
            return False


def _owner_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def clean_stale_work_dirs(tmp=None):
    """Remove the work directories that runs killed before their cleanup left in the temp
    directory (`numbaflow-compile-<pid>-*` whose process is gone)."""
    tmp = tmp or tempfile.gettempdir()
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        m = re.match(re.escape(_WORK_PREFIX) + r"(\d+)-", name)
        if m and not _owner_alive(int(m.group(1))):
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


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
        clean_stale_work_dirs()
        t0, c0 = time.perf_counter(), os.times().children_user
        with tempfile.TemporaryDirectory(prefix=f"{_WORK_PREFIX}{os.getpid()}-") as work:
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
                    if not _wait_watched(helper, work):     # stuck: its share is ours
                        theirs = sorted(set(range(len(cold))) - set(ours))
                        _compile_all(theirs, cold.__getitem__, None)
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

    parent = os.getppid()

    def beat():       # the heartbeat the parent watches; ends the helper with its parent
        path = os.path.join(work, "heartbeat")
        while os.getppid() == parent:
            try:
                with open(path, "wb") as f:
                    f.write(str(time.monotonic()).encode())
            except OSError:
                os._exit(1)           # the work directory is gone: the run is over
            time.sleep(_BEAT_S)
        os._exit(1)
    threading.Thread(target=beat, daemon=True).start()

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
