"""Scope: the name -> numpy array store that holds persistable state between runs."""
import contextlib

import numpy as np


class Tensor:
    """What `Scope.find_var(name).get_tensor()` returns: convertible with numpy.array."""

    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def __array__(self, dtype=None, copy=None):
        a = self._scope._arrays[self._name]
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
    """Holds arrays by variable name. `version` changes when an array object is replaced,
    which tells compiled plans bound to the old array to rebind."""

    def __init__(self):
        self._arrays = {}
        self.version = 0

    def find_var(self, name):
        """The variable named `name`, or None if this scope has none."""
        return ScopeVariable(self, name) if name in self._arrays else None

    def var(self, name):
        self._arrays.setdefault(name, np.zeros((0,), np.float32))
        return ScopeVariable(self, name)

    def get(self, name):
        """A copy of the array named `name` (KeyError naming it if absent)."""
        try:
            return self._arrays[name].copy()
        except KeyError:
            raise KeyError(f"scope has no variable {name!r}") from None

    def set(self, name, value):
        """Set `name` to `value`. Same shape and dtype: written in place."""
        value = np.asarray(value)
        old = self._arrays.get(name)
        if old is not None and old.shape == value.shape and old.dtype == value.dtype:
            np.copyto(old, value)
        else:
            self._arrays[name] = np.array(value, copy=True, order="C")
            self.version += 1

    def _ensure(self, name, shape, dtype):
        """The array for `name`, (re)allocated if missing or of another shape/dtype."""
        a = self._arrays.get(name)
        if a is None or a.shape != tuple(shape) or a.dtype != dtype:
            a = self._arrays[name] = np.zeros(shape, dtype)
            self.version += 1
        return a

    def local_var_names(self):
        return list(self._arrays)


_global_scope = Scope()
_current = [_global_scope]


def global_scope():
    """The scope used when Executor.run is given none (changed by scope_guard)."""
    return _current[-1]


@contextlib.contextmanager
def scope_guard(scope):
    """Make `scope` the global scope inside the block."""
    if not isinstance(scope, Scope):
        raise TypeError(f"scope_guard expects a Scope, got {type(scope).__name__}")
    _current.append(scope)
    try:
        yield
    finally:
        _current.pop()
