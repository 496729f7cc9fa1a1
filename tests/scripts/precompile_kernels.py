"""Eight generated kernels' first calls on a cold cache, with the compile helper
(executor/precompile.py) in mode argv[1]: `helper` (the helper alone, kernels 1..7 claimed
by this side), `stopped` (the helper stopped holding its first claim) or `both` (as a
plan's first run does). Prints `name: value` lines: cold, offered, elapsed, cold after,
compiled on call, sums. Run by tests/executor/test_precompile.py."""
import functools, os, sys, tempfile
import numpy as np
from numba.core import event
from numbaflow.executor import precompile
from numbaflow.kernels.codegen import cache

SRC = '''from numba import njit
@njit(cache=True)
def kernel(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] * {k}
    x[0] = s
'''
arrays = [np.ones(4) for _ in range(8)]
thunks = [functools.partial(cache.load_source(SRC.format(k=k)).kernel, a)
          for k, a in enumerate(arrays)]
cold = precompile.cold_kernels(thunks)
print("cold:", len(cold))
mode = sys.argv[1]
if mode == "helper":           # the helper alone, with kernels 1..7 claimed by 'us'
    work = tempfile.mkdtemp()
    os.mkdir(os.path.join(work, "claims"))
    for i in range(1, len(cold)):
        open(os.path.join(work, "claims", str(i)), "w").close()
    helper, err = precompile.start_helper(cold, work)
    assert helper.wait(timeout=300) == 0, open(os.path.join(work, "stderr"), encoding="utf-8").read()
    err.close()
elif mode == "stopped":        # the helper is stopped (SIGSTOP) holding its first claim
    import signal, time
    real = precompile.start_helper
    def start(cold, work):
        helper, err = real(cold, work)
        while not os.path.exists(os.path.join(work, "claims", "0")):
            time.sleep(0.001)
        os.kill(helper.pid, signal.SIGSTOP)
        return helper, err
    precompile.start_helper = start
    t0 = time.time()
    print("offered:", precompile.precompile(thunks))
    print("elapsed:", round(time.time() - t0))
else:                          # both sides, as a plan's first run does
    print("offered:", precompile.precompile(thunks))
print("cold after:", len(precompile.cold_kernels(thunks)))
compiles = []
class Count(event.Listener):
    def on_start(self, ev): compiles.append(ev.data["dispatcher"])
    def on_end(self, ev): pass
event.register("numba:compile", Count())
for t in thunks:
    t()
print("compiled on call:", len(compiles))
print("sums:", [float(a[0]) for a in arrays])
