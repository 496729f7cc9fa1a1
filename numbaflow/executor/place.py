"""Places: where a program runs. `CPUPlace()`, `CUDAPlace(i)`, and the list helpers."""
from __future__ import annotations

import logging
import numbers
import os
from typing import TYPE_CHECKING

from .. import config
from ..config import cuda_simulator as _simulated
# what is missing for a GPU, in the order the user can act on it
from ..utils.cuda_check import device_problem as _device_problem
from ..utils.cuda_check import toolkit_problem as _toolkit_problem

if TYPE_CHECKING:
    from collections.abc import Sequence


class CPUPlace:
    """The CPU: run a program with `Executor(CPUPlace())`.

    Example:
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> paddle.CPUPlace() == paddle.CPUPlace()
        True
    """

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __hash__(self):
        return hash("cpu")

    def __repr__(self):
        return "Place(cpu)"


def is_compiled_with_cuda() -> bool:
    """Whether GPU kernels can be compiled here: numba-cuda with its CUDA 12 toolkit
    libraries (the 'cuda' extra: NVVM, NVRTC), or the CUDA simulator. Says nothing about
    a GPU being present (see `cuda_available`).

    Returns:
        bool: True when the CUDA toolchain is installed.

    Example:
        >>> isinstance(paddle.is_compiled_with_cuda(), bool)
        True
    """
    return _toolkit_problem() is None


def cuda_available() -> bool:
    """Whether `CUDAPlace(0)` can run: the toolkit, a driver and at least one GPU (or
    numba's CUDA simulator, NUMBA_ENABLE_CUDASIM=1).

    Returns:
        bool: True when a (real or simulated) GPU is usable.

    Example:
        >>> place = paddle.CUDAPlace(0) if paddle.cuda_available() else paddle.CPUPlace()
    """
    try:
        return _device_problem(0) is None
    except Exception:   # anything unexpected from the driver: no usable GPU either way
        return False


class CUDAPlace:
    """GPU number `device_id`: run a program on it with `Executor(CUDAPlace(i))`; its
    buffers, kernels and the Scope's device copies live on that device.

    Args:
        device_id (int): the GPU's index among numba's visible devices.

    Raises:
        ValueError: device_id is not a non-negative int.
        RuntimeError: at construction, naming what is missing: numba-cuda or its CUDA
            toolkit libraries (install the 'cuda' extra), the driver, or the GPU itself
            (`device index i is out of range`); set NUMBA_ENABLE_CUDASIM=1 for numba's
            CUDA simulator.

    Example:
        >>> try:
        ...     place = paddle.CUDAPlace(0)
        ... except RuntimeError:
        ...     place = paddle.CPUPlace()          # no GPU here
    """

    def __init__(self, device_id: int = 0) -> None:
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise ValueError(f"CUDAPlace: device_id must be a non-negative int, got {device_id!r}")
        problem = _device_problem(device_id)
        if problem:
            hint = "" if _simulated() else \
                ", or set NUMBA_ENABLE_CUDASIM=1 to run on numba's CUDA simulator"
            raise RuntimeError(f"CUDAPlace({device_id}) cannot be used: {problem}. "
                               f"Use CPUPlace(){hint}.")
        self.device_id = device_id

    def get_device_id(self) -> int:
        """The GPU's index.

        Returns:
            int: device_id.
        """
        return self.device_id

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(("gpu", self.device_id))

    def __repr__(self):
        return f"Place(gpu:{self.device_id})"


def to_place(p):
    """Accept a place object or a string "cpu" / "gpu" / "gpu:N"."""
    if isinstance(p, (CPUPlace, CUDAPlace)):
        return p
    if isinstance(p, str):
        s = p.strip().lower()
        if s == "cpu":
            return CPUPlace()
        if s in ("gpu", "cuda"):
            return CUDAPlace(0)
        for prefix in ("gpu:", "cuda:"):
            if s.startswith(prefix) and s[len(prefix):].isdigit():
                return CUDAPlace(int(s[len(prefix):]))
    raise ValueError(f"unknown place {p!r}; expected CPUPlace(), CUDAPlace(i), 'cpu' or 'gpu:N'")


MAX_CPU_PLACES = 1024   # each CPU place is a replica: its own parameters, buffers, thread


def cpu_places(device_count: int | None = None) -> list[CPUPlace]:
    """`device_count` CPU places, for data parallelism over threads.

    Args:
        device_count (int, optional): how many, 1..MAX_CPU_PLACES; default the
            environment variable CPU_NUM, else 1 (with a warning on the `numbaflow`
            logger, and CPU_NUM=1 set, as Paddle does).

    Returns:
        list of CPUPlace: the places.

    Raises:
        TypeError: device_count is not an int.
        ValueError: device_count (or CPU_NUM) outside 1..MAX_CPU_PLACES.

    Example:
        >>> static.cpu_places(2)
        [Place(cpu), Place(cpu)]
    """
    what = "cpu_places: device_count"
    if device_count is None:
        env = config.cpu_num()
        if env is None:
            logging.getLogger("numbaflow").warning(
                "CPU_NUM is not set; using 1 CPU place (set CPU_NUM=N to use N places)")
            config.set_cpu_num(1)
            env = "1"
        try:
            device_count = int(env)
        except ValueError:
            raise ValueError(f"CPU_NUM must be a positive integer, got {env!r}") from None
        what = "CPU_NUM"
    if isinstance(device_count, bool) or not isinstance(device_count, numbers.Integral):
        raise TypeError(f"{what} must be an int, got {type(device_count).__name__} "
                        f"{device_count!r}")
    if not 1 <= device_count <= MAX_CPU_PLACES:
        raise ValueError(f"{what} must be in [1, {MAX_CPU_PLACES}], got {device_count}; each "
                         f"place is a full replica of the program's state, so more places than "
                         f"cores ({os.cpu_count()} here) only cost memory")
    return [CPUPlace() for _ in range(int(device_count))]


def cuda_places(device_ids: int | Sequence[int] | None = None) -> list[CUDAPlace]:
    """CUDA places for `device_ids`, else FLAGS_selected_gpus, else every visible GPU.

    Args:
        device_ids (int or list of int, optional): the GPU indices.

    Returns:
        list of CUDAPlace: the places.

    Raises:
        RuntimeError: no usable CUDA GPU.

    Example:
        >>> try:
        ...     places = static.cuda_places()
        ... except RuntimeError:
        ...     places = static.cpu_places(1)      # no GPU here
    """
    if device_ids is None:
        flag = config.selected_gpus()
        if flag:
            device_ids = [int(x) for x in flag.split(",") if x.strip()]
        else:
            problem = _device_problem(0)
            if problem:
                raise RuntimeError(f"cuda_places: no usable CUDA GPU: {problem}; set "
                                   f"NUMBA_ENABLE_CUDASIM=1 for numba's CUDA simulator")
            from numba import cuda
            device_ids = list(range(len(cuda.gpus)))
    elif isinstance(device_ids, int):
        device_ids = [device_ids]
    return [CUDAPlace(i) for i in device_ids]
