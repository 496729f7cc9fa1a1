"""The health check (`run_check`, `python -m numbaflow`) and the logging rules."""
import ast
import io
import logging
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import numbaflow
from numbaflow import _health as health
from numbaflow.utils import log


def test_run_check_reports_and_trains():
    out = io.StringIO()
    assert numbaflow.utils.run_check(out=out) is True
    text = out.getvalue()
    import numba
    import numpy
    for needle in (f"numbaflow       {numbaflow.__version__}", f"numba {numba.__version__}",
                   f"numpy {numpy.__version__}", "llvmlite ", "mpi4py ", "kernel cache",
                   "mpiexec", "CUDA", "numba threads", "train on CPU    ok",
                   "numbaflow works (CPU)"):
        assert needle in text, (needle, text)


def numpy_sgd_losses(steps=30, lr=0.1):
    """The health check's training problem solved in numpy alone: y = x @ w_true, the same
    seeded data and start, full-batch SGD on the mean squared error."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4))
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]])
    w = rng.standard_normal((4, 1))
    losses = []
    for _ in range(steps):
        err = x @ w - y
        losses.append(float(np.mean(err ** 2)))
        w = w - lr * (2.0 / len(x)) * x.T @ err
    return losses


def test_run_check_final_loss_is_numpys():
    # the reported loss, not run_check's own verdict, is compared with numpy
    out = io.StringIO()
    assert numbaflow.utils.run_check(out=out) is True
    line = next(ln for ln in out.getvalue().splitlines() if ln.startswith("train on CPU"))
    reported = float(line.rsplit("final loss ", 1)[1].rstrip(")"))
    ref = numpy_sgd_losses()
    want = ref[-1]
    assert want < 0.01 * ref[0] and reported == pytest.approx(want, rel=0.02, abs=1e-6), (line, want)


def test_run_check_says_what_failed(monkeypatch):
    def broken(place):
        raise RuntimeError("kernel exploded")
    monkeypatch.setattr(health, "_train", broken)
    out = io.StringIO()
    assert numbaflow.utils.run_check(out=out) is False
    text = out.getvalue()
    assert "train on CPU    FAILED: RuntimeError: kernel exploded" in text
    assert "numbaflow FAILED on CPU" in text and "numbaflow works" not in text


@pytest.mark.slow
def test_python_m_numbaflow(tmp_path):
    env = dict(os.environ, NUMBAFLOW_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-m", "numbaflow"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "numbaflow works (CPU)" in r.stdout and str(tmp_path / "cache") in r.stdout


@pytest.mark.gpu
@pytest.mark.slow
def test_python_m_numbaflow_trains_on_the_simulated_gpu_too(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NUMBAFLOW_CACHE_DIR=str(tmp_path / "c"))
    r = subprocess.run([sys.executable, "-m", "numbaflow"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "train on GPU    ok" in r.stdout and "numbaflow works (CPU, GPU)" in r.stdout


@pytest.fixture
def clean_logger():
    logger = logging.getLogger("numbaflow")
    saved = logger.level, list(logger.handlers), logger.propagate
    yield logger
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]
    logger.propagate = saved[2]


def test_log_level_from_env(monkeypatch, clean_logger):
    monkeypatch.setenv("NUMBAFLOW_LOG_LEVEL", "debug")
    assert log.configure_from_env() == logging.DEBUG
    assert log.configure_from_env() == logging.DEBUG          # idempotent: one handler
    assert clean_logger.level == logging.DEBUG
    assert sum(isinstance(h, log._Handler) for h in clean_logger.handlers) == 1
    monkeypatch.setenv("NUMBAFLOW_LOG_LEVEL", "loud")
    with pytest.warns(RuntimeWarning, match="NUMBAFLOW_LOG_LEVEL='loud'"):
        assert log.configure_from_env() is None


@pytest.mark.slow
def test_log_level_reaches_stderr_in_a_new_process(tmp_path):
    code = "import logging, numbaflow; logging.getLogger('numbaflow.x').info('hello %d', 7)"
    env = dict(os.environ, NUMBAFLOW_LOG_LEVEL="INFO", NUMBAFLOW_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stderr.strip() == "numbaflow.x INFO: hello 7", r.stderr
    env.pop("NUMBAFLOW_LOG_LEVEL")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.stderr == ""                  # INFO is quiet unless asked for


def test_compile_notice_logs_once_only_when_long(caplog, clean_logger):
    # no timing bound that load can break: the quick block ends long before its 60 s, and
    # the slow one lasts until its line appears (at most 60 s)
    def notices():
        return [r.getMessage() for r in caplog.records if "compiling" in r.getMessage()]
    with caplog.at_level(logging.WARNING, logger="numbaflow"):
        with log.compile_notice("quick thing", after=60):
            pass
        with log.compile_notice("slow thing", after=0.01):
            deadline = time.monotonic() + 60
            while not notices() and time.monotonic() < deadline:
                time.sleep(0.01)
    lines = notices()
    assert len(lines) == 1 and "slow thing" in lines[0]
    assert numbaflow.config.kernel_cache_dir() in lines[0]


COMPILE_PAUSE = """
import time, numbaflow
from numbaflow.utils import log
with log.compile_notice("a test program", after=0.05):
    time.sleep(0.5)
