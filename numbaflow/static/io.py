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
from ..formats import paddle_model
from ..io import _arrays, _atomic, _pickle

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
    got, journal_id = _atomic.read_group(paths, _arrays.read_arrays)
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
    program = _as_program(program, "save")
    if not isinstance(protocol, int) or not 2 <= protocol <= 4:
        raise ValueError(f"save: protocol must be 2, 3 or 4 (accepted for Paddle "
                         f"compatibility), got {protocol!r}")
    fmt = configs.get("format", "numbaflow")
    if fmt not in ("numbaflow", "paddle"):
        raise ValueError(f"save: format must be 'numbaflow' or 'paddle', got {fmt!r}")
    model_path = _model_path(model_path, "save")
    scope = global_scope()
    scope.before_save()     # Reduce across MPI ranks: a collective gathers the state first
    pers = _persistables(program)
    arrays = _gather(pers, scope, "save")
    params = {v.name: arrays[v.name] for v in pers if isinstance(v, Parameter)}
    others = {v.name: arrays[v.name] for v in pers if not isinstance(v, Parameter)}
    save_id = _atomic.new_save_id()
    if fmt == "paddle":
        _atomic.commit({model_path + ".pdparams": _pickle.writer(params, protocol),
                        model_path + ".pdopt": _pickle.writer(others, protocol, split=False)},
                       save_id)
        return
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
    found = _check_against(targets, found, f"checkpoint {model_path!r} (read {read})")
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
def _as_var_list(vs, what, allow_empty=False):
    vs = list(vs) if isinstance(vs, (list, tuple)) else [vs]
    if not vs and not allow_empty:
        raise ValueError(f"save_inference_model: {what} must not be empty: name at least "
                         f"one output Variable of the model")
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
            raise ValueError(f"save_inference_model: {n!r} is not a variable of the program "
                             f"saved: pass program= the Program that built it (the one of "
                             f"static.program_guard), or feed/fetch its forward variables "
                             f"(gradients and optimizer state cannot be fed or fetched)")
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
    block.remove_ops([op for i, op in enumerate(block.ops) if i not in keep])
    used = set(feeds) | {block.vars[n] for n in fetch_names}
    for op in block.ops:
        used.update(op.input_vars())
        used.update(op.output_vars())
    for name, v in list(block.vars.items()):
        if v not in used:
            block.remove_var(name)
    for v in feeds:         # what is fed is an input of the inference program
        v.is_data = True
    return pruned


def _program_of(variables, program, fn):
    """The program to save from: `program` if given, else the one the variables were built
    in (a model built under program_guard is not the default main program)."""
    if program is not None:
        return _as_program(program, fn)
    owners = {id(v.block.program): v.block.program for v in variables}
    if len(owners) > 1:
        raise ValueError(f"{fn}: feed_vars and fetch_vars come from {len(owners)} different "
                         f"Programs; build the model in one program and pass it as program=")
    return next(iter(owners.values()), None) or default_main_program()


def _write_inference(model_file, params_file, feed_vars, fetch_vars, program, fn,
                     format="numbaflow"):
    feed_vars = _as_var_list(feed_vars, "feed_vars", allow_empty=True)
    fetch_vars = _as_var_list(fetch_vars, "fetch_vars")
    program = _program_of(feed_vars + fetch_vars, program, fn)
    feed_names = [v.name for v in feed_vars]
    fetch_names = [v.name for v in fetch_vars]
    pruned = _prune(program, feed_names, fetch_names)
    verify(pruned)
    params = _gather(_persistables(pruned), global_scope(), fn)
    if format == "paddle":
        desc = paddle_model.program_to_desc(pruned, feed_names, fetch_names)
        save_id = _atomic.new_save_id()
        _atomic.commit({model_file: lambda f: f.write(desc.SerializeToString()),
                        params_file: lambda f: paddle_model.write_tensors(f, params)}, save_id)
        return pruned
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
    """[program, feed names, fetch targets] of the inference model in the two files
    (numbaflow's JSON + arrays, or Paddle's ProgramDesc + tensor stream); its parameters go
    to the global scope once every one of them checks out."""
    def read(path, real):
        # numbaflow's files: a JSON program or an .npz; anything else is read (and
        # checked) as Paddle's, so a damaged Paddle file gets Paddle's messages
        if path == params_file:
            with open(real, "rb") as f:
                if f.read(2) == b"PK":
                    return _arrays.read_arrays(path, real)
        return _read_bounded(path, real)
    got, journal_id = _atomic.read_group([model_file, params_file], read)
    for path in (model_file, params_file):
        if got[path] is None:
            raise FileNotFoundError(f"{fn}: {path!r} does not exist; was the model saved "
                                    f"with save_inference_model?")
    raw, params = got[model_file], got[params_file]
    if raw[:1] != b"{" and isinstance(params, bytes):
        program, feeds, fetches, found = paddle_model.read_model(raw, params, model_file,
                                                                  params_file)
        desc = {"program": program, "feed": feeds, "fetch": fetches}
    elif isinstance(params, bytes):
        raise FileFormatError(f"{fn}: {params_file!r} is not the arrays file (.npz) that the "
                              f"numbaflow model {model_file!r} needs; save the model again")
    else:
        found, meta = params
        desc = _parse_model(raw, model_file, meta.get("model_sha256"), params_file, fn)
        ids = {desc.get("save_id"), meta.get("save_id")}
        if len(ids) != 1 or journal_id is not None and ids != {journal_id}:
            raise FileFormatError(f"{fn}: {model_file!r} and {params_file!r} are from "
                                  f"different saves; save the model again")
    block = desc["program"].global_block()
    found = _check_against(_persistables(desc["program"]), found,
                           f"parameters file {params_file!r}")
    scope = global_scope()
    for v in _persistables(desc["program"]):
        scope.set(v.name, found[v.name], create=True)
    return [desc["program"], list(desc["feed"]), [block.var(n) for n in desc["fetch"]]]


