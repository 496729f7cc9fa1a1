"""The 3-D pooling layers, generated from a table over nn/functional_3d.py
(Conv3D is conv.py's)."""
from __future__ import annotations

from .activation import make_layer

__all__ = []


_SIZES = "kernel_size: int | list, stride: int | list | None = None, padding: int | str | list = 0"
# (class, functional, constructor arguments in Paddle's order, the example's layer, its shape)
POOLS_3D = [
    ("MaxPool3D", "max_pool3d", _SIZES + ", return_mask: bool = False, ceil_mode: bool = False, "
     "data_format: str = 'NCDHW'", "MaxPool3D(2)", "(-1, 3, 2, 4, 4)"),
    ("AvgPool3D", "avg_pool3d", _SIZES + ", ceil_mode: bool = False, exclusive: bool = True, "
     "divisor_override: None = None, data_format: str = 'NCDHW'", "AvgPool3D(2, stride=2)",
     "(-1, 3, 2, 4, 4)"),
    ("AdaptiveAvgPool3D", "adaptive_avg_pool3d", "output_size: int | list, "
     "data_format: str = 'NCDHW'", "AdaptiveAvgPool3D(1)", "(-1, 3, 1, 1, 1)"),
    ("AdaptiveMaxPool3D", "adaptive_max_pool3d", "output_size: int | list, "
     "return_mask: bool = False", "AdaptiveMaxPool3D([2, 3, 3])", "(-1, 3, 2, 3, 3)"),
]


def _doc(cls, fn, sig, example, shape):
    args = "".join(f"        {a.split(':')[0].strip()}: as in F.{fn}.\n"
                   for a in sig.split(", ") if ":" in a)
    return (f"F.{fn} as a layer (no parameters).\n\n    Args:\n{args}"
            f"        name (str, optional): a prefix for the output's name.\n\n"
            f"    Example:\n        >>> pool = paddle.nn.{example}\n"
            f"        >>> pool(static.data('vol', [None, 3, 4, 8, 8])).shape\n        {shape}\n")


for _cls, _fn, _sig, _example, _shape in POOLS_3D:
    globals()[_cls] = make_layer(_cls, _fn, _sig, doc=_doc(_cls, _fn, _sig, _example, _shape))
    globals()[_cls].__module__ = __name__
    __all__.append(_cls)
