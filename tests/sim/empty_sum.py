"""A sum over an empty axis on the simulated GPU is 0 (a mean NaN), not garbage: a wide C
(>= 32) takes the one-thread-per-output kernel, which read x[a, 0, c]. Prints `ok`. Run by
tests/faults/test_fault_edges.py."""
import numpy as np

from numbaflow.kernels import run_op

x = np.empty((2, 0, 40), np.float32)
for op, want in (("reduce_sum", 0.0), ("reduce_mean", np.nan)):
    got = run_op(op, {"X": x}, {"dim": [1]}, device="gpu")["Out"]
    assert got.shape == (2, 40), got.shape
    np.testing.assert_array_equal(got, np.full((2, 40), want, np.float32))
print("ok")
