"""Table rows for the small ops Paddle programs use in loops (issue 29): shape,
increment, logical_not, elementwise_floordiv (paddle.floor_divide), sin and cos."""
import numpy as np

from numbaflow.testing.op_test import (away_from_zero, ints, ref_binary as binary,
                                       ref_unary as unary, uniform)

from . import row

X34 = (3, 4)
row("sin", {"X": uniform(X34, -3, 3)}, unary(lambda x, a: np.sin(x)))
row("cos", {"X": uniform(X34, -3, 3)}, unary(lambda x, a: np.cos(x)))
row("shape", {"Input": uniform((2, 3, 4))},
    lambda ins, a: {"Out": np.array(ins["Input"].shape, np.int32)}, grad_inputs=())
row("increment", {"X": uniform((1,))}, unary(lambda x, a: x + a["step"]), attrs={"step": 2.5},
    grad_inputs=())
row("increment", {"X": ints((1,), -5, 5)}, lambda ins, a: {"Out": ins["X"] + 1},
    "increment-int64", dtypes=("float64",))
row("logical_not", {"X": lambda rng: rng.random(X34) < 0.5},
    lambda ins, a: {"Out": np.logical_not(ins["X"])}, dtypes=("float64",))
row("logical_not", {"X": ints(X34, -1, 2)}, lambda ins, a: {"Out": ins["X"] == 0},
    "logical_not-int64", dtypes=("float64",))
# floor(x / y) with Python's // for integers (Paddle 2.6: -7 // 2 = -4)
row("elementwise_floordiv", {"X": uniform(X34, -5, 5), "Y": away_from_zero((4,), 0.5, 2.0)},
    binary(np.floor_divide), grad_inputs=())
row("elementwise_floordiv", {"X": ints(X34, -9, 9), "Y": lambda rng: rng.choice([-3, -2, 2, 3],
                                                                             (3, 4))},
    lambda ins, a: {"Out": ins["X"] // ins["Y"]}, "elementwise_floordiv-int64",
    dtypes=("float64",))
