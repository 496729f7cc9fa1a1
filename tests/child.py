"""`run_script`: run one of tests/scripts/*.py in a fresh Python process, for CPU checks that
need one (a cold kernel cache, two processes that must agree, a helper process). The
GPU-simulator scripts are run by simulator.run_sim, the MPI ones by mpirun.mpirun."""
import os
import subprocess
import sys

from locations import ROOT, TESTS

SCRIPTS = TESTS / "scripts"


def script_command(name, *args):
    """The command line of `python tests/scripts/<name>.py args...` (for a Popen)."""
    return [sys.executable, str(SCRIPTS / f"{name}.py"), *map(str, args)]


def script_env(**env):
    """This process's environment plus `env`, with this tree's numbaflow first on the path."""
    full = dict(os.environ, **env)
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full.get("PYTHONPATH")) if p)
    return full


def run_script(name, *args, timeout=300, check=True, **env):
    """`python tests/scripts/<name>.py args...` with `script_env(**env)`; returns the
    CompletedProcess (text stdout and stderr). With `check` a non-zero exit fails the test
    with the end of stderr."""
    r = subprocess.run(script_command(name, *args), cwd=ROOT, env=script_env(**env),
                       capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-3000:]}"
    return r
