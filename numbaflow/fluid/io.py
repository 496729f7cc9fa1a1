"""fluid.io: Paddle 1.x persistence entry points over numbaflow's own file format.

Paddle 1.x writes a directory; so do these: the inference model goes to
`dirname/__model__` (program) and `dirname/__params__` (parameters) unless other file
names are given; `save_persistables` writes `dirname/persistables.pdparams|.pdopt`.
"""
import os

from ..graph.program import default_main_program
from ..static.io import _as_program, _read_inference, _write_inference, load, save
from ..io import DataLoader  # noqa: F401
from ..reader import (batch, buffered, cache, chain, compose, firstn, map_readers,  # noqa: F401
                      shuffle, xmap_readers)


def _files(dirname, model_filename, params_filename, fn):
    if not isinstance(dirname, (str, os.PathLike)):
        raise TypeError(f"{fn}: dirname must be a str, got {type(dirname).__name__}")
    return (os.path.join(dirname, model_filename or "__model__"),
            os.path.join(dirname, params_filename or "__params__"))


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False):
    """Save the pruned forward program and its parameters under `dirname`; returns the
    fetch target names.

    >>> fluid.io.save_inference_model('model_dir', ['x'], [y_predict], exe)
    """
    program = _as_program(main_program, "save_inference_model")
    names = [feeded_var_names] if isinstance(feeded_var_names, str) else list(feeded_var_names)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"save_inference_model: feeded_var_names must be names (str), got "
                        f"{bad!r}")
    block = program.global_block()
    feed_vars = [block.var(n) for n in names]
    targets = target_vars if isinstance(target_vars, (list, tuple)) else [target_vars]
    model_file, params_file = _files(dirname, model_filename, params_filename,
                                     "save_inference_model")
    _write_inference(model_file, params_file, feed_vars, list(targets), program,
                     "save_inference_model")
    return [v.name for v in targets]


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         pserver_endpoints=None):
    """[program, feed_target_names, fetch_targets] of a model saved by save_inference_model."""
    model_file, params_file = _files(dirname, model_filename, params_filename,
                                     "load_inference_model")
    return _read_inference(model_file, params_file, "load_inference_model")


def save_persistables(executor, dirname, main_program=None, filename=None):
    """Save every persistable of `main_program` (parameters and optimizer state)."""
    program = main_program if main_program is not None else default_main_program()
    save(program, os.path.join(dirname, filename or "persistables"))


def load_persistables(executor, dirname, main_program=None, filename=None):
    """Load what save_persistables wrote (checked against `main_program` first)."""
    program = main_program if main_program is not None else default_main_program()
    load(program, os.path.join(dirname, filename or "persistables"), executor)
