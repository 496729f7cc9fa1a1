"""Inference models: `static.save_inference_model` / `load_inference_model` (a pruned
program and its parameters), in numbaflow's format (`.nfmodel` JSON program, `.nfparams`
arrays file) and Paddle's (`.pdmodel` protobuf, `.pdiparams` tensor stream).

A `.pdmodel`/`.pdiparams` pair numbaflow writes is always Paddle's format (Paddle reads
it); numbaflow's own format, with its save ids and hashes, has its own names. numbaflow
0.1.0 wrote its own format under Paddle's names: such files still load (told apart by
their content), with a warning saying how to rewrite them."""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from typing import TYPE_CHECKING

from ..executor.scope import global_scope
from ..formats import paddle_model, paddle_writer
from ..graph.program import Program, Variable, default_main_program
from ..graph.serialize import FileFormatError, check_format, program_from_dict, program_to_dict
from ..graph.verify import verify
from . import arrays as array_files
from . import atomic
from .checkpoint import arrays_writer, as_program, check_against, gather, persistables
from .outside import open_outside, read_outside

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..executor.executor import Executor


# the files of an inference model at a prefix, by format
OWN_EXT = (".nfmodel", ".nfparams")         # numbaflow's JSON program + checked arrays
PADDLE_EXT = (".pdmodel", ".pdiparams")     # Paddle's ProgramDesc + tensor stream


def model_files(path_prefix):
    """(model file, params file) of the inference model at `path_prefix`: numbaflow's pair
    where its model file exists (or neither exists), else Paddle's names."""
    own = [path_prefix + e for e in OWN_EXT]
    if os.path.exists(own[0]) or not os.path.exists(path_prefix + PADDLE_EXT[0]):
        return own
    return [path_prefix + e for e in PADDLE_EXT]


def _missing(path_prefix, fn):
    """FileNotFoundError for a prefix with no inference model, saying what is there."""
    if os.path.exists(path_prefix + ".pdparams"):
        there = (f"; {path_prefix + '.pdparams'!r} is a training checkpoint (static.save / "
                 f"paddle.save): load it with static.load(program, {path_prefix!r}, exe) or "
                 f"paddle.load({path_prefix + '.pdparams'!r})")
    else:
        there = "; was the model saved with save_inference_model?"
    return FileNotFoundError(f"{fn}: no inference model at {path_prefix!r}: neither "
                             f"{path_prefix + OWN_EXT[0]!r} (numbaflow's format) nor "
                             f"{path_prefix + PADDLE_EXT[0]!r} (Paddle's) exists{there}")


# ---------------------------------------------------------------- inference models
def checked_var_list(vs, what, allow_empty=False):
    """`vs` (one Variable or a list) as a list of Variables; TypeError/ValueError naming
    `what` otherwise."""
    vs = list(vs) if isinstance(vs, (list, tuple)) else [vs]
    if not vs and not allow_empty:
        raise ValueError(f"save_inference_model: {what} must not be empty: name at least "
                         f"one output Variable of the model")
    for v in vs:
        if not isinstance(v, Variable):
            raise TypeError(f"save_inference_model: {what} must hold Variables, got "
                            f"{type(v).__name__}")
    return vs


def prune(program, feed_names, fetch_names):
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
            # (a tensor array read before any write is Paddle's empty array)
            if v not in feeds and v not in produced and not v.persistable and \
                    not v.is_tensor_array:
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


def program_of(variables, program, fn):
    """The program to save from: `program` if given, else the one the variables were built
    in (a model built under program_guard is not the default main program)."""
    if program is not None:
        return as_program(program, fn)
    owners = {id(v.block.program): v.block.program for v in variables}
    if len(owners) > 1:
        raise ValueError(f"{fn}: feed_vars and fetch_vars come from {len(owners)} different "
                         f"Programs; build the model in one program and pass it as program=")
    return next(iter(owners.values()), None) or default_main_program()


