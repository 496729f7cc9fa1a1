"""Dtype names <-> numpy dtypes. Internally every dtype is a `numpy.dtype`."""
import numpy as np

float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")
uint8 = np.dtype("uint8")          # dropout masks
int8 = np.dtype("int8")
int16 = np.dtype("int16")

SUPPORTED = (float32, float64, int8, int16, int32, int64, bool_, uint8)
FLOATING = (float32, float64)

# "int" is numpy's (and so Paddle's) default int: int64 on Linux
_ALIASES = {"float": float32, "double": float64, "int": int64, "long": int64,
            "fp32": float32, "fp64": float64, "bool": bool_, "uint8": uint8,
            "int8": int8, "int16": int16}


def convert_dtype(dtype):
    """Normalise a dtype given as a string, numpy type or numpy dtype.

    >>> convert_dtype('float32') == np.float32
    True
    """
    if isinstance(dtype, str) and dtype in _ALIASES:
        return _ALIASES[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; expected one of "
                        f"{[str(d) for d in SUPPORTED]}") from None
    if dt not in SUPPORTED:
        raise TypeError(f"dtype {dt} is not supported; expected one of "
                        f"{[str(d) for d in SUPPORTED]}")
    return dt
