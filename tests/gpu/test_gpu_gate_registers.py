"""The compile gate rejects a kernel whose registers do not fit its largest block (issue
21's mutation probe: a gate that never rejected went unnoticed, only the arithmetic was
tested). ptxas is replaced by its verdict, so this runs without a CUDA toolkit."""
import pytest

from numbaflow import gpu_check


def kernel():
    """A stand-in for a numba CUDA dispatcher: what the gate reads of one."""
    def body():
        pass

    class K:
        py_func = body
        nf_block_threads = 512
    return K()


@pytest.mark.parametrize("registers,rejected", [(64, False), (128, False), (129, True),
                                                (255, True)])
def test_the_gate_rejects_a_kernel_over_the_block_register_budget(monkeypatch, registers,
                                                                  rejected):
    monkeypatch.setattr(gpu_check, "compile_ptxs", lambda k, sig, ccs: ["ptx"] * len(ccs))
    monkeypatch.setattr(gpu_check, "assemble",
                        lambda ptx, cc, verbose=False: f"ptxas info: Used {registers} registers")
    failures = gpu_check._compile_one((kernel(), (), [(9, 0)], True))
    # 512 threads: 128 registers each is exactly 65536
    assert bool(failures) == rejected, failures
    if rejected:
        assert "exceed the 65536 registers of a block" in failures[0] and "sm_90" in failures[0]
