"""The simulator has one device: CUDAPlace(0) works and CUDAPlace(1) raises, printing the
message. Run by tests/gpu/test_gpu_check.py."""
import numbaflow as p

assert p.is_compiled_with_cuda() and p.cuda_available()
p.CUDAPlace(0)
try:
    p.CUDAPlace(1)
except RuntimeError as e:
    print(e)