def _read_bounded(path, real_path):
    """The bytes of a model file, refusing one too large to be a model before reading it."""
    size = os.path.getsize(real_path)
    if size > paddle_model.MAX_FILE_BYTES:
        raise FileFormatError(f"file {path!r} is {size} bytes, more than any model this "
                              f"reads ({paddle_model.MAX_FILE_BYTES}); not a model file?")
    with open(real_path, "rb") as f:
        return f.read()


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
        raise ValueError(f"{fn}: path_prefix {path_prefix!r} is a directory; it must be a file "
                         f"name prefix{_dir_hint(path_prefix, fn)}")
    return path_prefix


def _dir_hint(directory, fn):
    """What to pass instead of the directory `directory`, from the files in it."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    prefixes = [n[:-len(".pdmodel")] for n in names if n.endswith(".pdmodel")]
    if prefixes:
        return f"; it holds the model {os.path.join(directory, prefixes[0])!r}: pass that"
    if "__model__" in names and fn == "load_inference_model":
        return (f"; it is a Paddle 1.x model directory: pass model_filename='__model__', "
                f"params_filename='__params__' (or use fluid.io.load_inference_model)")
    return f", e.g. {os.path.join(directory, 'inference')!r} for inference.pdmodel there"


def _legacy_files(directory, model_filename, params_filename):
    """Paddle 2.x's `load_inference_model(dir, exe, model_filename=, params_filename=)`:
    the files of a model in `directory` (1.x names; '.pdmodel'/'.pdiparams' appended when
    such a file exists)."""
    out = []
    for name, default, ext in ((model_filename, "__model__", ".pdmodel"),
                               (params_filename, "__params__", ".pdiparams")):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"load_inference_model: model_filename/params_filename must be "
                            f"file names (str), got {type(name).__name__}")
        path = os.path.join(directory, name or default)
        out.append(path + ext if name and os.path.exists(path + ext) else path)
    return out


def save_inference_model(path_prefix: str, feed_vars: Variable | Sequence[Variable],
                         fetch_vars: Variable | Sequence[Variable], executor: Executor,
                         program: Program | None = None, format: str = "numbaflow",
                         **kwargs: object) -> None:
    """Save the forward ops that compute `fetch_vars` from `feed_vars` to
    `path_prefix.pdmodel` and the parameters they read to `path_prefix.pdiparams`.

    Args:
        path_prefix (str): the path prefix of the two files (not a directory).
        feed_vars (Variable or list of Variable): the model's inputs (may be empty).
        fetch_vars (Variable or list of Variable): the model's outputs.
        executor (Executor): accepted for Paddle compatibility (the global scope is read).
        program (Program, optional): default the program the variables belong to.
        format (str): "numbaflow" (JSON program + checked arrays file, committed as one
            save) or "paddle" (Paddle's ProgramDesc protobuf + tensor stream, which
            Paddle 2.x, Paddle Inference and paddle2onnx read).
        **kwargs: `clip_extra` and `legacy_format` are accepted and ignored.

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
    unknown = set(kwargs) - {"clip_extra", "legacy_format"}
    if unknown:
        raise TypeError(f"save_inference_model: unexpected arguments {sorted(unknown)}")
    if format not in ("numbaflow", "paddle"):
        raise ValueError(f"save_inference_model: format must be 'numbaflow' or 'paddle', got "
                         f"{format!r}")
    _write_inference(path_prefix + ".pdmodel", path_prefix + ".pdiparams", feed_vars,
                     fetch_vars, program, "save_inference_model", format)


def load_inference_model(path_prefix: str, executor: Executor,
                         **kwargs: object) -> list:
    """Load an inference model, numbaflow's or one Paddle 2.x saved (`.pdmodel` protobuf +
    `.pdiparams`); its parameters go to the global scope.

    Args:
        path_prefix (str): the prefix given to `save_inference_model`; with
            model_filename / params_filename, the directory holding those files.
        executor (Executor): the executor that will run it.
        **kwargs: model_filename, params_filename (Paddle's spelling for a model directory,
            e.g. a 1.x model's '__model__' and '__params__').

    Returns:
        list: [program, feed_target_names, fetch_targets].

    Raises:
        FileFormatError: a damaged file, or an op or attribute numbaflow does not have.

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
    unknown = set(kwargs) - {"model_filename", "params_filename"}
    if unknown:
        raise TypeError(f"load_inference_model: unexpected arguments {sorted(unknown)}; it "
                        f"takes path_prefix, executor and optionally model_filename= / "
                        f"params_filename=")
    if kwargs:
        if not isinstance(path_prefix, (str, os.PathLike)):
            raise TypeError(f"load_inference_model: path_prefix must be a str, got "
                            f"{type(path_prefix).__name__}")
        model_file, params_file = _legacy_files(os.fspath(path_prefix),
                                                kwargs.get("model_filename"),
                                                kwargs.get("params_filename"))
        return _read_inference(model_file, params_file, "load_inference_model")
    path_prefix = _prefix(path_prefix, "load_inference_model")
    return _read_inference(path_prefix + ".pdmodel", path_prefix + ".pdiparams",
                           "load_inference_model")
