"""Every writer of numbaflow fails atomically (issue 30, item 3): each writer is run once
to count its system calls (open, write, fsync, rename, truncate), then once per call with
that call failing as on a full disk (ENOSPC). After each failure the previous file must be
intact (byte for byte; for a TensorBoard event file: the records logged before) and no
temporary file may be left. Writers: paddle.onnx.export, static.draw and the graphviz dump
(DOT), static.save, save_inference_model, ScalarLogger, and the shared atomic_write itself."""
import builtins
import errno
import os

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.utils import atomic_file, metrics

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


class SyscallFault:
    """Counts (and, from `fail_at`, fails once) the calls that write files."""

    def __init__(self, monkeypatch, fail_at=None):
        self.count, self.fail_at, self.failed = 0, fail_at, False
        for name in ("open", "fsync", "replace", "rename", "ftruncate", "write"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self.wrap(real, name))
        monkeypatch.setattr(metrics, "_write", os.write)
        real_fdopen = os.fdopen
        monkeypatch.setattr(os, "fdopen", lambda *a, **k: self.file(real_fdopen(*a, **k)))
        real_open = builtins.open

        def open_(file, mode="r", *a, **k):
            f = real_open(file, mode, *a, **k)
            return self.file(f) if any(c in mode for c in "wax+") else f
        monkeypatch.setattr(builtins, "open", open_)

    def point(self, name):
        self.count += 1
        if self.fail_at is not None and self.count == self.fail_at:
            self.failed = True
            raise OSError(errno.ENOSPC, f"No space left on device (injected at {name})")

    def wrap(self, real, name):
        def call(*a, **k):
            if name != "open" or a and isinstance(a[1], int) and a[1] & (os.O_WRONLY | os.O_RDWR):
                self.point(name)
            return real(*a, **k)
        return call

    def file(self, f):
        if "w" not in getattr(f, "mode", "w") and "a" not in getattr(f, "mode", "") \
                and "+" not in getattr(f, "mode", ""):
            return f
        fault, real_write = self, f.write

        def write(data):
            fault.point("write")
            return real_write(data)
        try:
            f.write = write
        except AttributeError:
            pass
        return f


def build():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        out = static.nn.fc(x, 2)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return exe, x, out, main


def snapshot(d):
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))
            if os.path.isfile(os.path.join(d, n))}


def sweep(monkeypatch, tmp_path, write, check_intact=None):
    """Run `write` once to count its calls, then fail each call in turn."""
    d = tmp_path / "out"
    d.mkdir()
    write(d, 0)                                   # the previous file(s)
    with monkeypatch.context() as m:
        counter = SyscallFault(m)
        write(d, 1)
    total = counter.count
    assert total >= 3, total
    before = snapshot(d)
    for k in range(1, total + 1):
        with monkeypatch.context() as m:
            fault = SyscallFault(m, fail_at=k)
            try:
                write(d, 2)
            except OSError as e:
                assert e.errno == errno.ENOSPC
        after = snapshot(d)
        if check_intact is not None:
            check_intact(d, before, after, fault)
        elif fault.failed:
            # either the old files or, when the failure came after the rename, the new
            # ones: never a mix, never a temp file
            assert set(after) == set(before), (k, sorted(after))
        write(d, 1)                               # restore the "previous" state
        before = snapshot(d)
    return total


def test_atomic_write_sweep(monkeypatch, tmp_path):
    def write(d, k):
        atomic_file.atomic_write(str(d / "f.txt"), f"version {k}" * 100)
    assert sweep(monkeypatch, tmp_path, write) >= 4


