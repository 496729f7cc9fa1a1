"""fluid.core: the names Paddle programs use from its C++ core module.

>>> from numbaflow.fluid import core
>>> place = core.CUDAPlace(0) if core.is_compiled_with_cuda() else core.CPUPlace()
>>> scope = core.Scope()
"""
import numpy as np

from .. import dtypes
from ..executor import CPUPlace, CUDAPlace, Scope  # noqa: F401
from ..executor.place import cuda_available


def is_compiled_with_cuda():
    """True when numba can run CUDA kernels here (a GPU, or NUMBA_ENABLE_CUDASIM=1)."""
    return cuda_available()


def get_cuda_device_count():
    """The number of GPUs numba sees (0 without one)."""
    if not cuda_available():
        return 0
    from numba import cuda
    return len(cuda.gpus)


class LoDTensor:
    """A host tensor to feed (`t.set(array, place)`); numpy-convertible. Level-of-detail
    (sequence) information is not supported: `set_lod` raises."""

    def __init__(self):
        self._array = np.zeros((0,), np.float32)

    def set(self, array, place=None):
        self._array = np.array(array, copy=True, order="C")

    def shape(self):
        return list(self._array.shape)

    def set_lod(self, lod):
        raise NotImplementedError("LoDTensor.set_lod: numbaflow has no variable-length "
                                  "(LoD) sequences; pad sequences to one length instead")

    def lod(self):
        return []

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)


Tensor = LoDTensor


class VarDesc:
    """`core.VarDesc.VarType.FP32` etc.: dtype constants (numpy dtypes here)."""

    class VarType:
        BOOL = dtypes.convert_dtype("bool")
        INT32 = dtypes.convert_dtype("int32")
        INT64 = dtypes.convert_dtype("int64")
        FP32 = dtypes.convert_dtype("float32")
        FP64 = dtypes.convert_dtype("float64")
