"""Testing helpers: the table-driven op test harness (see op_test.py)."""
from .op_test import (OpCase, assert_close, away_from_zero, build_grad_program,  # noqa: F401
                      check_grad, check_inplace, check_output, const, distinct, grad_slots, ints,
                      make_inputs, paddle_align, ref_binary, ref_unary,
                      run_single_op, uniform)
