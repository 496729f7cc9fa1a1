"""The rnn op's large products (the input projection, the weight gradients and dx: one GEMM
over every time step each) split over 2 and 3 workers (kernels/math/gemm_cpu.py), forced
even at the table's tiny sizes: the outputs still equal the numpy reference and the
gradients central finite differences (the op table's rows for rnn, tests/op_rows/rnn.py).
GRU rows cover the separate gradient of h' W_hh^T that the other modes share with dxw."""
import pytest

from numbaflow.kernels.math import gemm_cpu
from numbaflow.testing.op_test import check_grad, check_output
from op_rows import load_all

CASES = [c for c in load_all() if c.op == "rnn" and c.id.endswith("-L2-bi-lens")
         and ("LSTM" in c.id or "GRU" in c.id)]


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rnn_products_over_workers_match_reference(monkeypatch, case, workers):
    monkeypatch.setattr(gemm_cpu, "gemm_threads", lambda m, n, k, batch, threads: workers)
    monkeypatch.setattr(gemm_cpu, "block_size", lambda dim, threads: 5)    # many blocks
    check_output(case, "float64")
    check_grad(case)


def test_the_rows_are_there():
    assert sorted(c.id for c in CASES) == ["rnn-GRU-L2-bi-lens", "rnn-LSTM-L2-bi-lens"]
