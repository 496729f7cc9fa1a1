"""paddle.Model.fit(save_dir=...) killed with SIGKILL between epochs, then resumed from
its newest checkpoint (model.load, fit the epochs left: Paddle's recipe), gives the same
losses and final weights as one uninterrupted run (Adam: its moments and step counts
come back from the .pdopt). The runs are subprocesses of tests/hapi_resume_driver.py."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from locations import ROOT, TESTS

DRIVER = os.path.join(str(TESTS), "hapi_resume_driver.py")


def _env():
    root = str(ROOT)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))


def _losses(path):
    with open(path, encoding="utf-8") as f:
        return [float(line) for line in f if line.strip()]


@pytest.mark.slow
def test_fit_killed_between_epochs_resumes_as_one_run(tmp_path):
    killed = subprocess.Popen([sys.executable, DRIVER, "killed", str(tmp_path)], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        full = subprocess.run([sys.executable, DRIVER, "full", str(tmp_path)], env=_env(),
                              capture_output=True, text=True, timeout=300)
        assert full.returncode == 0, full.stdout + full.stderr
        deadline = time.monotonic() + 300
        while not (tmp_path / "ready").exists():
            assert killed.poll() is None, killed.stdout.read()
            assert time.monotonic() < deadline, "the killed run never reached epoch 2"
            time.sleep(0.1)
        os.kill(killed.pid, signal.SIGKILL)
        assert killed.wait(timeout=60) == -signal.SIGKILL
    finally:
        if killed.poll() is None:
            killed.kill()
            killed.wait()
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["0.pdopt", "0.pdparams"]
    resume = subprocess.run([sys.executable, DRIVER, "resume", str(tmp_path)], env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert resume.returncode == 0, resume.stdout + resume.stderr
    want, got = np.load(tmp_path / "full.npz"), np.load(tmp_path / "resume.npz")
    assert int(got["done"]) == 0
    before_kill = _losses(tmp_path / "killed.txt")
    assert len(before_kill) == 3 and len(want["losses"]) == 9
    # the same numbers, bit for bit: the same kernels on the same values in the same order
    assert before_kill + list(got["losses"]) == list(want["losses"])
    names = [k for k in want.files if k != "losses"]
    assert names
    for name in names:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
