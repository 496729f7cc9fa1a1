"""Scope: the name -> numpy array store that holds persistable state between runs."""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import ArrayLike


class Tensor:
    """What `Scope.find_var(name).get_tensor()` returns: convertible with numpy.array."""

    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def __array__(self, dtype=None, copy=None):
        a = self._scope._host_array(self._name)
        return a.astype(dtype) if dtype is not None else a.copy()

    def shape(self):
        return list(self._scope._arrays[self._name].shape)

    def _dtype(self):
        return self._scope._arrays[self._name].dtype

    def set(self, value, place=None):
        self._scope.set(self._name, value)

    def __repr__(self):
        return f"Tensor({self._name}, {np.asarray(self)!r})"


class ScopeVariable:
    def __init__(self, scope, name):
        self._scope, self.name = scope, name

    def get_tensor(self):
        return Tensor(self._scope, self.name)

    def is_initialized(self):
        return self.name in self._scope._arrays


class Scope:
    """Holds arrays by variable name: the parameters and optimizer state between runs.
    `Executor.run` uses `static.global_scope()` unless given one.

    `version` changes when an array object is replaced, which tells compiled plans bound
    to the old array to rebind.

    Variables used on a GPU also have a device copy; `_on_device` names those whose
    device copy is newer than the host array (a GPU run wrote them). The host array is
    refreshed when read (`get`, `get_tensor`, a CPU run); a device copy is never older
    than the host array (`set` and CPU runs upload to it).

    Example:
        >>> scope = static.Scope()
        >>> scope.set('w', np.ones((2, 2), 'float32'))
        >>> scope.get('w').sum(), scope.find_var('w') is not None, scope.find_var('v')
        (np.float32(4.0), True, None)
    """

    def __init__(self) -> None:
        self._arrays = {}
        self._device = {}
        self._on_device = set()
        self.version = 0
        self.writes = 0         # Scope.set calls: data-parallel replicas re-sync after one
        self._before_save = []  # collectives static.save runs first (Reduce across ranks)
        self._lock = threading.RLock()  # held by a run: runs on one scope never interleave

    # ---- host <-> device bookkeeping (used by executor backends)
    def _host_array(self, name):
        a = self._arrays.get(name)
        if name in self._on_device:
            self._device[name].copy_to_host(a)
            self._on_device.discard(name)
        return a

    def _sync_to_host(self, names):
        if self._on_device:
            for n in self._on_device & set(names):
                self._host_array(n)

    def _host_wrote(self, names):
        if self._device:
            for n in names:
                if n in self._device:
                    self._device[n].copy_to_device(self._arrays[n])

    def _device_wrote(self, names):
        self._on_device.update(names)

    def _device_array(self, name):
        """The device copy of `name` (uploaded from the host array on first use)."""
        d = self._device.get(name)
        host = self._arrays.get(name)
        if host is None:
            return None
        if d is None or d.shape != host.shape or d.dtype != host.dtype:
            from numba import cuda
            d = self._device[name] = cuda.to_device(host)
            self._on_device.discard(name)
        return d

    def _ensure_device(self, name, shape, dtype):
        self._ensure(name, shape, dtype)
        return self._device_array(name)

    def find_var(self, name: str) -> ScopeVariable | None:
        """The variable named `name`, or None if this scope has none.

        Args:
            name (str): the variable's name.

        Returns:
            ScopeVariable or None: `.get_tensor()` gives a Tensor (`np.array(t)` copies it).
        """
        return ScopeVariable(self, name) if name in self._arrays else None

    def var(self, name: str) -> ScopeVariable:
        """The variable named `name`, created (empty) if missing.

        Args:
            name (str): the variable's name.

        Returns:
            ScopeVariable: the variable.
        """
        self._arrays.setdefault(name, np.zeros((0,), np.float32))
        return ScopeVariable(self, name)

    def get(self, name: str) -> np.ndarray:
        """A (host) copy of the array named `name`.

        Args:
            name (str): the variable's name.

        Returns:
            numpy.ndarray: a copy.

        Raises:
            KeyError: the scope has no such variable.
        """
        if name not in self._arrays:
            raise KeyError(f"scope has no variable {name!r}")
        return self._host_array(name).copy()

    def set(self, name: str, value: ArrayLike) -> None:
        """Set `name` to `value`. Same shape and dtype: written in place (and into its
        device copy, if it has one).

        Args:
            name (str): the variable's name.
            value (array_like): the new value (copied).
        """
        value = np.asarray(value)
        self.writes += 1
        old = self._arrays.get(name)
        self._on_device.discard(name)
        if old is not None and old.shape == value.shape and old.dtype == value.dtype:
            np.copyto(old, value)
            self._host_wrote([name])
        else:
            self._arrays[name] = np.array(value, copy=True, order="C")
            self._device.pop(name, None)
            self.version += 1

    def _ensure(self, name, shape, dtype):
        """The array for `name`, (re)allocated if missing or of another shape/dtype."""
        a = self._arrays.get(name)
        if a is None or a.shape != tuple(shape) or a.dtype != dtype:
            a = self._arrays[name] = np.zeros(shape, dtype)
            self._device.pop(name, None)
            self._on_device.discard(name)
            self.version += 1
        return a

    def local_var_names(self) -> list[str]:
        """The names of every array in the scope.

        Returns:
            list of str: the names.
        """
        return list(self._arrays)


_global_scope = Scope()
_current = [_global_scope]


def global_scope() -> Scope:
    """The scope used when Executor.run is given none (changed by scope_guard).

    Returns:
        Scope: the current global scope.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> static.global_scope().get('fc_0.w_0').shape
        (3, 2)
    """
    return _current[-1]


@contextlib.contextmanager
def scope_guard(scope: Scope) -> Iterator[None]:
    """Make `scope` the global scope inside the `with` block.

    Args:
        scope (Scope): the scope.

    Returns:
        a context manager.

    Raises:
        TypeError: scope is not a Scope.

    Example:
        >>> scope = static.Scope()
        >>> with static.scope_guard(scope):
        ...     static.global_scope() is scope
        True
    """
    if not isinstance(scope, Scope):
        raise TypeError(f"scope_guard expects a Scope, got {type(scope).__name__}")
    _current.append(scope)
    try:
        yield
    finally:
        _current.pop()