def test_onnx_export_sweep(monkeypatch, tmp_path):
    onnx = pytest.importorskip("onnx")
    exe, x, out, main = build()
    w = next(p for p in main.all_parameters() if len(p.shape) == 2)

    def write(d, k):
        static.global_scope().set(w.name, np.full(w.shape, k, "float32"))
        paddle.onnx.export(main, str(d / "net"), input_spec=[x],
                           output_spec=[out])
    (tmp_path / "ref").mkdir()
    write(tmp_path / "ref", 2)
    new = (tmp_path / "ref" / "net.onnx").read_bytes()

    def intact(d, before, after, fault):
        assert set(after) == {"net.onnx"}, sorted(after)
        onnx.load(str(d / "net.onnx"))             # loads: never torn
        assert after["net.onnx"] in (before["net.onnx"], new)
    sweep(monkeypatch, tmp_path, write, intact)


def test_draw_dot_sweep(monkeypatch, tmp_path):
    exe, x, out, main = build()

    def write(d, k):
        static.draw(main, str(d / "g.dot"))
        if k == 0:
            (d / "g.dot").write_text("previous")
    sweep(monkeypatch, tmp_path, write)


def test_graphviz_dump_sweep(monkeypatch, tmp_path):
    # BuildStrategy.debug_graphviz_path's writer (it wrote in place before)
    from numbaflow.graph.graphviz import write_dot
    exe, x, out, main = build()

    def write(d, k):
        write_dot(main, str(d / "g.dot"))
        if k == 0:
            (d / "g.dot").write_text("previous")
    sweep(monkeypatch, tmp_path, write)


@pytest.mark.parametrize("kind", ["save", "inference"])
def test_checkpoint_and_model_save_sweep(monkeypatch, tmp_path, kind):
    exe, x, out, main = build()
    def write(d, k):
        for p in main.all_parameters():
            static.global_scope().set(p.name, np.full(p.shape, k, "float32"))
        if kind == "save":
            static.save(main, str(d / "m"))
        else:
            static.save_inference_model(str(d / "m"), [x], [out], exe, program=main)

    def intact(d, before, after, fault):
        # one whole save: the old files, or (failure after the commit) the new ones
        assert not [n for n in after if n.endswith(".tmp")] or \
            any(n.endswith(".commit") for n in after), sorted(after)
        if kind == "save":
            state = static.load_program_state(str(d / "m"))
        else:
            exe2 = static.Executor(paddle.CPUPlace())
            static.load_inference_model(str(d / "m"), exe2)
            state = {p.name: static.global_scope().get(p.name) for p in main.all_parameters()}
        values = {float(np.asarray(v).reshape(-1)[0]) for n, v in state.items()
                  if n in {p.name for p in main.all_parameters()}}
        assert values in ({1.0}, {2.0}), values
    sweep(monkeypatch, tmp_path, write, intact)


def test_scalar_logger_sweep(monkeypatch, tmp_path):
    acc = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    from numbaflow.utils import ScalarLogger

    def read(d):
        a = acc.EventAccumulator(str(d))
        a.Reload()
        return [(e.step, e.value) for e in a.Scalars("loss")] if "loss" in \
            a.Tags()["scalars"] else []
    with monkeypatch.context() as m:
        counter = SyscallFault(m)
        with ScalarLogger(tmp_path / "count", flush_secs=0) as logger:
            for step in range(3):
                logger.add_scalar("loss", step, step)
    for k in range(1, counter.count + 1):
        d = tmp_path / f"run{k}"
        logger = ScalarLogger(d, flush_secs=0)
        logger.add_scalar("loss", -1.0, 0)
        with monkeypatch.context() as m:
            SyscallFault(m, fail_at=k)
            for step in range(1, 4):
                logger.add_scalar("loss", step, step)     # never raises
            logger.close()
        got = read(d)
        # the record before the failure is there, then a whole-record prefix of the rest
        assert got[:1] == [(0, -1.0)] or k == 1 and got == [], (k, got)
        assert got[1:] == [(s, float(s)) for s in range(1, len(got))], (k, got)
        assert [n for n in os.listdir(d)] and all("tfevents" in n for n in os.listdir(d))
