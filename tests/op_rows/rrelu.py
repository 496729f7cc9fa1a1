"""Table rows for rrelu: the deterministic cases (at test the slope is (lower + upper) / 2;
in training with lower == upper every draw is that one value), so the numpy reference,
the finite-difference gradient and the simulator compare exactly. The random slopes are
checked by statistics in tests/nn/test_rrelu.py."""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row


def rrelu_ref(ins, a):
    x = f64(ins["X"])
    if not a["is_test"]:
        assert a["lower"] == a["upper"], "random slopes have no reference"
    noise = np.where(x >= 0, 1.0, (a["lower"] + a["upper"]) / 2).astype(ins["X"].dtype)
    return {"Out": (x * noise).astype(ins["X"].dtype), "Noise": noise}


for _id, _attrs in [("test", {"lower": 0.1, "upper": 0.3, "is_test": True}),
                    ("test-defaults", {"is_test": True}),
                    ("train-fixed-slope", {"lower": 0.25, "upper": 0.25, "is_test": False})]:
    row("rrelu", {"X": uniform((3, 4, 2))}, rrelu_ref, f"rrelu-{_id}", attrs=_attrs,
        outputs_for_grad=("Out",))
