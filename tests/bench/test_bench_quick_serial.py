"""--quick runs the hand-written prange baselines serial (issue 32: a cold --quick run spent
~15 s of CPU compiling their parallel variants), the full bench runs them parallel; the
serial twin computes what the parallel loop does and has numba cache files of its own."""
import numpy as np

from numbaflow.bench import baselines
from numbaflow.bench.kernel_cases import serial_note
from numbaflow.bench.cases import Config, quick_config

LOOPS = ["bias_relu_loop", "depthwise3x3_relu_fwd", "depthwise3x3_relu_bwd",
         "relu_depthwise3x3_fwd", "relu_depthwise3x3_bwd"]


def test_each_loop_is_parallel_with_a_serial_twin_of_its_own_name():
    for name in LOOPS:
        loop = getattr(baselines, name)
        assert loop.targetoptions.get("parallel") is True, name
        assert not loop.serial.targetoptions.get("parallel"), name
        # numba names a function's cache files by its qualified name; its index key does
        # not hold `parallel`, so a shared name would hand one variant for the other
        assert loop.serial.py_func.__qualname__ == name + "_serial"
        assert loop.serial.py_func.__code__ is loop.py_func.__code__


def test_serial_twin_computes_the_relu_of_x_plus_b():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7), dtype=np.float32)
    b = rng.standard_normal(7, dtype=np.float32)
    out = np.empty_like(x)
    baselines.bias_relu_loop.serial(x, b, out)
    np.testing.assert_allclose(out, np.maximum(x + b, 0), rtol=1e-6)


class _Loop:
    """Stands for a prange loop: records which variant a step called."""

    def __init__(self, calls, name):
        self.calls, self.name = calls, name
        self.serial = lambda *a: calls.append(name + " serial")

    def __call__(self, *a):
        self.calls.append(self.name + " parallel")


def test_steps_call_the_serial_twins_only_when_asked(monkeypatch):
    calls = []
    for name in LOOPS[1:]:
        monkeypatch.setattr(baselines, name, _Loop(calls, name))
    arrays = [None] * 6
    baselines.depthwise_relu_step(*arrays, serial=True)
    baselines.relu_depthwise_step(*arrays, serial=True)
    assert calls and all(c.endswith(" serial") for c in calls), calls
    calls.clear()
    baselines.depthwise_relu_step(*arrays)
    baselines.relu_depthwise_step(*arrays)
    assert len(calls) == 4 and all(c.endswith(" parallel") for c in calls), calls


def test_quick_rows_say_their_loops_ran_serial():
    assert "serial" in serial_note(quick_config())
    assert serial_note(Config()) == ""
