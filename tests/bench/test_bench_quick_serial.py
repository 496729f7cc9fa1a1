"""--quick runs the hand-written prange baselines serial (issue 32: a cold --quick run spent
~15 s of CPU compiling their parallel variants), the full bench runs them parallel; the
serial twin computes what the parallel loop does and has numba cache files of its own. The
depthwise rows' --quick baseline is the same padded planes in numpy (no loop to compile)."""
import numpy as np
import pytest

from numbaflow.bench import baselines
from numbaflow.bench.kernel_cases import depthwise_baseline, serial_note
from numbaflow.bench.cases import Config, quick_config

LOOPS = ["bias_relu_loop"]       # the depthwise rows' --quick baseline is numpy (below)


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


def _finite_difference_reference(x, k, g, relu_first, eps=1e-6):
    """out by the definition (float64 loops), dx and dw by central differences of
    sum(out * g)."""
    x, k, g = (a.astype(np.float64) for a in (x, k, g))

    def forward(x, k):
        xp = np.pad(np.maximum(x, 0) if relu_first else x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros_like(x)
        for n, c, h, w in np.ndindex(x.shape):
            out[n, c, h, w] = (k[c, 0] * xp[n, c, h:h + 3, w:w + 3]).sum()
        return out if relu_first else np.maximum(out, 0)

    def grad(a, loss):
        d = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            a[i] += eps
            up = loss()
            a[i] -= 2 * eps
            d[i] = (up - loss()) / (2 * eps)
            a[i] += eps
        return d

    def loss():
        return (forward(x, k) * g).sum()
    return forward(x, k), grad(x, loss), grad(k, loss)


@pytest.mark.parametrize("relu_first", [True, False])
def test_quick_depthwise_baseline_is_numpy_and_right(relu_first):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 6), dtype=np.float32)
    k = rng.standard_normal((3, 1, 3, 3), dtype=np.float32)
    g = rng.standard_normal(x.shape, dtype=np.float32)
    label, step, out, dx, dw = depthwise_baseline(quick_config(), x, k, g, relu_first)
    assert label == "numpy padded planes"
    step()
    for got, want in zip((out, dx, dw), _finite_difference_reference(x, k, g, relu_first)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # the full bench times the numba loops (built, not called here: no compile)
    assert depthwise_baseline(Config(), x, k, g, relu_first)[0] == "numba padded-plane loops"


def test_quick_rows_say_their_loops_ran_serial():
    assert "serial" in serial_note(quick_config())
    assert serial_note(Config()) == ""