def write_inference(model_file, params_file, feed_vars, fetch_vars, program, fn,
                     format="numbaflow", whole=False):
    """Prune `program` to the fetches and commit the model and parameter files together;
    `whole`: save the program as it is, unpruned (Paddle's export_for_deployment=False,
    where the feeds and fetches may be empty)."""
    feed_vars = checked_var_list(feed_vars, "feed_vars", allow_empty=True)
    fetch_vars = checked_var_list(fetch_vars, "fetch_vars", allow_empty=whole)
    program = program_of(feed_vars + fetch_vars, program, fn)
    feed_names = [v.name for v in feed_vars]
    fetch_names = [v.name for v in fetch_vars]
    pruned = program if whole else prune(program, feed_names, fetch_names)
    verify(pruned)
    params = gather(persistables(pruned), global_scope(), fn)
    if format == "paddle":
        desc = paddle_writer.program_to_desc(pruned, feed_names, fetch_names)
        save_id = atomic.new_save_id()
        atomic.commit({model_file: lambda f: f.write(desc.SerializeToString()),
                        params_file: lambda f: paddle_model.write_tensors(f, params)}, save_id)
        return pruned
    save_id = atomic.new_save_id()
    desc = json.dumps(program_to_dict(pruned, feed_names, fetch_names, save_id),
                      separators=(",", ":")).encode()
    # the parameters file records the program file's hash: a damaged or swapped program
    # file is caught before it is parsed
    extra = {"model_sha256": hashlib.sha256(desc).hexdigest()}
    atomic.commit({model_file: lambda f: f.write(desc),
                    params_file: arrays_writer(params, "pdiparams", save_id, extra)}, save_id)
    return pruned


def read_inference(model_file, params_file, fn):
    """[program, feed names, fetch targets] of the inference model in the two files
    (numbaflow's JSON + arrays, or Paddle's ProgramDesc + tensor stream); its parameters go
    to the global scope once every one of them checks out."""
    def read(path, real):
        # numbaflow's files: a JSON program or an .npz; anything else is read (and
        # checked) as Paddle's, so a damaged Paddle file gets Paddle's messages
        if path == params_file:
            with open_outside(real, path) as (f, _):
                is_npz = f.read(2) == b"PK"
            if is_npz:
                return array_files.read_arrays(path, real)
        return _read_bounded(path, real)
    got, journal_id = atomic.read_group([model_file, params_file], read)
    if got[params_file] is None and (got[model_file] or b"{")[:1] != b"{":
        got[params_file] = b""    # Paddle writes no .pdiparams for a model without parameters
    for path in (model_file, params_file):
        if got[path] is None:
            raise FileNotFoundError(f"{fn}: {path!r} does not exist; was the model saved "
                                    f"with save_inference_model?")
    raw, params = got[model_file], got[params_file]
    if raw[:1] == b"{" and model_file.endswith(PADDLE_EXT[0]) and \
            not isinstance(params, bytes):
        prefix = model_file[:-len(PADDLE_EXT[0])]
        warnings.warn(f"{fn}: {model_file!r} holds numbaflow's own format under Paddle's file "
                      f"names (an older numbaflow wrote it; Paddle cannot read it). It loads; "
                      f"save it again to rename it: static.save_inference_model({prefix!r}, "
                      f"...) writes {prefix + OWN_EXT[0]!r}/{OWN_EXT[1]!r}, or format='paddle' "
                      f"writes real Paddle files", UserWarning, stacklevel=3)
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
    found = check_against(persistables(desc["program"]), found,
                           f"parameters file {params_file!r}")
    scope = global_scope()
    for v in persistables(desc["program"]):
        scope.set(v.name, found[v.name], create=True)
    return [desc["program"], list(desc["feed"]), [block.var(n) for n in desc["fetch"]]]


