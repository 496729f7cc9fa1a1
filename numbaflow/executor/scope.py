"""Scope: the name -> numpy array store that holds persistable state between runs."""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

    from numpy.typing import ArrayLike


class Tensor:
    """What `Scope.find_var(name).get_tensor()` returns: convertible with numpy.array."""

    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def __array__(self, dtype=None, copy=None):
        a = self._scope.array(self._name)
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
        self._device_id = None  # the GPU holding the device copies (all on one)
        self._on_device = set()
        self.version = 0
        self.writes = 0         # Scope.set calls: data-parallel replicas re-sync after one
        self._before_save = []  # collectives static.save runs first (see on_save)
        self._lock = threading.RLock()  # held by a run: runs on one scope never interleave
        self._ran = False       # a program has run here: set() knows the variables (see set)

    # ---- verbs for the executor, the data-parallel runner and static.save (nobody else
    # touches the underscored state; tests/api/test_layering.py checks it)
    def locked(self) -> threading.RLock:
        """The scope's lock, a context manager: runs on one scope never interleave.

        Returns:
            threading.RLock: hold it (`with scope.locked():`) to keep runs out.
        """
        return self._lock

    def __contains__(self, name):
        return name in self._arrays

    def spec(self, name: str) -> tuple | None:
        """The shape and dtype of `name`'s array, without a copy or a device sync.

        Args:
            name (str): the variable's name.

        Returns:
            tuple or None: (shape, dtype), or None when the scope has no `name`.
        """
        a = self._arrays.get(name)
        return None if a is None else (a.shape, a.dtype)

    def bound(self) -> None:
        """Called by a plan binding to this scope: from now on `set` of an unknown name
        is taken for a typo (see `set`)."""
        self._ran = True

    def share(self, name: str, array: np.ndarray) -> None:
        """Hold this very `array` as `name` (no copy): data-parallel replicas share the
        user's optimizer state this way.

        Args:
            name (str): the variable's name.
            array (numpy.ndarray): the array to hold.
        """
        self._arrays[name] = array
        self._device.pop(name, None)
        self._on_device.discard(name)
        self.version += 1

    def remove(self, name: str) -> None:
        """Forget `name` and its device copy (nothing happens when it is absent).

        Args:
            name (str): the variable's name.
        """
        if self._arrays.pop(name, None) is not None:
            self._device.pop(name, None)
            self._on_device.discard(name)
            self.version += 1

    def on_save(self, fn: Callable[[], None]) -> None:
        """Call `fn()` at the start of every `static.save` of this scope (a collective
        that completes the scope first, e.g. gathering the optimizer state under Reduce).

        Args:
            fn (callable): called with no arguments.
        """
        self._before_save.append(fn)

    def before_save(self) -> None:
        """Run the `on_save` callbacks (static.save calls this first)."""
        for fn in self._before_save:
            fn()

    # ---- host <-> device bookkeeping (used by executor backends)
    @property
    def device_id(self) -> int | None:
        """The GPU holding this scope's device copies (None before a GPU run)."""
        return self._device_id

    def _on_gpu(self):
        """Context manager: the device holding the copies is current (copies between
        host and device run in that device's context)."""
        if self._device_id is None:
            return contextlib.nullcontext()
        from numba import cuda
        return cuda.gpus[self._device_id]

    def array(self, name: str) -> np.ndarray | None:
        """The live host array of `name`, no copy (a newer device copy is brought home
        first). Write through it only when `wrote_on_host([name])` follows.

        Args:
            name (str): the variable's name.

        Returns:
            numpy.ndarray or None: the array, or None when the scope has no `name`.
        """
        a = self._arrays.get(name)
        if name in self._on_device:
            with self._on_gpu():
                self._device[name].copy_to_host(a)
            self._on_device.discard(name)
        return a

    def sync_to_host(self, names: Iterable[str]) -> None:
        """Bring home the device copies of `names` that are newer than the host arrays.

        Args:
            names (iterable of str): the variables.
        """
        if self._on_device:
            for n in self._on_device & set(names):
                self.array(n)

    def wrote_on_host(self, names: Iterable[str]) -> None:
        """The host arrays of `names` were written: refresh their device copies.

        Args:
            names (iterable of str): the variables.
        """
        if self._device:
            with self._on_gpu():
                for n in names:
                    if n in self._device:
                        self._device[n].copy_to_device(self._arrays[n])

    def wrote_on_device(self, names: Iterable[str]) -> None:
        """The device copies of `names` were written: their host arrays are stale.

        Args:
            names (iterable of str): the variables.
        """
        self._on_device.update(names)

    def device_array(self, name: str, device_id: int = 0) -> Any:
        """The device copy of `name` on GPU `device_id`, uploaded from the host array on
        first use (a scope used on another GPU first brings its copies home).

        Args:
            name (str): the variable's name.
            device_id (int): the GPU.

        Returns:
            numba DeviceNDArray or None: the copy, or None when the scope has no `name`.
        """
        if self._device_id != device_id:
            self._move_to(device_id)
        d = self._device.get(name)
        host = self._arrays.get(name)
        if host is None:
            return None
        if d is None or d.shape != host.shape or d.dtype != host.dtype:
            from numba import cuda
            d = self._device[name] = cuda.to_device(host)
            self._on_device.discard(name)
        return d

    def ensure_device(self, name: str, shape: Sequence[int], dtype: Any,
                      device_id: int = 0) -> Any:
        """`ensure`, then the device copy on GPU `device_id`.

        Args:
            name (str): the variable's name.
            shape (sequence of int): the shape it must have.
            dtype (numpy dtype): the dtype it must have.
            device_id (int): the GPU.

        Returns:
            numba DeviceNDArray: the device copy.
        """
        self.ensure(name, shape, dtype)
        return self.device_array(name, device_id)

    def _move_to(self, device_id):
        if self._device:
            for n in list(self._on_device):
                self.array(n)
            self._device.clear()
            self.version += 1      # plans bound to the old copies rebind
        self._device_id = device_id

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
        return self.array(name).copy()

    def set(self, name: str, value: ArrayLike, create: bool = False) -> None:
        """Set `name` to `value`. Same shape and dtype: written in place (and into its
        device copy, if it has one); another shape replaces the array.

        Once a program has run on this scope its variables are known: a name the scope
        does not hold is then a typo unless `create=True` (it would be stored and never
        read). A value of another dtype than the (non-empty) array it replaces is refused:
        the program's kernels were built for that dtype.

        Args:
            name (str): the variable's name.
            value (array_like): the new value (copied).
            create (bool): add `name` even though a program already ran on this scope.

        Raises:
            TypeError: name is not a str, or value has another dtype than the variable.
            KeyError: a program ran on this scope and it holds no `name` (create=False).

        Example:
            >>> scope = static.Scope()
            >>> scope.set('w', np.zeros((2,), 'float32'))
            >>> scope.set('w', np.ones((2,), 'float64'))
            Traceback (most recent call last):
            ...
            TypeError: Scope.set: variable 'w' holds float32, got a float64 value; ...
        """
        if not isinstance(name, str):
            raise TypeError(f"Scope.set: name must be a str, got {type(name).__name__} {name!r}")
        value = np.asarray(value)
        old = self._arrays.get(name)
        if old is None and self._ran and not create:
            import difflib
            close = difflib.get_close_matches(name, list(self._arrays), n=3, cutoff=0.6)
            raise KeyError(f"Scope.set: the scope has no variable {name!r}" +
                           (f"; did you mean {close}?" if close else "") +
                           " A program already ran on this scope, so a new name would be "
                           "stored and never read. Check the name (scope.local_var_names()), "
                           "or pass create=True to add it.")
        if old is not None and old.size and value.dtype != old.dtype:
            raise TypeError(f"Scope.set: variable {name!r} holds {old.dtype}, got a "
                            f"{value.dtype} value; the program's kernels are built for "
                            f"{old.dtype}: pass value.astype({str(old.dtype)!r})")
        self.writes += 1
        self._on_device.discard(name)
        if old is not None and old.shape == value.shape and old.dtype == value.dtype:
            np.copyto(old, value)
            self.wrote_on_host([name])
        else:
            self._arrays[name] = np.array(value, copy=True, order="C")
            self._device.pop(name, None)
            self.version += 1

    def ensure(self, name: str, shape: Sequence[int], dtype: Any) -> np.ndarray:
        """The host array for `name`, (re)allocated with zeros when missing or of
        another shape or dtype.

        Args:
            name (str): the variable's name.
            shape (sequence of int): the shape it must have.
            dtype (numpy dtype): the dtype it must have.

        Returns:
            numpy.ndarray: the live array.
        """
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
