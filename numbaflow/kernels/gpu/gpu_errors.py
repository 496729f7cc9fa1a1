"""Bad-data errors: how a GPU kernel reports bad data (kernels cannot raise), and the
CPU kernels' DataError, which carries the same messages.

A kernel that meets bad data (a label or id out of range) writes a harmless value (0) and records the first failure of its device in the device's error
record err = [code, value, position, bound] (int64; compare_and_swap on err[0], so the
first failure wins); the executor reads the record once per run
(CudaBackend.check_errors) and raises the CPU kernel's ValueError, word for word.
The first failing kernel wins (kernels run in program order, as the CPU raises at the
first failing op); when one kernel meets several bad values, the threads race and the
one recorded may be another row than the CPU's first, with the same message otherwise.
"""
import numpy as np

from ..codegen.render import ZERO_DIVISION_MESSAGE, ZERO_MODULO_MESSAGE

ERR_SWCE, ERR_XENT, ERR_ACCURACY, ERR_LOOKUP, ERR_LOOKUP_GRAD, ERR_INT_DIV = 1, 2, 3, 4, 5, 6
ERR_INT_MOD, ERR_NAN_INF, ERR_NLL = 7, 8, 9
ERROR_MESSAGES = {   # code -> (op type, the CPU kernel's message)
    ERR_SWCE: ("softmax_with_cross_entropy", "softmax_with_cross_entropy: label {value} "
               "(row {pos}) is outside [0, {bound}) and is not ignore_index"),
    ERR_XENT: ("cross_entropy", "cross_entropy: label {value} (row {pos}) is outside "
               "[0, {bound}) and is not ignore_index"),
    ERR_ACCURACY: ("accuracy", "accuracy: label {value} (row {pos}) is outside [0, {bound})"),
    ERR_LOOKUP: ("lookup_table_v2", "lookup_table_v2: id {value} (position {pos} of Ids) "
                 "is outside [0, {bound}), the rows of W"),
    ERR_LOOKUP_GRAD: ("lookup_table_v2_grad", "lookup_table_v2_grad: id {value} (position "
                      "{pos} of Ids) is outside [0, {bound}), the rows of W"),
    # any generated kernel dividing integers (elementwise_div, or one fused from it)
    ERR_INT_DIV: ("elementwise_div", ZERO_DIVISION_MESSAGE),
    ERR_INT_MOD: ("elementwise_mod", ZERO_MODULO_MESSAGE),     # (or one fused from it)
    # NUMBAFLOW_CHECK_NAN_INF in a fused kernel: read and raised by `raise_nan_check`
    ERR_NLL: ("nll_loss", "nll_loss: label {value} (position {pos}) is outside [0, {bound}) "
              "and is not ignore_index"),
    ERR_NAN_INF: ("fused_elementwise", "NUMBAFLOW_CHECK_NAN_INF: a fused op produced a NaN or "
                  "Inf"),
}


class DataError(ValueError):
    """A CPU kernel's bad-data error, raised inside njit with the message template and its
    numbers, `raise DataError(ERROR_MESSAGES[code][1], value, pos, bound)`; numba builds
    the exception in Python, where the message is formatted. Formatting it inside njit
    (str() of ints, concatenation) cost ~1.4 s of compile per kernel on a cold cache."""

    def __init__(self, message, value=None, pos=None, bound=None):
        if value is not None:
            message = message.format(value=value, pos=pos, bound=bound)
        super().__init__(message)


class DeviceError(ValueError):
    """A kernel's bad-data error read back from the device; `op_type` says which op."""

    def __init__(self, message, op_type):
        super().__init__(message)
        self.op_type = op_type


class DeviceZeroDivisionError(DeviceError, ZeroDivisionError):
    """An integer division by zero on the device: a ZeroDivisionError as on the CPU (and a
    DeviceError, a ValueError, as every device-recorded error)."""


_error_records = {}     # device id -> its int64[4] error record (device memory)


def _device_key():
    from numba import cuda
    return getattr(cuda.get_current_device(), "id", 0)


def error_record():
    """The current device's error record (allocated zeroed on first use): kernels that
    can meet bad data take it as an argument."""
    key = _device_key()
    rec = _error_records.get(key)
    if rec is None:
        from numba import cuda
        rec = _error_records.setdefault(key, cuda.to_device(np.zeros(4, np.int64)))
    return rec


def raise_device_error():
    """Read the current device's error record (one small blocking copy); if a kernel
    recorded a failure, clear it and raise its DeviceError (a ValueError)."""
    rec = _error_records.get(_device_key())
    if rec is None:
        return
    h = rec.copy_to_host()
    if h[0] == 0:
        return
    rec.copy_to_device(np.zeros(4, np.int64))
    op_type, text = ERROR_MESSAGES[int(h[0])]
    kind = DeviceZeroDivisionError if h[0] in (ERR_INT_DIV, ERR_INT_MOD) else DeviceError
    raise kind(text.format(value=int(h[1]), pos=int(h[2]), bound=int(h[3])), op_type)


def raise_nan_check(messages):
    """After a fused kernel that checks its ops' results (NUMBAFLOW_CHECK_NAN_INF, see
    codegen/cuda.py): when it recorded a NaN or Inf, clear the record and raise
    FloatingPointError with the message of the first failing check in program order."""
    rec = _error_records.get(_device_key())
    if rec is None:
        return
    h = rec.copy_to_host()
    if h[0] != ERR_NAN_INF:
        return      # nothing, or another error: the end-of-run check raises that one
    rec.copy_to_device(np.zeros(4, np.int64))
    raise FloatingPointError(messages[len(messages) - int(h[1])])
