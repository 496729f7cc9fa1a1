"""fluid.layers.device (Paddle 1.x): the places a program can run on."""
from __future__ import annotations

from ...executor import cpu_places as _cpu_places
from ...executor import cuda_places as _cuda_places

__all__ = ["get_places"]


def get_places(device_count: int | None = None, device_type: str | None = None) -> list:
    """The places of `device_type` ('CPU' default, or 'CUDA'), `device_count` of them
    (default: every CUDA device, or CPU_NUM CPU places).

    Args:
        device_count (int, optional): how many.
        device_type (str, optional): 'CPU' or 'CUDA'.

    Returns:
        list: CPUPlace or CUDAPlace objects.

    Example:
        >>> len(fluid.layers.device.get_places(device_count=2))
        2
    """
    if device_type is None or str(device_type).upper() == "CPU":
        return _cpu_places(device_count)
    if str(device_type).upper() in ("CUDA", "GPU"):
        return _cuda_places(None if device_count is None else list(range(device_count)))
    raise ValueError(f"get_places: device_type must be 'CPU' or 'CUDA', got {device_type!r}")
