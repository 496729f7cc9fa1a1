"""State dicts: `paddle.save` / `paddle.load` and `static.load_program_state` /
`static.set_program_state` (dicts {name: ndarray}, over the files of
persistence/checkpoint.py).
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ..executor.scope import global_scope
from ..graph.program import Parameter, Program, Variable
from ..persistence import arrays as array_files
from ..persistence import atomic, paddle_pickle
from ..persistence.checkpoint import (arrays_writer, as_program, check_against,
                                      checkpoint_prefix, gather, persistables, read_checkpoint)

if TYPE_CHECKING:
    from collections.abc import Sequence


def load_program_state(model_path: str,
                       var_list: Sequence[Variable | str] | None = None) -> dict:
    """Read a checkpoint (`model_path.pdparams` + `.pdopt`, numbaflow's or a Paddle 2.x
    pickle) into a dict, for `set_program_state`.

    Args:
        model_path (str): the checkpoint's path prefix.
        var_list (list of Variable or str, optional): only these variables.

    Returns:
        dict: {name: ndarray}.

    Raises:
        FileNotFoundError: neither file exists.
        ValueError: a damaged or torn checkpoint, or a var_list name it lacks.

    Example:
        >>> import os, tempfile
        >>> x = static.data('x', [None, 3])
        >>> y = static.nn.fc(x, size=2)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> path = os.path.join(tempfile.mkdtemp(), 'model')
        >>> static.save(static.default_main_program(), path)
        >>> sorted(static.load_program_state(path))
        ['fc_0.b_0', 'fc_0.w_0']
    """
    model_path = checkpoint_prefix(model_path, "load_program_state")
    found, _ = read_checkpoint(model_path, "load_program_state")
    if var_list is None:
        return found
    names = [v.name if isinstance(v, Variable) else v for v in var_list]
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"load_program_state: {missing} are not in checkpoint {model_path!r}")
    return {n: found[n] for n in names}


def set_program_state(program: Program, state_dict: dict) -> None:
    """Set the persistables of `program` found in `state_dict` into the global scope,
    after checking all their shapes and dtypes; warns naming those it does not hold.

    Args:
        program (Program): whose persistables to set.
        state_dict (dict): {name: array}, e.g. from `load_program_state`.

    Raises:
        TypeError: state_dict is not a dict.
        ValueError: a shape or dtype mismatch (then nothing is set).

    Example:
        >>> x = static.data('x', [None, 3])
        >>> y = static.nn.fc(x, size=2)
        >>> state = {'fc_0.w_0': np.ones((3, 2), 'float32'),
        ...          'fc_0.b_0': np.zeros(2, 'float32')}
        >>> static.set_program_state(static.default_main_program(), state)
        >>> float(static.global_scope().get('fc_0.w_0').sum())
        6.0
    """
    set_state(as_program(program, "set_program_state"), state_dict, None,
              "set_program_state")


def set_state(program, state_dict, scope, fn):
    """Check then set the persistables of `program` found in `state_dict` (in `scope`,
    default the global one); warn naming the absent ones and the unused keys."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"{fn}: state_dict must be a dict of arrays, got "
                        f"{type(state_dict).__name__}")
    pers = persistables(program)
    present = [v for v in pers if v.name in state_dict]
    found = check_against(present, {v.name: np.asarray(state_dict[v.name]) for v in present},
                           f"{fn}: state_dict")
    absent = [v.name for v in pers if v.name not in state_dict]
    if absent:
        warnings.warn(f"{fn}: state_dict has no value for {absent}; they keep their current "
                      f"values", stacklevel=3)
    unused = sorted(set(state_dict) - {v.name for v in pers} - {paddle_pickle.NAME_TABLE_KEY})
    if unused:
        warnings.warn(f"{fn}: the program has no persistable {unused}; those entries were "
                      f"not used", stacklevel=3)
    scope = global_scope() if scope is None else scope
    for v in present:
        scope.set(v.name, found[v.name], create=True)


