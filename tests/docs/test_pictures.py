"""Pictures: static.draw renders a program's graph; train_digits --plot writes the curves."""
import re
import shutil
import sys
import textwrap
import time
import uuid

import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.examples import train_digits

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


def _program():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("X", [None, 3])
        loss = paddle.mean(static.nn.fc(x, size=2, activation="relu"))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main


def test_dot_text_has_every_op_var_and_edge(tmp_path):
    main = _program()
    path = static.draw(main, tmp_path / "g.dot")
    text = open(path, encoding="utf-8").read()
    block = main.global_block()
    labels = re.findall(r'label="([^"\\]*)', text)
    assert sorted(l for l in labels if l in {op.type for op in block.ops}) == \
        sorted(op.type for op in block.ops)
    for v in block.vars.values():
        assert f'label="{v.name}\\n' in text
    n_edges = sum(len(op.input_vars()) + len(op.output_vars()) for op in block.ops)
    assert text.count(" -> ") == n_edges


def test_draw_without_dot_writes_the_dot_text_and_says_how(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    main = _program()
    with pytest.warns(UserWarning, match=r"`dot` program was not found.*dot -Tsvg"):
        written = static.draw(main, str(tmp_path / "g.svg"))
    assert written == str(tmp_path / "g.svg.dot") and not (tmp_path / "g.svg").exists()
    assert open(written, encoding="utf-8").read() == open(static.draw(main, tmp_path / "same.dot"), encoding="utf-8").read()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("use_python_package", [True, False])
def test_draw_renders_svg_with_dot(tmp_path, monkeypatch, use_python_package):
    if not use_python_package:
        monkeypatch.setitem(sys.modules, "graphviz", None)     # the `dot` subprocess path
    elif pytest.importorskip("graphviz") is None:
        return
    main = _program()
    out = static.draw(main, tmp_path / "g.svg")
    svg = open(out, encoding="utf-8").read()
    assert out == str(tmp_path / "g.svg") and "<svg" in svg
    for op in main.global_block().ops:
        assert f">{op.type}<" in svg


def test_draw_of_a_compiled_program_is_its_programs(tmp_path):
    main = _program()
    a = static.draw(static.CompiledProgram(main), tmp_path / "c.dot")
    assert open(a, encoding="utf-8").read() == open(static.draw(main, tmp_path / "p.dot"), encoding="utf-8").read()


def test_draw_rejects_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="expected a static.Program"):
        static.draw("not a program", tmp_path / "g.dot")
    with pytest.raises(ValueError, match="extension"):
        static.draw(_program(), tmp_path / "noext")


def test_plot_history_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    history = [{"epoch": e, "loss": 1.0 / e, "train_acc": 0.5 + e / 10, "test_acc": 0.5 + e / 11}
               for e in range(1, 4)]
    out = train_digits.plot_history(history, str(tmp_path / "sub" / "curves.png"))
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_compile_clock_counts_each_compile_once():
    from numba import njit
    ns = {}
    exec(textwrap.dedent(f"""
        def inner(x):   # {uuid.uuid4().hex}: new code, so numba must compile it
            return x * 2.0
        def outer(x):
            return inner(x) + 1.0
    """), ns)
    ns["inner"] = njit(ns["inner"])
    outer = njit(ns["outer"])
    with train_digits.CompileClock() as clock:
        t0 = time.perf_counter()
        assert outer(1.5) == 4.0                  # compiles outer, and inner inside it
        wall = time.perf_counter() - t0
    assert 0 < clock.seconds <= wall              # nested compiles are not counted twice
    before = clock.seconds
    assert outer(2.5) == 6.0                      # compiled already: nothing more
    assert clock.seconds == before


@pytest.mark.slow
def test_train_digits_plot_option(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "curves.png"
    assert train_digits.main(["--epochs", "6", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert f"curves written to {png}" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
