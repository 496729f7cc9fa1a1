"""Persistence: checkpoints (`save` / `load`) and inference models.

Files (our own format, not Paddle's pickles; Paddle's `.pdparams` / `.pdopt` pickles
load too, through a restricted unpickler):
  <path>.pdparams   the program's Parameters          } arrays files: an uncompressed
  <path>.pdopt      its other persistables (optimizer } `.npz` holding the format version,
                    moments, learning rate, ...)      } a JSON index and one array per
  <prefix>.pdiparams  an inference model's parameters } variable (numbaflow/io/_arrays.py)
  <prefix>.pdmodel  the pruned inference program, as JSON (graph/serialize.py)

The files of one save are committed together (numbaflow/io/_atomic.py): a kill at any
moment leaves either the whole previous save or the whole new one visible, and the next
save to the same place removes what an interrupted one left. Every file of a save carries
its save id, so a load refuses files from different saves. A load checks the files
against the program first and writes nothing into the scope unless every variable
matches; a damaged file raises ValueError naming it.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

from ..executor.scope import global_scope
from ..graph.program import Parameter, Program, Variable, default_main_program
from ..graph.serialize import (FORMAT_VERSION, FileFormatError, check_format,  # noqa: F401
                               program_from_dict, program_to_dict)
from ..graph.verify import verify
from ..io import _arrays, _atomic

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..executor.executor import Executor


# ---------------------------------------------------------------- files of one save
def _writer(arrays, kind, save_id, extra=None):
    def write(f):
        _arrays.write_arrays(f, arrays, kind, save_id, extra, version=FORMAT_VERSION)
    return write


def _read_arrays(path, real_path=None):
    """{name: ndarray} from an arrays file (or a Paddle pickle); ValueError naming the file
    if it is not one we can read."""
    return _arrays.read_arrays(path, real_path)[0]


def _read_group(paths, fn):
    """Read the arrays files of one save: ({path: (arrays, meta)} of those present, id).
    Files from different saves (a torn save, or files mixed by hand) raise ValueError."""
    with _atomic.resolve(paths) as (real, journal_id):
        got = {p: _arrays.read_arrays(p, r) for p, r in real.items() if r is not None}
    ids = {p: meta.get("save_id") for p, (_, meta) in got.items()}
    expected = journal_id if journal_id is not None else next(iter(ids.values()), None)
    if any(i != expected for i in ids.values()):
        raise FileFormatError(
            f"{fn}: the files {sorted(got)} are from different saves (save ids "
            f"{sorted(map(str, ids.values()))}): a torn or mixed checkpoint; save it again or "
            f"restore all of its files together")
    return got, expected


# ---------------------------------------------------------------- helpers
def _as_program(program, fn):
    if program is None:
        return default_main_program()
    inner = getattr(program, "_program", None)     # a CompiledProgram
    if isinstance(inner, Program):
        return inner
    if not isinstance(program, Program):
        raise TypeError(f"{fn}: program must be a Program, got {type(program).__name__}")
    return program


def _persistables(program):
    return [v for v in program.list_vars() if v.persistable and not v.is_data]


def _model_path(model_path, fn):
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


def _gather(variables, scope, fn):
    """{name: array copy} from `scope`; RuntimeError naming the missing ones."""
    missing = [v.name for v in variables if scope.find_var(v.name) is None]
    if missing:
        raise RuntimeError(f"{fn}: {missing} are not in the scope; run the startup program "
                           f"first (exe.run(static.default_startup_program())) or load a "
                           f"checkpoint")
    return {v.name: scope.get(v.name) for v in variables}


def _check_against(variables, found, what):
    """ValueError listing every variable that `found` lacks or holds with another shape/dtype."""
    problems = []
    for v in variables:
        a = found.get(v.name)
        if a is None:
            problems.append(f"{v.name!r}: missing (expected shape {v.shape}, dtype {v.dtype})")
            continue
        shape_ok = a.ndim == len(v.shape) and all(e in (-1, d) for e, d in zip(v.shape, a.shape))
        if not shape_ok or a.dtype != v.dtype:
            problems.append(f"{v.name!r}: expected shape {v.shape}, dtype {v.dtype}; found "
                            f"shape {tuple(a.shape)}, dtype {a.dtype}")
    if problems:
        raise ValueError(f"{what} does not match the program ({len(problems)} variable"
                         f"{'s' if len(problems) > 1 else ''}):\n  " + "\n  ".join(problems) +
                         "\nNothing was loaded. Load into the program that was saved (same "
                         "layers and optimizer), or pass var_list= to load a subset.")


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
        protocol (int): 2, 3 or 4, accepted for Paddle compatibility.
        **configs: accepted for Paddle compatibility; ignored.

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
    program = _as_program(program, "save")
    if not isinstance(protocol, int) or not 2 <= protocol <= 4:
        raise ValueError(f"save: protocol must be 2, 3 or 4 (accepted for Paddle "
                         f"compatibility), got {protocol!r}")
    model_path = _model_path(model_path, "save")
    scope = global_scope()
    scope.before_save()     # Reduce across MPI ranks: a collective gathers the state first
    pers = _persistables(program)
    arrays = _gather(pers, scope, "save")
    params = {v.name: arrays[v.name] for v in pers if isinstance(v, Parameter)}
    others = {v.name: arrays[v.name] for v in pers if not isinstance(v, Parameter)}
    save_id = _atomic.new_save_id()
    _atomic.commit({model_path + ".pdparams": _writer(params, "pdparams", save_id),
                    model_path + ".pdopt": _writer(others, "pdopt", save_id)}, save_id)


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
    program = _as_program(program, "load")
    model_path = _model_path(model_path, "load")
    if var_list is None:
        targets = _persistables(program)
    else:
        block = program.global_block()
        targets = [block.var(v) if isinstance(v, str) else v for v in var_list]
        bad = [v for v in targets if not isinstance(v, Variable)]
        if bad:
            raise TypeError(f"load: var_list must hold Variables or names, got {bad!r}")
    found, read = _read_checkpoint(model_path, "load")
    _check_against(targets, found, f"checkpoint {model_path!r} (read {read})")
    scope = global_scope()
    for v in targets:
        scope.set(v.name, found[v.name], create=True)


def _read_checkpoint(model_path, fn):
    """({name: ndarray} of `model_path.pdparams` and `.pdopt`, [the files read])."""
    got, _ = _read_group([model_path + ".pdparams", model_path + ".pdopt"], fn)
    found = {}
    for arrays, _ in got.values():
        found.update(arrays)
    if not got:
        raise FileNotFoundError(f"{fn}: neither {model_path + '.pdparams'!r} nor "
                                f"{model_path + '.pdopt'!r} exists; was it saved with "
                                f"static.save(program, {model_path!r})?")
    return found, sorted(got)


# ---------------------------------------------------------------- inference models
def _as_var_list(vs, what):
    vs = list(vs) if isinstance(vs, (list, tuple)) else [vs]
    if not vs:
        raise ValueError(f"save_inference_model: {what} must not be empty")
    for v in vs:
        if not isinstance(v, Variable):
            raise TypeError(f"save_inference_model: {what} must hold Variables, got "
                            f"{type(v).__name__}")
    return vs


def _prune(program, feed_names, fetch_names):
    """A for-test copy of `program` with only the ops computing the fetches from the feeds."""
    pruned = program.clone(for_test=True)
    block = pruned.global_block()
    for n in list(feed_names) + list(fetch_names):
        if n not in block.vars:
            raise ValueError(f"save_inference_model: {n!r} is not a forward variable of the "
                             f"program (gradients and optimizer state cannot be fed or fetched)")
    feeds = {block.vars[n] for n in feed_names}
    needed = {block.vars[n] for n in fetch_names}
    keep = set()
    for i in reversed(range(len(block.ops))):
        op = block.ops[i]
        if any(v in needed and v not in feeds for v in op.output_vars()):
            keep.add(i)
            needed.update(op.input_vars())
    produced = set()
    for i in sorted(keep):
        op = block.ops[i]
        for v in op.input_vars():
            if v not in feeds and v not in produced and not v.persistable:
                raise ValueError(f"save_inference_model: fetching {list(fetch_names)} needs "
                                 f"{v.name!r} (read by op {op.type}), which is not in feed_vars; "
                                 f"add it to feed_vars")
        produced.update(op.output_vars())
    for i in reversed(range(len(block.ops))):
        if i not in keep:
            block._remove_op(i)
    used = set(feeds) | {block.vars[n] for n in fetch_names}
    for op in block.ops:
        used.update(op.input_vars())
        used.update(op.output_vars())
    for name, v in list(block.vars.items()):
        if v not in used:
            block._remove_var(name)
    for v in feeds:         # what is fed is an input of the inference program
        v.is_data = True
    return pruned


def _write_inference(model_file, params_file, feed_vars, fetch_vars, program, fn):
    feed_vars = _as_var_list(feed_vars, "feed_vars")
    fetch_vars = _as_var_list(fetch_vars, "fetch_vars")
    program = _as_program(program, fn)
    feed_names = [v.name for v in feed_vars]
    fetch_names = [v.name for v in fetch_vars]
    pruned = _prune(program, feed_names, fetch_names)
    verify(pruned)
    params = _gather(_persistables(pruned), global_scope(), fn)
    save_id = _atomic.new_save_id()
    desc = json.dumps(program_to_dict(pruned, feed_names, fetch_names, save_id),
                      separators=(",", ":")).encode()
    # the parameters file records the program file's hash: a damaged or swapped program
    # file is caught before it is parsed
    extra = {"model_sha256": hashlib.sha256(desc).hexdigest()}
    _atomic.commit({model_file: lambda f: f.write(desc),
                    params_file: _writer(params, "pdiparams", save_id, extra)}, save_id)
    return pruned


def _read_inference(model_file, params_file, fn):
    with _atomic.resolve([model_file, params_file]) as (real, journal_id):
        for path in (model_file, params_file):
            if real[path] is None:
                raise FileNotFoundError(f"{fn}: {path!r} does not exist; was the model saved "
                                        f"with save_inference_model?")
        found, meta = _arrays.read_arrays(params_file, real[params_file])
        with open(real[model_file], "rb") as f:
            raw = f.read()
    desc = _parse_model(raw, model_file, meta.get("model_sha256"), params_file, fn)
    ids = {desc.get("save_id"), meta.get("save_id")}
    if len(ids) != 1 or journal_id is not None and ids != {journal_id}:
        raise FileFormatError(f"{fn}: {model_file!r} and {params_file!r} are from different "
                              f"saves; save the model again")
    block = desc["program"].global_block()
    _check_against(_persistables(desc["program"]), found, f"parameters file {params_file!r}")
    scope = global_scope()
    for v in _persistables(desc["program"]):
        scope.set(v.name, found[v.name], create=True)
    return [desc["program"], list(desc["feed"]), [block.var(n) for n in desc["fetch"]]]


def _parse_model(raw, model_file, digest, params_file, fn):
    """The program description in `raw` with the rebuilt Program under "program", after
    checking it against the hash `params_file` recorded (format version 2)."""
    try:
        desc = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FileFormatError(f"{fn}: {model_file!r} is not a numbaflow model description "
                              f"({e})") from None
    check_format(desc, f"file {model_file!r}")
    if digest is not None and hashlib.sha256(raw).hexdigest() != digest:
        raise FileFormatError(f"{fn}: the program file {model_file!r} is not the one saved with "
                              f"{params_file!r} (damaged, or from another save); save the "
                              f"model again")
    try:
        desc["program"] = program_from_dict(desc)
        verify(desc["program"])
        [desc["program"].global_block().var(n) for n in desc["fetch"]]
        [str(n) for n in desc["feed"]]
    except MemoryError:
        raise
    except Exception as e:          # a damaged (version 1, unhashed) description
        raise FileFormatError(f"{fn}: {model_file!r} is a damaged model description "
                              f"({type(e).__name__}: {e})") from None
    return desc


def _prefix(path_prefix, fn):
    if not isinstance(path_prefix, (str, os.PathLike)):
        raise TypeError(f"{fn}: path_prefix must be a str, got {type(path_prefix).__name__}")
    path_prefix = os.fspath(path_prefix)
    if not os.path.basename(path_prefix) or os.path.isdir(path_prefix):
        raise ValueError(f"{fn}: path_prefix {path_prefix!r} must be a file name prefix (it is "
                         f"a directory); use e.g. {os.path.join(path_prefix, 'inference')!r}")
    return path_prefix


def save_inference_model(path_prefix: str, feed_vars: Variable | Sequence[Variable],
                         fetch_vars: Variable | Sequence[Variable], executor: Executor,
                         program: Program | None = None, **kwargs: object) -> None:
    """Save the forward ops that compute `fetch_vars` from `feed_vars` to
    `path_prefix.pdmodel` and the parameters they read to `path_prefix.pdiparams`.

    Args:
        path_prefix (str): the path prefix of the two files (not a directory).
        feed_vars (Variable or list of Variable): the model's inputs.
        fetch_vars (Variable or list of Variable): the model's outputs.
        executor (Executor): accepted for Paddle compatibility (the global scope is read).
        program (Program, optional): default the default main program.
        **kwargs: `clip_extra` is accepted and ignored.

    Example:
        >>> import os, tempfile
        >>> x = static.data('x', [None, 3])
        >>> predict = static.nn.fc(x, size=2)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> prefix = os.path.join(tempfile.mkdtemp(), 'infer')
        >>> static.save_inference_model(prefix, [x], [predict], exe)
        >>> sorted(os.listdir(os.path.dirname(prefix)))
        ['infer.pdiparams', 'infer.pdmodel']
    """
    path_prefix = _prefix(path_prefix, "save_inference_model")
    unknown = set(kwargs) - {"clip_extra"}
    if unknown:
        raise TypeError(f"save_inference_model: unexpected arguments {sorted(unknown)}")
    _write_inference(path_prefix + ".pdmodel", path_prefix + ".pdiparams", feed_vars,
                     fetch_vars, program, "save_inference_model")


def load_inference_model(path_prefix: str, executor: Executor,
                         **kwargs: object) -> list:
    """Load a model saved by `save_inference_model`; its parameters go to the global scope.

    Args:
        path_prefix (str): the prefix given to `save_inference_model`.
        executor (Executor): the executor that will run it.

    Returns:
        list: [program, feed_target_names, fetch_targets].

    Example:
        >>> import os, tempfile
        >>> x = static.data('x', [None, 3])
        >>> predict = static.nn.fc(x, size=2)
        >>> exe = static.Executor(paddle.CPUPlace())
        >>> _ = exe.run(static.default_startup_program())
        >>> prefix = os.path.join(tempfile.mkdtemp(), 'infer')
        >>> static.save_inference_model(prefix, [x], [predict], exe)
        >>> program, feed_names, fetch_targets = static.load_inference_model(prefix, exe)
        >>> out, = exe.run(program, feed={feed_names[0]: np.ones((2, 3), 'float32')},
        ...                fetch_list=fetch_targets)
        >>> out.shape
        (2, 2)
    """
    if kwargs:
        raise TypeError(f"load_inference_model: unexpected arguments {sorted(kwargs)}")
    path_prefix = _prefix(path_prefix, "load_inference_model")
    return _read_inference(path_prefix + ".pdmodel", path_prefix + ".pdiparams",
                           "load_inference_model")
