"""Saves of several files with one commit point, and recovery of interrupted ones.

A save of the files F1..Fn (one directory, one "group") goes:

  1. take an exclusive lock on the directory; finish a committed save that was cut off
     (rename its temp files into place) and remove every other leftover temp file;
  2. write each Fi to `.Fi.<id>.tmp` (its mode comes from the umask) and fsync it;
  3. COMMIT: write the journal `.F1.commit` naming <id> (a temp file renamed over it) and
     fsync the directory;
  4. rename each temp file over Fi, fsync the directory, remove the journal.

A kill before 3 leaves the previous save visible and untouched; from 3 on, readers see
the new one: `resolve` returns, for each Fi, its temp file while the journal names one,
else Fi itself. Every file of a save carries <id>, so a reader can also prove that the
files it read belong to one save. Only a process kill is covered without caveat; after a
power loss the fsyncs give the same guarantee on file systems that honour them.
"""
import contextlib
import errno
import json
import os
import re
import secrets
import socket

try:
    import fcntl
except ImportError:          # not on Windows: saves there are not serialised
    fcntl = None

_JOURNAL_TAG = "numbaflow-commit"


def new_save_id():
    """A random id that every file of one save carries; it names the saving process and
    host so that cleanup can spare a live process's save where flock does not work."""
    host = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32]
    return f"{secrets.token_hex(8)}-{os.getpid()}-{host}"


def _owner_alive(name):
    """Whether the temp file `name` belongs to another live process on this host."""
    m = re.search(r"\.[0-9a-f]+-(\d+)-([A-Za-z0-9]*)\.tmp$", name)
    if m is None:
        return False
    pid, host = int(m.group(1)), m.group(2)
    if host != re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temp_name(path, save_id):
    d, b = os.path.split(path)
    return os.path.join(d, f".{b}.{save_id}.tmp")


def _journal(paths):
    d, b = os.path.split(paths[0])
    return os.path.join(d, f".{b}.commit")


def _is_leftover(name, paths):
    """A temp file of this group (any save id, including the journal's own temp)."""
    bases = [os.path.basename(p) for p in paths] + [os.path.basename(_journal(paths))]
    return name.endswith(".tmp") and any(name.startswith(f".{b}.") for b in bases)


@contextlib.contextmanager
def _locked_dir(directory, exclusive):
    """The directory's fd, flock'ed (exclusive for saves, shared for loads) when possible;
    None where the directory cannot be opened (no read permission, Windows): then there is
    neither a lock nor a directory fsync."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        yield None
        return
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            except OSError:
                pass          # a file system without flock: saves are not serialised
        yield fd
    finally:
        os.close(fd)          # also releases the lock


def _read_journal(path):
    """(save id, [file names]) of a journal, or None when it is absent or not ours."""
    try:
        with open(path, "rb") as f:
            j = json.loads(f.read().decode())
        if j.get("tag") == _JOURNAL_TAG and isinstance(j.get("id"), str) and \
                isinstance(j.get("files"), list):
            return j["id"], [str(n) for n in j["files"]]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        pass
    raise ValueError(f"checkpoint journal {path!r} is damaged: the files it guarded may be "
                     f"from two different saves; save again (the next save clears it)")


def _fsync_dir(dirfd):
    """fsync a directory (makes its renames durable); file systems that cannot are skipped."""
    if dirfd is None:
        return
    try:
        os.fsync(dirfd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF):
            raise


def _write_new(path, write):
    """Create `path` (it must not exist), fill it with `write(f)`, fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _unlink(path)
        raise


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _recover(paths, dirfd):
    """Finish a committed-but-interrupted save of this group; remove every leftover."""
    journal = _journal(paths)
    try:
        entry = _read_journal(journal)
    except ValueError:
        entry = None                    # damaged: its save is lost; drop it below
    directory = os.path.dirname(journal)
    changed = False
    if entry is not None:
        save_id, names = entry
        for name in names:
            final = os.path.join(directory, name)
            tmp = _temp_name(final, save_id)
            if os.path.exists(tmp):
                os.replace(tmp, final)
                changed = True
        if changed:
            _fsync_dir(dirfd)
    if os.path.exists(journal):
        os.unlink(journal)
        changed = True
    for name in os.listdir(directory or "."):
        if _is_leftover(name, paths) and not _owner_alive(name):
            _unlink(os.path.join(directory, name))
            changed = True
    if changed:
        _fsync_dir(dirfd)


def commit(writers, save_id):
    """Write {path: write(fileobj)} as one save (all paths in one directory): after a kill
    at any point, `resolve` finds either every old file or every new one.

    >>> commit({'m.pdparams': lambda f: f.write(b'...'), 'm.pdopt': ...}, new_save_id())
    """
    paths = [os.path.abspath(os.fspath(p)) for p in writers]
    directory = os.path.dirname(paths[0])
    if any(os.path.dirname(p) != directory for p in paths):
        raise ValueError(f"the files of one save must be in one directory, got {paths}")
    for p in paths:
        if os.path.isdir(p):
            raise IsADirectoryError(f"cannot save to {p!r}: it is a directory; give a file path "
                                    f"prefix such as {os.path.join(p, 'model')!r}")
    os.makedirs(directory, exist_ok=True)
    with _locked_dir(directory, exclusive=True) as dirfd:
        _recover(paths, dirfd)
        temps = []
        try:
            for p, write in zip(paths, writers.values()):
                temps.append(_temp_name(p, save_id))
                _write_new(temps[-1], write)
            _fsync_dir(dirfd)
            journal = _journal(paths)
            body = json.dumps({"tag": _JOURNAL_TAG, "id": save_id,
                               "files": [os.path.basename(p) for p in paths]}).encode()
            journal_tmp = _temp_name(journal, save_id)
            temps.append(journal_tmp)
            _write_new(journal_tmp, lambda f: f.write(body))
            os.replace(journal_tmp, journal)            # the commit point
        except BaseException:
            for t in temps:
                _unlink(t)
            raise
        # committed: from here on a failure leaves the journal and the temp files it names,
        # and readers (and the next save) roll the save forward
        _fsync_dir(dirfd)
        for p in paths:
            os.replace(_temp_name(p, save_id), p)
        _fsync_dir(dirfd)
        os.unlink(journal)
        _fsync_dir(dirfd)


@contextlib.contextmanager
def resolve(paths):
    """Yield ({given path: the file to read for it, or None if absent}, the journal's save
    id or None) for a group, holding a shared lock so no save of the directory runs
    meanwhile. A damaged journal raises ValueError naming it."""
    given = [os.fspath(p) for p in paths]
    absolute = [os.path.abspath(p) for p in given]
    directory = os.path.dirname(absolute[0])
    if not os.path.isdir(directory):
        yield {p: None for p in given}, None
        return
    with _locked_dir(directory, exclusive=False):
        entry = _read_journal(_journal(absolute))
        out = {}
        for p, a in zip(given, absolute):
            tmp = _temp_name(a, entry[0]) if entry is not None else None
            if tmp is not None and os.path.basename(a) in entry[1] and os.path.exists(tmp):
                out[p] = tmp
            else:
                out[p] = p if os.path.exists(p) else None
        yield out, (entry[0] if entry is not None else None)