"""


@pytest.mark.slow
@pytest.mark.parametrize("env, tag", [({}, ""), ({"PMI_SIZE": "2", "PMI_RANK": "1",
                                                   "NUMBAFLOW_SUPERVISE": "0"}, "[rank 1/2] ")])
def test_a_long_compile_is_shown_by_default(tmp_path, env, tag):
    # issue 18: a user's own script (no logging configured, no NUMBAFLOW_LOG_LEVEL) waited
    # 93 s on a first run with nothing on the screen; under mpiexec the ranks' lines are tagged
    env = dict(os.environ, NUMBAFLOW_CACHE_DIR=str(tmp_path), **env)
    env.pop("NUMBAFLOW_LOG_LEVEL", None)
    r = subprocess.run([sys.executable, "-c", COMPILE_PAUSE], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"{tag}numbaflow WARNING: compiling the kernels for a test "
                               "program: a one-off pause"), lines[0]
    assert "numbaflow:" not in lines[0]          # the logger's name once, not twice
    assert "python -m numbaflow warmup" in lines[0]


def test_default_handler_gives_way_to_the_applications_logging(clean_logger, capsys):
    # the application configured logging: its handlers show numbaflow's records, ours not
    root = logging.getLogger()
    handler = logging.StreamHandler()
    root.addHandler(handler)
    try:
        log.configure_from_env()
        logging.getLogger("numbaflow.x").warning("once")
    finally:
        root.removeHandler(handler)
    assert capsys.readouterr().err.count("once") == 1


def test_library_never_prints():
    """No print() call in the library outside the command-line tools (examples, bench,
    __main__, the health check, python -m numbaflow.gpu_check) and the functions whose job is
    printing, as in Paddle (Profiler.summary, paddle.summary, paddle.Model's progress
    bars and callbacks), except where the caller asked for it (`if ...verbose:`, as Paddle's
    LR schedulers' verbose=True)."""
    root = os.path.dirname(numbaflow.__file__)
    allowed = ("examples", "bench", "__main__.py", "_health.py", "gpu_check.py",
               os.path.join("profiler", "profiler.py"), "hapi")
    offenders = []
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            if not f.endswith(".py") or any(a in os.path.relpath(path, root) for a in allowed):
                continue
            tree = ast.parse(open(path, encoding="utf-8").read())
            asked = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                     and "verbose" in ast.unparse(node.test)
                     for stmt in node.body for n in ast.walk(stmt)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and id(node) not in asked and (
                        getattr(node.func, "id", None) == "print"
                        or ast.unparse(node.func) == "sys.stdout.write"):
                    offenders.append(f"{os.path.relpath(path, root)}:{node.lineno}")
    assert offenders == []


@pytest.mark.mpi
@pytest.mark.slow
def test_log_lines_are_rank_tagged_under_mpiexec():
    from mpirun import mpirun
    p, _ = mpirun(["tests/mpi/rank_log.py"], timeout=300)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stderr.splitlines()) == ["[rank 0/2] numbaflow.x WARNING: hello",
                                             "[rank 1/2] numbaflow.x WARNING: hello"], p.stderr
