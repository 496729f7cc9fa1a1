"""Ctrl-C during a save, and loads beside a paused writer (issue 17 items 1 and 2).

Guarantees under test (docs/failure-behaviour.md): a save interrupted by Ctrl-C at any
instruction where Python can deliver it (KeyboardInterrupt raised deterministically by a
trace hook at each such point in turn, and before and after every system call) leaves
the previous or the new checkpoint loadable, whole, and the next save leaves nothing
else behind; a load never waits for a writer, even one stopped with SIGSTOP while
it holds the directory's lock, and concurrent saves still run one after another.
"""
import dis
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.persistence import atomic as _atomic
from numbaflow.utils import atomic_file as _atomic_file
from child import script_command, script_env
from locations import TESTS

# the writer subprocesses import this file and the shared modules
HERE = os.pathsep.join([str(TESTS), os.path.dirname(os.path.abspath(__file__))])

pytestmark = pytest.mark.usefixtures("fresh_graph_state")
TRACED = {os.path.abspath(_atomic.__file__), os.path.abspath(_atomic_file.__file__)}
FILES = {"checkpoint": ["m.pdparams", "m.pdopt"], "inference": ["m.nfmodel", "m.nfparams"]}


class Case:
    """Saves of one kind where save k fills every saved variable with the value k."""

    def __init__(self, kind, directory):
        self.kind, self.dir, self.prefix = kind, directory, os.path.join(directory, "m")
        self.main, startup = static.Program(), static.Program()
        with static.program_guard(self.main, startup):
            self.x = static.data("x", [None, 3], "float32")
            self.pred = static.nn.fc(self.x, 2)
            paddle.optimizer.Adam(0.01).minimize(paddle.mean(self.pred))
        self.exe = static.Executor(paddle.CPUPlace())
        self.vars = [v for v in self.main.list_vars() if v.persistable]

    def save(self, k):
        for v in self.vars:
            static.global_scope().set(v.name, np.full(v.shape, k, v.dtype))
        if self.kind == "checkpoint":
            static.save(self.main, self.prefix)
        else:
            static.save_inference_model(self.prefix, [self.x], [self.pred], self.exe,
                                        program=self.main)

    def loaded(self):
        """The one value every variable holds after a load into a fresh scope."""
        with static.scope_guard(static.Scope()):
            if self.kind == "checkpoint":
                static.load(self.main, self.prefix)
                names = [v.name for v in self.vars]
            else:
                program, _, _ = static.load_inference_model(self.prefix, self.exe)
                names = [v.name for v in program.list_vars() if v.persistable]
            values = {float(x) for n in names for x in np.unique(static.global_scope().get(n))}
        assert len(values) == 1, f"a load mixes saves: {sorted(values)}"
        return values.pop()

    def only_final_files(self):
        return sorted(os.listdir(self.dir)) == sorted(FILES[self.kind])


# CPython raises KeyboardInterrupt (its SIGINT handler's exception) only where it checks
# for pending signals: when a frame starts or resumes (RESUME), right after a call returns
# (CALL), and at a loop's back edge. The hook raises at each such instruction in turn.
_DELIVERY_AFTER = {"CALL", "CALL_FUNCTION_EX", "JUMP_BACKWARD"}


def interrupt_at(n):
    """A sys.settrace hook that raises KeyboardInterrupt at the n-th point where CPython
    can deliver a signal, executed in the commit protocol's files; `fired` names the
    function where it did."""
    seen, fired, previous, names = [0], [], {}, {}

    def opname(code, offset):
        if code not in names:
            names[code] = {i.offset: i.opname for i in dis.get_instructions(code)}
        return names[code].get(offset)

    def local(frame, event, arg):
        if event == "opcode":
            op = opname(frame.f_code, frame.f_lasti)
            before = previous.get(frame)
            previous[frame] = op
            if op == "RESUME" or before in _DELIVERY_AFTER:
                seen[0] += 1
                if seen[0] == n:
                    fired.append(frame.f_code.co_name)
                    raise KeyboardInterrupt
        elif event == "return":
            previous.pop(frame, None)
        return local

    def hook(frame, event, arg):
        if os.path.abspath(frame.f_code.co_filename) in TRACED:
            frame.f_trace_opcodes = True
            return local
        return None
    return hook, fired


