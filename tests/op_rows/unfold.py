"""Table rows for unfold (im2col): the reference loops over every output column in
float64 from the definition (a zero-padded, dilated, strided window of X per column),
not from the kernel's index table."""
import numpy as np

from numbaflow.testing.op_test import uniform

from . import f64, row


def unfold_ref(ins, a):
    x = f64(ins["X"])
    (kh, kw), (sh, sw), (dh, dw) = a["kernel_sizes"], a["strides"], a["dilations"]
    top, left, bottom, right = a["paddings"]
    n, c, h, w = x.shape
    padded = np.zeros((n, c, h + top + bottom, w + left + right))
    padded[:, :, top:top + h, left:left + w] = x
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (w + left + right - dw * (kw - 1) - 1) // sw + 1
    cols = [padded[:, :, y * sh:y * sh + dh * (kh - 1) + 1:dh,
                   z * sw:z * sw + dw * (kw - 1) + 1:dw].reshape(n, -1)
            for y in range(oh) for z in range(ow)]
    return {"Y": np.stack(cols, axis=2).astype(ins["X"].dtype)}


for _id, _shape, _attrs in [
        ("3x3", (2, 2, 4, 5), {"kernel_sizes": [3, 3]}),
        ("pad-stride", (1, 3, 5, 4), {"kernel_sizes": [2, 3], "strides": [2, 1],
                                      "paddings": [1, 0, 2, 1]}),
        ("dilated", (1, 2, 6, 6), {"kernel_sizes": [2, 2], "dilations": [2, 3],
                                   "paddings": [1, 1, 1, 1], "strides": [1, 2]})]:
    row("unfold", {"X": uniform(_shape)}, unfold_ref, f"unfold-{_id}", attrs=_attrs)
