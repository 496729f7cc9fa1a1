"""Kill -9 driver for tests/io/test_checkpoint_faults.py (run as a script, with a timeout).

    python checkpoint_fault_driver.py random  DIR KILLS SEED   # SIGKILL at random moments
    python checkpoint_fault_driver.py points  DIR               # SIGKILL before/after each
                                                                # fsync/replace/unlink of a save

The driver imports numbaflow once and forks a worker per kill (fork is cheap and safe
here: no kernel has run, so no thread exists yet). A worker fills every persistable with
the value k, saves, and goes on with k+1, logging "S k" before and "D k" after each save.
After each kill the driver loads the checkpoint and checks that every variable holds one
value k with last-done <= k <= last-started (one whole save), then saves once more and
checks that no file but the save's own remains. Prints one JSON line of statistics; exits 1
with a message on the first violation.
"""
import json
import os
import random
import signal
import sys
import time

import numpy as np

import numbaflow as paddle
import numbaflow.static as static


def build(width):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, width], "float32")
        h = static.nn.fc(x, width, activation="relu")
        pred = static.nn.fc(h, 4)
        loss = paddle.mean(paddle.square(pred))
        paddle.optimizer.Adam(0.01).minimize(loss)
    return main, x, pred


class Case:
    """One kind of save: a checkpoint (static.save) or an inference model."""

    def __init__(self, kind, directory, width):
        self.kind, self.dir = kind, directory
        self.main, self.x, self.pred = build(width)
        self.exe = static.Executor(paddle.CPUPlace())
        self.prefix = os.path.join(directory, "m")
        if kind == "checkpoint":
            self.vars = [v for v in self.main.list_vars() if v.persistable]
            self.files = {"m.pdparams", "m.pdopt"}
        else:
            self.vars = [v for v in self.main.all_parameters()]
            self.files = {"m.nfmodel", "m.nfparams"}

    def fill(self, k):
        scope = static.global_scope()
        for v in self.vars:
            scope.set(v.name, np.full(v.shape, k, v.dtype))

    def save(self, k):
        self.fill(k)
        if self.kind == "checkpoint":
            static.save(self.main, self.prefix)
        else:
            static.save_inference_model(self.prefix, [self.x], [self.pred], self.exe,
                                        program=self.main)

    def loaded_value(self):
        """The one value every saved variable holds, after a load into a fresh scope."""
        with static.scope_guard(static.Scope()):
            if self.kind == "checkpoint":
                static.load(self.main, self.prefix)
                names = [v.name for v in self.vars]
            else:
                program, _, _ = static.load_inference_model(self.prefix, self.exe)
                names = [v.name for v in program.list_vars() if v.persistable]
            scope = static.global_scope()
            values = {float(x) for n in names for x in np.unique(scope.get(n))}
        if len(values) != 1:
            fail(f"{self.kind}: a load mixes saves: values {sorted(values)}")
        return values.pop()

    def leftovers(self):
        return sorted(set(os.listdir(self.dir)) - self.files)


def fail(msg):
    print(msg, file=sys.stderr, flush=True)
    sys.exit(1)


def read_log(path):
    started = done = None
    if not os.path.exists(path):           # killed before it opened its log
        return started, done
    with open(path) as f:
        for line in f:
            tag, k = line.split()
            if tag == "S":
                started = int(k)
            elif tag == "D":
                done = int(k)
    return started, done


def worker(case, log_path, k0, trap=None):
    """In the forked child: save k0, k0+1, ... until killed; with a `trap` (which kills it
    at one chosen call), one save only, then exit 0 if the trap never fired."""
    try:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        if trap is not None:
            trap()
        k = k0
        while True:
            os.write(fd, f"S {k}\n".encode())
            case.save(k)
            os.write(fd, f"D {k}\n".encode())
            if trap is not None:
                os._exit(0)
            k += 1
    finally:
        os._exit(3)          # never return into the driver's code


def spawn(case, log_path, k0, trap=None):
    if os.path.exists(log_path):
        os.unlink(log_path)
    pid = os.fork()
    if pid == 0:
        worker(case, log_path, k0, trap)
    return pid


def check_after_kill(case, log_path, k_committed, stats):
    started, done = read_log(log_path)
    lo = done if done is not None else k_committed
    hi = started if started is not None else k_committed
    k = case.loaded_value()
    if not lo <= k <= hi:
        fail(f"{case.kind}: after a kill the load saw save {k}, expected one of {lo}..{hi}")
    stats["old" if k == lo else "new"] += 1
    left = case.leftovers()
    stats["kills_with_leftovers"] += bool(left)
    # the next save to the same place removes what the killed one left
    nxt = max(hi, k) + 1
    case.save(nxt)
    if case.leftovers():
        fail(f"{case.kind}: leftovers after the next save: {case.leftovers()}")
    if case.loaded_value() != nxt:
        fail(f"{case.kind}: the save after a kill did not become visible")
    return nxt


def run_random(directory, kills, seed):
    rng = random.Random(seed)
    stats = {"kills": 0, "old": 0, "new": 0, "kills_with_leftovers": 0}
    for kind in ("checkpoint", "inference"):
        d = os.path.join(directory, kind)
        os.makedirs(d)
        case = Case(kind, d, width=384)
        t0 = time.perf_counter()
        case.save(0)
        save_s = time.perf_counter() - t0
        k = 0
        for _ in range(kills // 2 if kind == "inference" else kills - kills // 2):
            log_path = os.path.join(directory, "log")
            pid = spawn(case, log_path, k + 1)
            time.sleep(rng.uniform(0, 3 * save_s))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            stats["kills"] += 1
            k = check_after_kill(case, log_path, k, stats)
    stats["save_ms"] = round(save_s * 1e3, 1)
    print(json.dumps(stats), flush=True)


def _trap(op, n, after):
    """Make os.<op> SIGKILL this process at its n-th call, before or after doing it."""
    real = getattr(os, op)
    calls = [0]

    def trapped(*a, **kw):
        calls[0] += 1
        if calls[0] == n and not after:
            os.kill(os.getpid(), signal.SIGKILL)
        out = real(*a, **kw)
        if calls[0] == n and after:
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    return lambda: setattr(os, op, trapped)


def run_points(directory):
    stats = {"kills": 0, "old": 0, "new": 0, "kills_with_leftovers": 0, "ran_through": 0}
    for kind in ("checkpoint", "inference"):
        d = os.path.join(directory, kind)
        os.makedirs(d)
        case = Case(kind, d, width=16)
        case.save(0)
        k = 0
        for op in ("fsync", "replace", "unlink"):
            for n in range(1, 10):
                for after in (False, True):
                    log_path = os.path.join(directory, "log")
                    pid = spawn(case, log_path, k + 1, _trap(op, n, after))
                    _, status = os.waitpid(pid, 0)      # the driver's own timeout bounds it
                    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                        stats["kills"] += 1
                    elif os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                        stats["ran_through"] += 1       # n is beyond that call's count
                    else:
                        fail(f"{kind}: the worker failed (status {status})")
                    k = check_after_kill(case, log_path, k, stats)
    print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    mode, directory = sys.argv[1], sys.argv[2]
    if mode == "random":
        run_random(directory, int(sys.argv[3]), int(sys.argv[4]))
    else:
        run_points(directory)