def interrupted_save(case, k, hook):
    sys.settrace(hook)
    try:
        case.save(k)
        return False
    except KeyboardInterrupt:
        return True
    finally:
        sys.settrace(None)


def check_after(case, old, new):
    """The load sees one whole save, old or new; the next save leaves only its files."""
    got = case.loaded()
    assert got in (old, new), (got, old, new)
    case.save(new + 1)
    assert case.only_final_files(), os.listdir(case.dir)
    assert case.loaded() == new + 1
    return got


def sweep(case, committed_before):
    """Interrupt the n-th signal delivery point of a save, n = 1, 2, ... until one runs through.
    `committed_before`: each interrupted save starts from a committed-but-unfinished one
    (its journal and temp files present), so the roll-forward is swept too."""
    k, n, outcome = 0, 0, {"old": 0, "new": 0}
    case.save(k)
    while True:
        n += 1
        if committed_before:
            k += 1
            with interrupt_after_commit_rename():
                with pytest.raises(KeyboardInterrupt):
                    case.save(k)
            assert not case.only_final_files()
        hook, fired = interrupt_at(n)
        if not interrupted_save(case, k + 1, hook):
            assert not fired and case.loaded() == k + 1
            return n, outcome
        outcome["old" if check_after(case, k, k + 1) == k else "new"] += 1
        k += 2


class interrupt_after_commit_rename:
    """Within `with`: os.replace raises KeyboardInterrupt right after it renamed a journal
    into place (the instant of issue 17: the save is committed, its frame does not know)."""

    def __init__(self):
        self.real = os.replace

    def __enter__(self):
        real = self.real

        def replace(src, dst, **kw):
            real(src, dst, **kw)
            if str(dst).endswith(".commit"):
                raise KeyboardInterrupt
        os.replace = replace
        return self

    def __exit__(self, *exc):
        os.replace = self.real


# ----------------------------------------------------------------------------- the reproduction
@pytest.mark.parametrize("kind", ["checkpoint", "inference"])
def test_ctrl_c_just_after_the_commit_rename_keeps_the_committed_save(tmp_path, kind):
    case = Case(kind, str(tmp_path))
    case.save(1)
    with interrupt_after_commit_rename():
        with pytest.raises(KeyboardInterrupt):
            case.save(2)
    assert case.loaded() == 2             # was: FileFormatError "... are from different saves"
    case.save(3)
    assert case.only_final_files() and case.loaded() == 3


# ----------------------------------------------------------------------------- the sweeps
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["checkpoint", "inference"])
@pytest.mark.parametrize("committed_before", [False, True])
def test_ctrl_c_at_every_point_of_a_save_where_python_can_deliver_it(tmp_path, kind,
                                                                      committed_before):
    case = Case(kind, str(tmp_path))
    points, outcome = sweep(case, committed_before=committed_before)
    assert points > 100                    # the hook really walked through the protocol
    assert outcome["old"] > 0 and outcome["new"] > 0


def real_sigint():
    """A real SIGINT to this process: Python's handler raises KeyboardInterrupt at the
    next point where it checks for signals (here: right after os.kill returns)."""
    os.kill(os.getpid(), signal.SIGINT)


def raise_interrupt():
    raise KeyboardInterrupt


@pytest.mark.parametrize("interrupt", [raise_interrupt, real_sigint], ids=["raise", "SIGINT"])
@pytest.mark.parametrize("op", ["open", "fsync", "replace", "unlink", "close"])
def test_ctrl_c_before_and_after_every_system_call_of_a_save(tmp_path, monkeypatch, op,
                                                            interrupt):
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        syscall_sweep(Case("checkpoint", str(tmp_path)), monkeypatch, op, interrupt)
    finally:
        signal.signal(signal.SIGINT, old_handler)