def program_state_dict(program, mode, scope):
    """`Program.state_dict`: {name: ndarray copy} of the persistables `mode` selects."""
    if mode not in ("all", "param", "opt"):
        raise ValueError(f"state_dict: mode must be 'all', 'param' or 'opt', got {mode!r}")
    pers = [v for v in persistables(program)
            if mode == "all" or isinstance(v, Parameter) == (mode == "param")]
    scope = global_scope() if scope is None else scope
    return {k: np.array(a) for k, a in gather(pers, scope, "state_dict").items()}


Program._state_io = sys.modules[__name__]


def save_state(obj: dict, path: str, protocol: int = 4, **configs: object) -> None:
    """`paddle.save`: write a dict {name: array} to the file `path` (numbaflow's arrays
    format, committed atomically: a kill leaves the old file or the new one).

    Args:
        obj (dict): {name: array}.
        path (str): the file.
        protocol (int): 2, 3 or 4: the pickle protocol of format="paddle".
        **configs: `format="paddle"` writes Paddle's pickle (which `paddle.load` in
            Paddle reads); others are accepted for Paddle compatibility and ignored.

    Raises:
        TypeError: obj is not a dict of numeric arrays.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), 'w.pdparams')
        >>> paddle.save({'w': np.arange(3)}, path)
        >>> paddle.load(path)['w']
        array([0, 1, 2])
    """
    if not isinstance(path, (str, os.PathLike)) or not os.path.basename(os.fspath(path)):
        raise TypeError(f"save: path must be a file path (str), got {path!r}")
    if not isinstance(protocol, int) or not 2 <= protocol <= 4:
        raise ValueError(f"save: protocol must be 2, 3 or 4, got {protocol!r}")
    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        raise TypeError(f"save: numbaflow saves a dict {{name: array}}, got "
                        f"{type(obj).__name__}; other objects are not supported")
    arrays = {k: np.asarray(v) for k, v in obj.items()}
    bad = [k for k, a in arrays.items() if a.dtype.hasobject]
    if bad:
        raise TypeError(f"save: values of {bad} are not numeric arrays")
    fmt = configs.get("format", "numbaflow")
    if fmt not in ("numbaflow", "paddle"):
        raise ValueError(f"save: format must be 'numbaflow' or 'paddle', got {fmt!r}")
    save_id = atomic.new_save_id()
    atomic.commit({os.fspath(path): paddle_pickle.writer(arrays, protocol) if fmt == "paddle"
                    else arrays_writer(arrays, "state", save_id)}, save_id)


def load_state(path: str, **configs: object) -> dict:
    """`paddle.load`: the dict of arrays in the file `path`, written by `paddle.save`,
    `static.save` (one of its files) or Paddle 2.x (`paddle.save` / `static.save` pickles,
    read without running any code from them).

    Args:
        path (str): the file (e.g. 'model.pdparams').
        **configs: `keep_name_table=True` keeps the `StructuredToParameterName@@` table of
            a Paddle state dict; `return_numpy` etc. are accepted and ignored.

    Returns:
        dict: {name: ndarray}.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a damaged file, or a pickle holding anything but numeric arrays.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), 'w.pdparams')
        >>> paddle.save({'w': np.ones(2, 'float32')}, path)
        >>> paddle.load(path)
        {'w': array([1., 1.], dtype=float32)}
    """
    unknown = set(configs) - {"keep_name_table", "return_numpy", "model_filename",
                              "params_filename"}
    if unknown:
        raise TypeError(f"load: unexpected arguments {sorted(unknown)}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load: path must be a file path (str), got {type(path).__name__}")
    path = os.fspath(path)
    group = [path]                 # the save it belongs to names its journal by the first file
    for first, ext in ((".pdparams", ".pdopt"), (".pdmodel", ".pdiparams"),
                       (".nfmodel", ".nfparams")):
        if path.endswith(ext):
            group = [path[:-len(ext)] + first, path]
    keep = bool(configs.get("keep_name_table", False))
    got, _ = atomic.read_group(
        group, lambda p, real: array_files.read_arrays(p, real, keep)[0] if p == path else None)
    if got[path] is None:
        hint = (f"; a checkpoint prefix? give the file, e.g. {path + '.pdparams'!r}"
                if os.path.exists(path + ".pdparams") else "")
        raise FileNotFoundError(f"load: {path!r} does not exist{hint}")
    return got[path]
