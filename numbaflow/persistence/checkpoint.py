"""Checkpoints: `static.save` / `static.load` (the program's persistables, from and into
the global scope), and the helpers the inference model and program-state code share."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..executor.scope import global_scope
from ..graph.program import Parameter, Program, Variable, default_main_program
from ..graph.serialize import FORMAT_VERSION, FileFormatError
from . import arrays as array_files
from . import atomic, paddle_pickle

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..executor.executor import Executor


# ---------------------------------------------------------------- files of one save
def arrays_writer(arrays, kind, save_id, extra=None):
    """A writer (for atomic.commit) of {name: ndarray} as one arrays file of this save."""
    def write(f):
        array_files.write_arrays(f, arrays, kind, save_id, extra, version=FORMAT_VERSION)
    return write


def read_arrays(path, real_path=None):
    """{name: ndarray} from an arrays file (or a Paddle pickle); ValueError naming the file
    if it is not one we can read."""
    return array_files.read_arrays(path, real_path)[0]


def read_group(paths, fn):
    """Read the arrays files of one save: ({path: (arrays, meta)} of those present, id).
    Files from different saves (a torn save, or files mixed by hand) raise ValueError."""
    got, journal_id = atomic.read_group(paths, array_files.read_arrays)
    got = {p: g for p, g in got.items() if g is not None}
    ids = {p: meta.get("save_id") for p, (_, meta) in got.items()}
    expected = journal_id if journal_id is not None else next(iter(ids.values()), None)
    if any(i != expected for i in ids.values()):
        raise FileFormatError(
            f"{fn}: the files {sorted(got)} are from different saves (save ids "
            f"{sorted(map(str, ids.values()))}): a torn or mixed checkpoint; save it again or "
            f"restore all of its files together")
    return got, expected


# ---------------------------------------------------------------- helpers
def as_program(program, fn):
    """The Program behind `program` (None: the default main program; a CompiledProgram:
    its source); TypeError naming `fn` for anything else."""
    if program is None:
        return default_main_program()
    inner = getattr(program, "_program", None)     # a CompiledProgram
    if isinstance(inner, Program):
        return inner
    if not isinstance(program, Program):
        raise TypeError(f"{fn}: program must be a Program, got {type(program).__name__}")
    return program


def persistables(program):
    """The variables a checkpoint holds: persistable, not fed."""
    return [v for v in program.list_vars() if v.persistable and not v.is_data]


def checkpoint_prefix(model_path, fn):
    """`model_path` checked, without a `.pdparams` / `.pdopt` suffix."""
    if not isinstance(model_path, (str, os.PathLike)):
        raise TypeError(f"{fn}: model_path must be a str path, got {type(model_path).__name__}")
    model_path = os.fspath(model_path)
    for ext in (".pdparams", ".pdopt"):
        if model_path.endswith(ext):
            model_path = model_path[:-len(ext)]
    if not os.path.basename(model_path):
        raise ValueError(f"{fn}: model_path {model_path!r} must end with a file name prefix, "
                         f"e.g. 'checkpoints/model'")
    return model_path


def gather(variables, scope, fn):
    """{name: array copy} from `scope`; RuntimeError naming the missing ones."""
    missing = [v.name for v in variables if scope.find_var(v.name) is None]
    if missing:
        raise RuntimeError(f"{fn}: {missing} are not in the scope; run the startup program "
                           f"first (exe.run(static.default_startup_program())) or load a "
                           f"checkpoint")
    return {v.name: scope.get(v.name) for v in variables}


def check_against(variables, found, what):
    """{name: array} of `variables` from `found`, after checking each: ValueError listing
    every variable that `found` lacks or holds with another shape/dtype. A one-element
    array of shape () where the variable is (1,), or the reverse, is the same scalar
    (Paddle >= 2.5 keeps scalars 0-D, numbaflow's optimizers (1,)): it is reshaped."""
    problems, out = [], {}
    for v in variables:
        a = found.get(v.name)
        if a is None:
            problems.append(f"{v.name!r}: missing (expected shape {v.shape}, dtype {v.dtype})")
            continue
        if a.size == 1 and a.ndim <= 1 and v.shape in ((), (1,), (-1,)):
            a = a.reshape(() if v.shape == () else (1,))
        shape_ok = a.ndim == len(v.shape) and all(e in (-1, d) for e, d in zip(v.shape, a.shape))
        if not shape_ok or a.dtype != v.dtype:
            problems.append(f"{v.name!r}: expected shape {v.shape}, dtype {v.dtype}; found "
                            f"shape {tuple(a.shape)}, dtype {a.dtype}")
        out[v.name] = a
    if problems:
        raise ValueError(f"{what} does not match the program ({len(problems)} of "
                         f"{len(variables)} variables):\n  " + "\n  ".join(problems) +
                         "\nNothing was loaded (the other variables match). Load into the "
                         "program that was saved (same layers and optimizer), or pass "
                         "var_list= to load a subset.")
    return out


# ---------------------------------------------------------------- checkpoints
def save(program: Program, model_path: str, protocol: int = 4, **configs: object) -> None:
    """Save `program`'s parameters to `model_path.pdparams` and its other persistables
    (optimizer state, learning rate) to `model_path.pdopt`, from the global scope.

    Under mpiexec with ReduceStrategy.Reduce, each rank holds only the optimizer state of
    the parameters its places own: call save on EVERY rank (it first gathers that state
    with one collective; write to a per-rank path or let one rank's file win).

    Args:
        program (Program or CompiledProgram): whose persistables to save.
        model_path (str): the path prefix of the two files.
        protocol (int): 2, 3 or 4: the pickle protocol of format="paddle" files.
        **configs: `format="paddle"` writes Paddle's layout (a pickled dict of arrays per
            file, which `paddle.static.load` reads, so training resumes in Paddle);
            the default "numbaflow" writes checked arrays files. Others are ignored.

    Raises:
        RuntimeError: a persistable is not in the scope (run the startup program first).

    Example:
        >>> import os, tempfile
        >>> x = static.data('x', [None, 3])
        >>> y = static.nn.fc(x, size=2)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> path = os.path.join(tempfile.mkdtemp(), 'model')
        >>> static.save(static.default_main_program(), path)
        >>> sorted(os.listdir(os.path.dirname(path)))
        ['model.pdopt', 'model.pdparams']
    """
    program = as_program(program, "save")
    if not isinstance(protocol, int) or not 2 <= protocol <= 4:
        raise ValueError(f"save: protocol must be 2, 3 or 4 (accepted for Paddle "
                         f"compatibility), got {protocol!r}")
    fmt = configs.get("format", "numbaflow")
    if fmt not in ("numbaflow", "paddle"):
        raise ValueError(f"save: format must be 'numbaflow' or 'paddle', got {fmt!r}")
    model_path = checkpoint_prefix(model_path, "save")
    scope = global_scope()
    scope.before_save()     # Reduce across MPI ranks: a collective gathers the state first
    pers = persistables(program)
    arrays = gather(pers, scope, "save")
    params = {v.name: arrays[v.name] for v in pers if isinstance(v, Parameter)}
    others = {v.name: arrays[v.name] for v in pers if not isinstance(v, Parameter)}
    save_id = atomic.new_save_id()
    if fmt == "paddle":
        atomic.commit({model_path + ".pdparams": paddle_pickle.writer(params, protocol),
                        model_path + ".pdopt": paddle_pickle.writer(others, protocol, split=False)},
                       save_id)
        return
    atomic.commit({model_path + ".pdparams": arrays_writer(params, "pdparams", save_id),
                    model_path + ".pdopt": arrays_writer(others, "pdopt", save_id)}, save_id)


def load(program: Program, model_path: str, executor: Executor | None = None,
         var_list: Sequence[Variable | str] | None = None) -> None:
    """Load what `save` wrote into the global scope, after checking every persistable of
    `program` (or only `var_list`) against the files: a missing variable, or a shape or
    dtype mismatch, raises one ValueError naming each, and then nothing is loaded.

    Args:
        program (Program or CompiledProgram): whose persistables to load.
        model_path (str): the path prefix given to `save`.
        executor (Executor, optional): accepted for Paddle compatibility.
        var_list (list of Variable or str, optional): load only these.

    Raises:
        FileNotFoundError: neither file exists.
        ValueError: a variable is missing from the files or differs in shape or dtype.

    Example:
        >>> import os, tempfile
        >>> x = static.data('x', [None, 3])
        >>> y = static.nn.fc(x, size=2)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> path = os.path.join(tempfile.mkdtemp(), 'model')
        >>> static.save(static.default_main_program(), path)
        >>> w = static.global_scope().get('fc_0.w_0')
        >>> static.global_scope().set('fc_0.w_0', np.zeros_like(w))
        >>> static.load(static.default_main_program(), path, exe)
        >>> np.array_equal(static.global_scope().get('fc_0.w_0'), w)
        True
    """
    program = as_program(program, "load")
    model_path = checkpoint_prefix(model_path, "load")
    if var_list is None:
        targets = persistables(program)
    else:
        block = program.global_block()
        targets = [block.var(v) if isinstance(v, str) else v for v in var_list]
        bad = [v for v in targets if not isinstance(v, Variable)]
        if bad:
            raise TypeError(f"load: var_list must hold Variables or names, got {bad!r}")
    found, read = read_checkpoint(model_path, "load")
    found = check_against(targets, found, f"checkpoint {model_path!r} (read {read})")
    scope = global_scope()
    for v in targets:
        scope.set(v.name, found[v.name], create=True)


def read_checkpoint(model_path, fn):
    """({name: ndarray} of `model_path.pdparams` and `.pdopt`, [the files read])."""
    got, _ = read_group([model_path + ".pdparams", model_path + ".pdopt"], fn)
    found = {}
    for arrays, _ in got.values():
        found.update(arrays)
    if not got:
        model = [model_path + e for e in (".nfmodel", ".pdmodel") if os.path.exists(model_path + e)]
        how = (f"; {model[0]!r} is an inference model: load it with "
               f"static.load_inference_model({model_path!r}, exe)" if model else
               f"; was it saved with static.save(program, {model_path!r})?")
        raise FileNotFoundError(f"{fn}: neither {model_path + '.pdparams'!r} nor "
                                f"{model_path + '.pdopt'!r} exists{how}")
    return found, sorted(got)
