"""Cold start: what a plan's first run hands the compile helper (executor/precompile.py)
includes the kernels run on several threads (workshare.bind_workers), conv2d's workers the
largest of them (before, only the serial calls were offered, so a cold ResNet step compiled
its conv workers in the main process alone)."""
import functools
import random

import numba
import numpy as np

from numbaflow.executor import precompile
from numbaflow.kernels import workshare
from numbaflow.kernels.codegen import cache

SRC = '''from numba import njit
from numbaflow.kernels.workshare import claim
@njit(nogil=True, cache=True)
def worker(x, k, counter):
    i = claim(counter)
    while i < x.shape[0]:
        x[i] = x[i] * k + {salt}
        i = claim(counter)
'''


def test_cold_kernels_lists_a_threaded_kernel_by_its_worker():
    salt = random.randrange(1 << 30)      # a kernel no disk cache holds
    worker = cache.load_source(SRC.format(salt=salt)).worker
    x = np.zeros(8)
    call = workshare.bind_workers(worker, (x, 2.0), [(), ()])
    serial = functools.partial(worker, x, 2.0, np.zeros(1, np.int64))
    cold = precompile.cold_kernels([call, serial])
    assert [d for d, _ in cold] == [worker]     # one kernel, one signature: listed once
    assert cold[0][1] == tuple(numba.typeof(a) for a in (x, 2.0, np.zeros(1, np.int64)))
    call()
    assert x.tolist() == [float(salt)] * 8
