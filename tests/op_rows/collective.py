"""Table rows for the collective ops (kernels/parallel/collective.py). Run by the op table on one
device, where the sum over devices and the broadcast from device 0 are X itself; their
multi-device meaning is tested with real replicas in test_data_parallel.py."""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import row

SHAPES = [(3, 4), (5,), (2, 1, 3)]


def identity(ins, a):
    return {"Out": [x.copy() for x in ins["X"]]}


row("c_allreduce_sum", {"X": [uniform(s) for s in SHAPES]}, identity)
row("c_broadcast", {"X": [uniform(s) for s in SHAPES]}, identity)
row("c_allreduce_start", {"X": [uniform(s) for s in SHAPES]},
    lambda ins, a: {"Token": np.zeros((), np.int64)}, dtypes=("float32",), id="c_allreduce_start")
row("c_allreduce_wait", {"X": [uniform(s) for s in SHAPES],
                         "Token": lambda rng: np.zeros((), np.int64)}, identity)
