"""The sync_batch_norm kernels' communicator path on the simulated GPU, with the stand-in
communicator of tests/kernels/test_sync_bn.py; without a communicator sync_batch_norm equals
batch_norm. Prints `gpu ok`. Run by that file."""
import numpy as np
from kernels import test_sync_bn as T


def run_gpu(op, arrays, attrs, comm):
    thunk, outs = T.bind_with_comm(op, arrays, attrs, comm, "gpu")
    thunk()
    assert not comm.others
    return {k: v[0].copy_to_host() for k, v in outs.items()}

for dtype in ("float32", "float64"):
    T.check_first_device(run_gpu, dtype)
# one device (no communicator): sync_batch_norm == batch_norm
x0, dy0, p, attrs, *_ = T.split_case("float32")
thunk, outs = T.bind_with_comm("sync_batch_norm", dict(p, X=x0), attrs, None, "gpu")
thunk()
want = T.run_op("batch_norm", dict(p, X=x0), attrs)
for slot, w in want.items():
    np.testing.assert_allclose(outs[slot][0].copy_to_host(), w, rtol=1e-5, atol=1e-6)
print("gpu ok")