def syscall_sweep(case, monkeypatch, op, interrupt):
    """Interrupt before / after the n-th call of os.<op> of a save, n = 1, 2, ..."""
    real = getattr(os, op)
    k = 0
    case.save(k)
    # the lock's fd is closed in a `finally` with no signal delivery point before the call
    # (CPython checks for signals after a call returns), so only "after" is real for close
    whens = (True,) if op == "close" else (False, True)
    for n in range(1, 40):
        for after in whens:
            calls = [0]

            def trapped(*a, **kw):
                calls[0] += 1
                if calls[0] == n and not after:
                    interrupt()
                out = real(*a, **kw)
                if calls[0] == n and after:
                    interrupt()
                return out
            monkeypatch.setattr(os, op, trapped)
            try:
                case.save(k + 1)
                ran_through = True
            except KeyboardInterrupt:
                ran_through = False
            monkeypatch.setattr(os, op, real)
            if ran_through:
                assert calls[0] < n and case.loaded() == k + 1
                assert n > 1            # the save made this call at least once
                return
            check_after(case, k, k + 1)
            k += 2
    raise AssertionError(f"a save made more than 39 calls of os.{op}")


# ----------------------------------------------------------------------------- paused writers
def wait_stopped(proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/stat", encoding="utf-8") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the writer did not reach its stop")


def in_thread(fn, timeout):
    """fn()'s result, or None if it is still running after `timeout` s (left running)."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout)
    return (out or [None])[0], t


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("where, expected", [("before-commit", 1), ("after-commit", 2)])
def test_load_does_not_wait_for_a_stopped_writer_and_saves_still_serialise(tmp_path, where,
                                                                            expected):
    case = Case("checkpoint", str(tmp_path))
    case.save(1)
    writer = subprocess.Popen(script_command("paused_writer", tmp_path, where),
                              env=script_env(TESTS_DIR=HERE), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        wait_stopped(writer)
        # the writer holds the directory's lock, stopped: a load reads the last committed save
        got, t = in_thread(case.loaded, timeout=30)
        assert not t.is_alive(), "static.load waited for the stopped writer"
        assert got == expected
        # a second saver waits for the first (saves are serialised) ...
        _, saver = in_thread(lambda: case.save(3), timeout=1.0)
        assert saver.is_alive(), "a save did not wait for the stopped save"
        os.kill(writer.pid, signal.SIGCONT)
        assert writer.wait(60) == 0, writer.communicate()[0]
        saver.join(60)
        assert not saver.is_alive()
        # ... and goes after it: its save is the one visible, whole
        assert case.loaded() == 3 and case.only_final_files()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def test_a_load_ignores_a_writers_lock(tmp_path):
    """The fast form of the test above: another open file description of the directory
    holds the writers' (exclusive) lock, as a stopped save would; a load does not wait."""
    fcntl = pytest.importorskip("fcntl")
    case = Case("checkpoint", str(tmp_path))
    case.save(1)
    fd = os.open(str(tmp_path), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        got, t = in_thread(case.loaded, timeout=30)
        assert not t.is_alive(), "static.load waited for the writers' lock"
        assert got == 1
    finally:
        os.close(fd)


@pytest.mark.slow
def test_lock_free_loads_beside_a_writer_saving_nonstop_see_whole_saves(tmp_path):
    case = Case("checkpoint", str(tmp_path))
    case.save(1)
    writer = subprocess.Popen(script_command("paused_writer", tmp_path, "loop"),
                              env=script_env(TESTS_DIR=HERE), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        seen = [case.loaded()]       # each load: one value everywhere (Case.loaded checks)
        deadline = time.monotonic() + 120
        while len(set(seen)) < 20 and time.monotonic() < deadline:
            assert writer.poll() is None, writer.communicate()[0]
            seen.append(case.loaded())
        assert len(set(seen)) >= 20, "the writer did not save often enough to test"
        assert seen == sorted(seen)                # never an older save after a newer one
    finally:
        writer.kill()
        writer.wait()
