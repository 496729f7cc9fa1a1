"""numbaflow.core, public as fluid.core and framework.core: the names Paddle programs use
from its C++ core module.

>>> from numbaflow.fluid import core
>>> place = core.CUDAPlace(0) if core.is_compiled_with_cuda() else core.CPUPlace()
>>> scope = core.Scope()
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .executor import CPUPlace, CUDAPlace, Scope  # noqa: F401
from .executor.place import cuda_available


def is_compiled_with_cuda() -> bool:
    """Whether CUDA kernels can run here: a GPU numba sees, or NUMBA_ENABLE_CUDASIM=1.

    Returns:
        bool: True when `CUDAPlace(0)` can be used.

    Example:
        >>> fluid.is_compiled_with_cuda() in (True, False)
        True
    """
    return cuda_available()


def supports_bfloat16() -> bool:
    """Whether bfloat16 kernels exist: never in numbaflow (float16 neither; float32/64 only).

    Returns:
        bool: False.

    Example:
        >>> fluid.core.supports_bfloat16()
        False
    """
    return False


def get_cuda_device_count() -> int:
    """The number of GPUs numba sees.

    Returns:
        int: 0 without one.

    Example:
        >>> fluid.core.get_cuda_device_count() >= 0
        True
    """
    if not cuda_available():
        return 0
    from numba import cuda
    return len(cuda.gpus)


class LoDTensor:
    """A host tensor to feed (`t.set(array, place)`); numpy-convertible. Level-of-detail
    (sequence) information is not supported: `set_lod` raises.

    Example:
        >>> t = fluid.LoDTensor()
        >>> t.set(np.ones((2, 3), 'float32'), fluid.CPUPlace())
        >>> t.shape()
        [2, 3]
    """

    def __init__(self) -> None:
        self._array = np.zeros((0,), np.float32)

    def set(self, array: object, place: object = None) -> None:
        """Copy `array` in.

        Args:
            array (array-like): the values.
            place (Place, optional): accepted for Paddle compatibility.
        """
        self._array = np.array(array, copy=True, order="C")

    def shape(self) -> list:
        """The shape.

        Returns:
            list of int: the array's shape.
        """
        return list(self._array.shape)

    def set_lod(self, lod: object) -> None:
        """Always raises: numbaflow has no variable-length (LoD) sequences.

        Args:
            lod (list): the sequence offsets.
        """
        raise NotImplementedError("LoDTensor.set_lod: numbaflow has no variable-length "
                                  "(LoD) sequences; pad sequences to one length instead")

    def lod(self) -> list:
        """The sequence offsets.

        Returns:
            list: always [] (numbaflow has no LoD sequences).
        """
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


def create_lod_tensor(data: object, recursive_seq_lens: list, place: object) -> LoDTensor:
    """A LoDTensor holding `data` (an array, or a list of per-sequence lists). numbaflow
    has no variable-length sequences, so the lengths may only describe the trivial LoD:
    none ([]), or one level whose sequences are single rows ([[1, 1, ...]]).

    Args:
        data (array-like or list of lists): the values; a list of sequences is
            concatenated row-wise (each id becomes a row of shape [1]).
        recursive_seq_lens (list of list of int): the sequence lengths per level.
        place (Place): accepted for Paddle compatibility.

    Returns:
        LoDTensor: the tensor.

    Raises:
        ValueError: the lengths do not add up to the rows.
        NotImplementedError: a sequence longer than one row (real LoD).

    Example:
        >>> t = fluid.create_lod_tensor(np.arange(3).reshape(3, 1), [[1, 1, 1]],
        ...                             fluid.CPUPlace())
        >>> t.shape()
        [3, 1]
    """
    if isinstance(data, list) and data and isinstance(data[0], (list, tuple)):
        data = np.concatenate([np.asarray(seq).reshape(-1, 1) for seq in data])
    arr = np.asarray(data)
    levels = [list(map(int, lens)) for lens in (recursive_seq_lens or [])]
    for lens in levels:
        if sum(lens) != arr.shape[0] and levels[-1] is lens:
            raise ValueError(f"create_lod_tensor: the sequence lengths {lens} add up to "
                             f"{sum(lens)}, but data has {arr.shape[0]} rows")
        if any(n != 1 for n in lens):
            raise NotImplementedError(
                f"create_lod_tensor: sequence lengths {lens} describe variable-length "
                f"sequences (LoD), which numbaflow does not have; pad the sequences to "
                f"one length and feed a dense array")
    t = LoDTensor()
    t.set(arr, place)
    return t
