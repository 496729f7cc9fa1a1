"""fill_constant (paddle.full) of every rank and dtype fills its whole output, through the
CPU kernel that writes a 1-D view made at bind time."""
import numpy as np
import pytest

import numbaflow as paddle
from numbaflow import static


@pytest.mark.parametrize("shape,dtype,value", [([], "float32", 2.5), ([3], "float64", -1.0),
                                               ([2, 3, 4], "float32", 7.0),
                                               ([4, 5], "int64", 3)])
def test_full_fills_every_element(shape, dtype, value):
    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        out = paddle.full(shape, value, dtype)
    got, = static.Executor(paddle.CPUPlace()).run(main, fetch_list=[out])
    np.testing.assert_array_equal(got, np.full(shape, value, dtype))
    assert got.dtype == np.dtype(dtype)