def _read_bounded(path, real_path):
    """The bytes of a model file (a regular file), refusing one too large to be a model
    before reading it."""
    return read_outside(real_path, path, paddle_model.MAX_FILE_BYTES, "model file")


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
    prefixes = [n[:-len(ext)] for n in names for ext in (OWN_EXT[0], PADDLE_EXT[0])
                if n.endswith(ext)]
    if prefixes:
        return f"; it holds the model {os.path.join(directory, prefixes[0])!r}: pass that"
    if "__model__" in names and fn == "load_inference_model":
        return (f"; it is a Paddle 1.x model directory: pass model_filename='__model__', "
                f"params_filename='__params__' (or use fluid.io.load_inference_model)")
    return (f", e.g. {os.path.join(directory, 'inference')!r} for inference.nfmodel (or "
            f"Paddle's inference.pdmodel) there")


def _legacy_files(directory, model_filename, params_filename):
    """Paddle 2.x's `load_inference_model(dir, exe, model_filename=, params_filename=)`:
    the files of a model in `directory` (1.x names; numbaflow's '.nfmodel'/'.nfparams' or
    Paddle's '.pdmodel'/'.pdiparams' appended when such a file exists)."""
    out = []
    for name, default, exts in ((model_filename, "__model__", (OWN_EXT[0], PADDLE_EXT[0])),
                                (params_filename, "__params__", (OWN_EXT[1], PADDLE_EXT[1]))):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"load_inference_model: model_filename/params_filename must be "
                            f"file names (str), got {type(name).__name__}")
        path = os.path.join(directory, name or default)
        found = [path + e for e in exts if name and os.path.exists(path + e)]
        out.append(found[0] if found else path)
    return out


def save_inference_model(path_prefix: str, feed_vars: Variable | Sequence[Variable],
                         fetch_vars: Variable | Sequence[Variable], executor: Executor,
                         program: Program | None = None, format: str = "numbaflow",
                         **kwargs: object) -> None:
    """Save the forward ops that compute `fetch_vars` from `feed_vars`, and the parameters
    they read: numbaflow's format to `path_prefix.nfmodel` / `.nfparams` (default), Paddle's
    to `path_prefix.pdmodel` / `.pdiparams` (format="paddle").

    Args:
        path_prefix (str): the path prefix of the two files (not a directory).
        feed_vars (Variable or list of Variable): the model's inputs (may be empty).
        fetch_vars (Variable or list of Variable): the model's outputs.
        executor (Executor): accepted for Paddle compatibility (the global scope is read).
        program (Program, optional): default the program the variables belong to.
        format (str): "numbaflow" (`.nfmodel` JSON program + `.nfparams` checked arrays
            file, committed as one save, ids and hashes checked at load) or "paddle"
            (`.pdmodel` ProgramDesc protobuf + `.pdiparams` tensor stream, which Paddle
            2.x, Paddle Inference and paddle2onnx read).
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
        ['infer.nfmodel', 'infer.nfparams']
    """
    path_prefix = _prefix(path_prefix, "save_inference_model")
    unknown = set(kwargs) - {"clip_extra", "legacy_format"}
    if unknown:
        raise TypeError(f"save_inference_model: unexpected arguments {sorted(unknown)}")
    if format not in ("numbaflow", "paddle"):
        raise ValueError(f"save_inference_model: format must be 'numbaflow' or 'paddle', got "
                         f"{format!r}")
    model_file, params_file = (path_prefix + e for e in
                               (PADDLE_EXT if format == "paddle" else OWN_EXT))
    write_inference(model_file, params_file, feed_vars, fetch_vars, program,
                     "save_inference_model", format)


def load_inference_model(path_prefix: str, executor: Executor,
                         **kwargs: object) -> list:
    """Load an inference model, numbaflow's (`.nfmodel` + `.nfparams`) or one Paddle 2.x
    saved (`.pdmodel` protobuf + `.pdiparams`); its parameters go to the global scope.
    Where both pairs exist at the prefix, numbaflow's is read.

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
        return read_inference(model_file, params_file, "load_inference_model")
    path_prefix = _prefix(path_prefix, "load_inference_model")
    model_file, params_file = model_files(path_prefix)
    if not os.path.exists(model_file) and not os.path.exists(params_file):
        raise _missing(path_prefix, "load_inference_model")
    return read_inference(model_file, params_file, "load_inference_model")
