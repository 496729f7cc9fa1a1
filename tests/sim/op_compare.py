"""What the op scripts of tests/sim/ share: run an op on the CPU and on the simulated GPU
and compare every output slot, forward and gradient, over op-table rows and extra shapes.
Each comparison counts; `finish` exits non-zero on a failure or when fewer comparisons ran
than the script's floor (a row skipped silently is a failure too)."""
import sys

import numpy as np
from op_rows import load_all

from numbaflow.kernels import all_op_types, get_op_def, run_op
from numbaflow.testing.op_test import grad_inputs, make_inputs


class OpComparison:
    """CPU against simulated GPU, `f64_tol` the tolerance of float64 outputs (float32: 1e-5)."""

    def __init__(self, f64_tol=1e-12):
        self.f64_tol = f64_tol
        self.types = set(all_op_types())
        self.rng = np.random.default_rng(0)
        self.failures, self.checked = [], 0

    def uniform(self, *shape):
        return self.rng.uniform(-1, 1, shape)

    def compare(self, label, op, arrays, attrs):
        """Run `op` on both devices; record every slot that differs. The CPU run must
        succeed (its error ends the script); a GPU error is a recorded failure. Returns the
        CPU outputs."""
        cpu = run_op(op, arrays, attrs)
        try:
            gpu = run_op(op, arrays, attrs, device="gpu")
        except Exception as e:
            self.failures.append(f"{label}: {type(e).__name__}: {str(e)[-300:]}")
            return cpu
        for slot, want in cpu.items():
            pairs = zip(want, gpu[slot]) if isinstance(want, list) else [(want, gpu[slot])]
            for k, (w, g) in enumerate(pairs):
                tol = 1e-5 if np.dtype(getattr(w, "dtype", "f8")) == np.float32 else self.f64_tol
                if g.shape != w.shape or g.dtype != w.dtype or \
                        not np.allclose(g, w, rtol=tol, atol=tol):
                    self.failures.append(f"{label} {slot}[{k}]: {g} vs {w}")
        self.checked += 1
        return cpu

    def compare_grad(self, label, op, arrays, fwd_out, attrs):
        """Compare `<op>_grad` too, when it exists and has a GPU kernel."""
        grad_op = op + "_grad"
        if grad_op not in self.types or get_op_def(grad_op).gpu is None:
            return
        ins = grad_inputs(get_op_def(grad_op), arrays, fwd_out, self.rng)
        if ins:
            self.compare(label + " grad", grad_op, ins, attrs)

    def rows(self, keep, with_grad=lambda arrays: True, full_attrs=True):
        """Every op-table row `keep(case)` accepts, each dtype, forward and (where
        `with_grad(arrays)`) gradient; the gradient gets the row's attributes with the
        op's defaults filled in, or (`full_attrs=False`) the row's own."""
        for case in load_all():
            if not keep(case):
                continue
            for dtype in case.dtypes:
                arrays = make_inputs(case, dtype)
                label = f"{case.id}-{dtype}"
                out = self.compare(label, case.op, arrays, case.attrs)
                if with_grad(arrays):
                    attrs = case.full_attrs() if full_attrs else case.attrs
                    self.compare_grad(label, case.op, arrays, out, attrs)

    def finish(self, at_least):
        """Print the count and the failures; exit 1 on a failure or under `at_least`."""
        print("checked", self.checked)
        print("\n".join(self.failures))
        sys.exit(1 if self.failures or self.checked < at_least else 0)
