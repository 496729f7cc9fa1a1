"""Table rows for gather, take_along_axis and argsort (kernels/tensor/gather_ops.py).

References are numpy: np.take, np.take_along_axis and a stable np.argsort.
"""
import numpy as np

from numbaflow.testing.op_test import const, distinct, ints, uniform

from . import row

row("gather", {"X": uniform((5, 3)), "Index": const([4, 0, 4, -1])},
    lambda ins, a: {"Out": np.take(ins["X"], ins["Index"], a["axis"])}, "gather-rows-repeat")
row("gather", {"X": uniform((2, 5, 3)), "Index": ints((3,), 0, 5, "int32")},
    lambda ins, a: {"Out": np.take(ins["X"], ins["Index"], a["axis"])}, "gather-axis1",
    attrs={"axis": 1})
row("gather", {"X": ints((4, 2), -9, 9), "Index": const([3, 1])},
    lambda ins, a: {"Out": np.take(ins["X"], ins["Index"], 0)}, "gather-int64",
    dtypes=("float32",))


def take_ref(ins, a):
    return {"Result": np.take_along_axis(ins["Input"], ins["Index"] % ins["Input"].shape[
        a["Axis"]], a["Axis"])}


row("take_along_axis", {"Input": uniform((3, 4)), "Index": ints((3, 6), -4, 4)}, take_ref,
    "take_along-last", attrs={"Axis": 1})
row("take_along_axis", {"Input": uniform((3, 4, 2)), "Index": ints((2, 4, 2), 0, 3)},
    take_ref, "take_along-first", attrs={"Axis": 0})


def argsort_ref(ins, a):
    x = ins["X"]
    order = np.argsort(-x if a["descending"] else x, axis=a["axis"], kind="stable")
    return {"Out": np.take_along_axis(x, order, a["axis"]), "Indices": order.astype(np.int64)}


row("argsort", {"X": distinct((3, 5))}, argsort_ref, "argsort-last")
row("argsort", {"X": distinct((4, 3))}, argsort_ref, "argsort-desc-axis0",
    attrs={"axis": 0, "descending": True})
row("argsort", {"X": const([[2.0, 1.0, 2.0, 1.0, 3.0]])}, argsort_ref, "argsort-ties",
    attrs={"descending": True}, grad_inputs=())
row("argsort", {"X": ints((3, 6), -3, 3)}, argsort_ref, "argsort-int64", dtypes=("float32",))
