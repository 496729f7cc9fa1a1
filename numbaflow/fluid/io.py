"""fluid.io: Paddle 1.x persistence entry points over numbaflow's own file format.

Paddle 1.x writes a directory; so do these: the inference model goes to
`dirname/__model__` (program) and `dirname/__params__` (parameters) unless other file
names are given; `save_persistables` writes `dirname/persistables.pdparams|.pdopt`.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..graph.program import Variable as _Variable, default_main_program
from ..persistence.checkpoint import load, save
from ..persistence import inference_model as _inference
from ..io import DataLoader  # noqa: F401
from ..reader import (batch, buffered, cache, chain, compose, firstn, map_readers,  # noqa: F401
                      shuffle, xmap_readers)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..executor.executor import Executor
    from ..graph.program import Program, Variable

__all__ = ["save_inference_model", "load_inference_model", "save_persistables",
           "load_persistables", "save", "load", "DataLoader", "batch", "shuffle", "buffered",
           "compose", "chain", "map_readers", "xmap_readers", "firstn", "cache"]


def _files(dirname, model_filename, params_filename, fn):
    if not isinstance(dirname, (str, os.PathLike)):
        raise TypeError(f"{fn}: dirname must be a str, got {type(dirname).__name__}")
    return (os.path.join(dirname, model_filename or "__model__"),
            os.path.join(dirname, params_filename or "__params__"))


def save_inference_model(dirname: str, feeded_var_names: str | Sequence[str],
                         target_vars: Variable | Sequence[Variable], executor: Executor,
                         main_program: Program | None = None,
                         model_filename: str | None = None, params_filename: str | None = None,
                         export_for_deployment: bool = True,
                         program_only: bool = False) -> list[str]:
    """Save the pruned forward program and its parameters under `dirname` (as
    `__model__` and `__params__` unless named).

    Args:
        dirname (str): the directory.
        feeded_var_names (str or list of str): the input names.
        target_vars (Variable or list of Variable): the outputs.
        executor (Executor): accepted for Paddle compatibility (the global scope is read).
        main_program (Program, optional): default the default main program.
        model_filename (str, optional): the program's file name.
        params_filename (str, optional): the parameters' file name.
        export_for_deployment (bool): True (default) prunes the program to what the
            targets need; False saves the whole program as it is, as Paddle does (the
            feed and target lists may then be empty).
        program_only (bool): accepted for Paddle compatibility.

    Returns:
        list of str: the fetch target names.

    Example:
        >>> import tempfile
        >>> x = fluid.layers.data('x', [3])
        >>> y_predict = fluid.layers.fc(x, size=1)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> dirname = tempfile.mkdtemp()
        >>> fluid.io.save_inference_model(dirname, ['x'], [y_predict], exe)
        ['fc_0.tmp_1']
        >>> program, feed_names, fetch_targets = fluid.io.load_inference_model(dirname, exe)
        >>> feed_names
        ['x']
    """
    names = [feeded_var_names] if isinstance(feeded_var_names, str) else list(feeded_var_names)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"save_inference_model: feeded_var_names must be names (str), got "
                        f"{bad!r}")
    targets = target_vars if isinstance(target_vars, (list, tuple)) else [target_vars]
    # no main_program: the program the targets were built in (not always the default one)
    program = _inference.program_of([t for t in targets if isinstance(t, _Variable)],
                                    main_program, "save_inference_model")
    block = program.global_block()
    missing = [n for n in names if n not in block.vars]
    if missing:
        raise ValueError(f"save_inference_model: feeded_var_names {missing} are not variables "
                         f"of the program saved; pass main_program= the Program that built them")
    feed_vars = [block.var(n) for n in names]
    model_file, params_file = _files(dirname, model_filename, params_filename,
                                     "save_inference_model")
    _inference.write_inference(model_file, params_file, feed_vars, list(targets), program,
                               "save_inference_model", whole=not export_for_deployment)
    return [v.name for v in targets]


def load_inference_model(dirname: str, executor: Executor, model_filename: str | None = None,
                         params_filename: str | None = None,
                         pserver_endpoints: object = None) -> list:
    """Load a model saved by `save_inference_model`; its parameters go to the global scope.

    Args:
        dirname (str): the directory.
        executor (Executor): the executor that will run it.
        model_filename (str, optional): the program's file name.
        params_filename (str, optional): the parameters' file name.
        pserver_endpoints: accepted for Paddle compatibility.

    Returns:
        list: [program, feed_target_names, fetch_targets].

    Example:
        >>> import tempfile
        >>> x = fluid.layers.data('x', [3])
        >>> y_predict = fluid.layers.fc(x, size=1)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> dirname = tempfile.mkdtemp()
        >>> _ = fluid.io.save_inference_model(dirname, ['x'], [y_predict], exe)
        >>> program, feed_names, fetch_targets = fluid.io.load_inference_model(dirname, exe)
        >>> feed = {'x': np.ones((2, 3), 'float32')}
        >>> out, = exe.run(program, feed=feed, fetch_list=fetch_targets)
        >>> out.shape
        (2, 1)
    """
    model_file, params_file = _files(dirname, model_filename, params_filename,
                                     "load_inference_model")
    return _inference.read_inference(model_file, params_file, "load_inference_model")


def save_persistables(executor: Executor, dirname: str, main_program: Program | None = None,
                      filename: str | None = None) -> None:
    """Save every persistable of `main_program` (parameters and optimizer state) to
    `dirname/<filename or 'persistables'>.pdparams|.pdopt`.

    Args:
        executor (Executor): accepted for Paddle compatibility (the global scope is read).
        dirname (str): the directory.
        main_program (Program, optional): default the default main program.
        filename (str, optional): the file name prefix.

    Example:
        >>> import os, tempfile
        >>> x = fluid.layers.data('x', [3])
        >>> _ = fluid.layers.fc(x, size=1)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> dirname = tempfile.mkdtemp()
        >>> fluid.io.save_persistables(exe, dirname)
        >>> sorted(os.listdir(dirname))
        ['persistables.pdopt', 'persistables.pdparams']
    """
    program = main_program if main_program is not None else default_main_program()
    save(program, os.path.join(dirname, filename or "persistables"))


def load_persistables(executor: Executor, dirname: str, main_program: Program | None = None,
                      filename: str | None = None) -> None:
    """Load what save_persistables wrote (checked against `main_program` first).

    Args:
        executor (Executor): the executor.
        dirname (str): the directory.
        main_program (Program, optional): default the default main program.
        filename (str, optional): the file name prefix.

    Raises:
        FileNotFoundError: nothing was saved there.
        ValueError: a variable is missing or differs in shape or dtype.

    Example:
        >>> import tempfile
        >>> x = fluid.layers.data('x', [3])
        >>> _ = fluid.layers.fc(x, size=1)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> dirname = tempfile.mkdtemp()
        >>> fluid.io.save_persistables(exe, dirname)
        >>> fluid.io.load_persistables(exe, dirname)
    """
    program = main_program if main_program is not None else default_main_program()
    load(program, os.path.join(dirname, filename or "persistables"), executor)
