"""A Layer's state: `state_dict()` / `set_state_dict()` with Paddle's structured names
(`conv.weight`, `bn._mean`), values read from and written to a Scope. Mixed into `Layer`
(numbaflow/nn/layer/layers.py)."""
from __future__ import annotations

import re
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ...executor.scope import Scope


class LayerState:
    """The state methods of `paddle.nn.Layer`.

    Example:
        >>> list(paddle.nn.Linear(2, 2).state_dict(keys_only=True))
        ['weight', 'bias']
    """

    def _own_state(self):
        """This layer's own parameters, then its persistable buffers."""
        return list(self._parameters.items()) + [
            (n, b) for n, b in self._buffers.items()
            if n not in self._non_persistable_buffer_names_set]

    # ------------------------------------------------------------------ state
    def _own_sublayers(self):
        return [(n, layer) for n, layer in self._sub_layers.items() if layer is not None]

    def _state_items(self, prefix="", include_sublayers=True):
        """[(structured name, Variable)] as Paddle's _state_dict_impl makes them: each
        layer's parameters, then its persistable buffers, then its sublayers' (a shared
        parameter under each of its names, as Paddle); `prefix` is put before each key."""
        out = [(prefix + name, v) for name, v in self._own_state() if v is not None]
        if include_sublayers:
            for name, layer in self._own_sublayers():
                out += layer._state_items(f"{prefix}{name}.")
        return out

    def state_dict(self, destination: dict | None = None, include_sublayers: bool = True,
                   structured_name_prefix: str = "", use_hook: bool = True,
                   scope: Scope | None = None, keys_only: bool = False) -> dict:
        """{structured name: ndarray} of the parameters and persistable buffers, read from
        the scope (run the startup program first). Save it with
        `paddle.save(state, 'model.pdparams', format='paddle')` for Paddle.

        Args:
            destination (dict, optional): filled and returned.
            include_sublayers (bool): also the sublayers' state.
            structured_name_prefix (str): put before every key (e.g. 'model.').
            use_hook (bool): accepted for Paddle compatibility.
            scope (Scope, optional): default static.global_scope().
            keys_only (bool): the keys mapped to the Variables, without reading the scope.

        Returns:
            dict: {'fc.weight': array, ...}.

        Example:
            >>> fc = paddle.nn.Linear(2, 3)
            >>> exe = static.Executor(); _ = exe.run(static.default_startup_program())
            >>> {k: v.shape for k, v in fc.state_dict().items()}
            {'weight': (2, 3), 'bias': (3,)}
        """
        out = OrderedDict() if destination is None else destination
        items = self._state_items(structured_name_prefix, include_sublayers)
        if keys_only:
            out.update(items)
            return out
        from ...executor.scope import global_scope
        scope = global_scope() if scope is None else scope
        missing = [v.name for _, v in items if scope.find_var(v.name) is None]
        if missing:
            raise RuntimeError(
                f"{self._full_name}.state_dict: the scope holds no value for {missing}: run "
                f"the startup program first (exe.run(startup_program)), or pass the scope "
                f"the program ran in (scope=...)")
        for key, v in items:
            out[key] = scope.get(v.name)
        return out

    def set_state_dict(self, state_dict: dict, use_structured_name: bool = True,
                       scope: Scope | None = None) -> tuple[list[str], list[str]]:
        """Write `state_dict` (e.g. `paddle.load('model.pdparams')`, Paddle's or
        numbaflow's) into the scope. All shapes are checked first: a mis-shaped key raises
        naming each such key (nothing is set); keys the dict lacks keep their values
        (warned, as Paddle does).

        Args:
            state_dict (dict): {structured name (or parameter name): array}.
            use_structured_name (bool): keys are structured names (`fc.weight`); False:
                parameter names (`linear_0.w_0`).
            scope (Scope, optional): default static.global_scope().

        Returns:
            tuple: (missing_keys, unexpected_keys).

        Raises:
            ValueError: a value's shape differs from its parameter's.

        Example:
            >>> fc = paddle.nn.Linear(2, 1)
            >>> missing, unexpected = fc.set_state_dict({'weight': np.ones((2, 1), 'float32'),
            ...                                          'bias': np.zeros(1, 'float32')})
            >>> float(static.global_scope().get(fc.weight.name).sum())
            2.0
        """
        from ...executor.scope import global_scope
        if not isinstance(state_dict, dict):
            raise TypeError(f"{self._full_name}.set_state_dict: expected a dict of arrays "
                            f"(e.g. paddle.load(path)), got {type(state_dict).__name__}")
        items = [(k if use_structured_name else v.name, v) for k, v in self._state_items()]
        # a parameter shared under several keys (Paddle lists each) is set by any of them
        given = {v.name for k, v in items if k in state_dict}
        missing = [k for k, v in items if k not in state_dict and v.name not in given]
        known = {k for k, _ in items}
        unexpected = [k for k in state_dict if k not in known and not k.endswith("@@")]
        found, bad = {}, []
        for key, v in items:
            if key in state_dict:
                a = np.asarray(state_dict[key])
                if tuple(a.shape) != tuple(v.shape):
                    bad.append(f"{key!r} (parameter {v.name}) has shape {tuple(v.shape)} but "
                               f"the dict gives {tuple(a.shape)}")
                found[v.name] = a.astype(v.dtype, copy=False)
        if bad:
            raise ValueError(f"{self._full_name}.set_state_dict: {len(bad)} shape "
                             f"mismatch(es), nothing was set: " + "; ".join(bad) +
                             ". Is the checkpoint of this architecture?")
        if missing:
            hint = ""
            if unexpected:
                hint = (f" (the dict has {unexpected[:4]} instead"
                        + ("; keys like 'linear_0.w_0' are parameter names: pass "
                           "use_structured_name=False" if use_structured_name and
                           any(re.search(r"\.[wb]_\d+$", k) for k in unexpected) else "")
                        + ")")
            warnings.warn(f"{self._full_name}.set_state_dict: no value for {missing}; they "
                          f"keep their current values{hint}", stacklevel=2)
        scope = global_scope() if scope is None else scope
        for name, a in found.items():
            scope.set(name, a, create=True)
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict
