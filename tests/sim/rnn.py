"""The rnn op on a GPU runs its CPU kernel on host copies (host_staged): every rnn row of the
op table gives the same numbers on both devices; prints `checked N`. Run by
tests/kernels/test_rnn.py."""
import numpy as np
from op_rows import load_all

from numbaflow.kernels import run_op
from numbaflow.testing.op_test import make_inputs
n = 0
for case in load_all():
    if case.op != "rnn":
        continue
    arrays = make_inputs(case, "float64")
    cpu, gpu = (run_op("rnn", arrays, case.attrs, device=d) for d in ("cpu", "gpu"))
    rng = np.random.default_rng(0)
    gins = dict(arrays, Reserve=cpu["Reserve"])
    gins["Out@GRAD"] = rng.uniform(-1, 1, cpu["Out"].shape)
    gins["State@GRAD"] = [rng.uniform(-1, 1, s.shape) for s in cpu["State"]]
    gcpu, ggpu = (run_op("rnn_grad", gins, case.attrs, device=d) for d in ("cpu", "gpu"))
    for want, got in ((cpu, gpu), (gcpu, ggpu)):
        for slot, w in want.items():
            pairs = zip(w, got[slot]) if isinstance(w, list) else [(w, got[slot])]
            for a, b in pairs:
                assert np.allclose(a, b, rtol=1e-12, atol=1e-12), (case.id, slot)
    n += 1
print("checked", n)
