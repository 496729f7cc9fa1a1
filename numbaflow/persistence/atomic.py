"""Saves of several files with one commit point, and recovery of interrupted ones.

A save of the files F1..Fn (one directory, one "group") goes:

  1. take an exclusive lock on the directory; finish a committed save that was cut off
     (rename its temp files into place) and remove every other leftover temp file;
  2. write each Fi to `.Fi.<id>.tmp` (its mode comes from the umask) and fsync it;
  3. COMMIT: write the journal `.F1.commit` naming <id> (a temp file renamed over it) and
     fsync the directory;
  4. rename each temp file over Fi, fsync the directory, remove the journal.

A kill or an exception (Ctrl-C included) before 3 leaves the previous save visible and
untouched; from 3 on, readers see the new one: `read_group` reads, for each Fi, its temp
file while the journal names one, else Fi itself. Whether 3 happened is decided by the
journal on disk, not by how far the saving code got, so an interrupt landing just after
the commit rename returned keeps the files the journal names. Every file of a save carries
<id>, so a reader can also prove that the files it read belong to one save. Only a
process kill is covered without caveat; after a power loss the fsyncs give the same
guarantee on file systems that honour them.

Readers take no lock (a writer paused by SIGSTOP, or holding the lock for long, must not
block a load of the committed checkpoint): they note the group's state (journal, which
file, its inode), read, and read again when a save moved files meanwhile.
"""
import contextlib
import json
import os
import re
import secrets
import socket
import time

from ..utils import atomic_file
from ..utils.atomic_file import fsync_dir as _fsync_dir
from .outside import read_outside

try:
    import fcntl
except ImportError:          # not on Windows: saves there are not serialised
    fcntl = None

_JOURNAL_TAG = "numbaflow-commit"
_JOURNAL_MAX_BYTES = 1 << 20   # a journal names a few files
_READ_ATTEMPTS = 50       # lock-free reads of a group before waiting for the writers' lock


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
    """The directory's fd, flock'ed (exclusive for saves; shared for a load only after
    `_READ_ATTEMPTS` rounds that a save kept moving the files) when possible;
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
        if not os.path.lexists(path):       # the usual case: no open call that fails
            return None
        j = json.loads(read_outside(path, limit=_JOURNAL_MAX_BYTES, what="journal").decode())
        if j.get("tag") == _JOURNAL_TAG and isinstance(j.get("id"), str) and \
                isinstance(j.get("files"), list):
            return j["id"], [str(n) for n in j["files"]]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        pass
    raise ValueError(f"checkpoint journal {path!r} is damaged: the files it guarded may be "
                     f"from two different saves; save again (the next save clears it)")


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


def _check_directory(directory):
    """Create the save's directory; a parent that is a file is a clear error, not Errno 17/20."""
    probe = directory
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe) if os.path.dirname(probe) != probe else ""
    if probe and not os.path.isdir(probe):
        raise NotADirectoryError(f"cannot save into {directory!r}: {probe!r} is a file, not a "
                                 f"directory; choose a path whose parent directories are "
                                 f"directories (or remove or rename that file)")
    os.makedirs(directory, exist_ok=True)


def _committed(journal, save_id):
    """Whether the journal on disk names `save_id`: the save reached its commit point."""
    try:
        entry = _read_journal(journal)
    except ValueError:
        return False
    return entry is not None and entry[0] == save_id


def commit(writers, save_id):
    """Write {path: write(fileobj)} as one save (all paths in one directory): after a kill,
    an exception or Ctrl-C at any point, `read_group` finds either every old file or every
    new one. A save that does not fit (ENOSPC) raises and leaves the old files.

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
    _check_directory(directory)
    journal = _journal(paths)
    temps = [_temp_name(p, save_id) for p in paths]
    journal_tmp = _temp_name(journal, save_id)
    body = json.dumps({"tag": _JOURNAL_TAG, "id": save_id,
                       "files": [os.path.basename(p) for p in paths]}).encode()
    with _locked_dir(directory, exclusive=True) as dirfd:
        _recover(paths, dirfd)
        try:
            for tmp, write in zip(temps, writers.values()):
                atomic_file.write_new(tmp, write)
            _fsync_dir(dirfd)
            atomic_file.write_new(journal_tmp, lambda f: f.write(body))
            os.replace(journal_tmp, journal)            # the commit point
        except BaseException:
            # An interrupt can land after the rename returned, before this frame knows:
            # the journal on disk says whether the save is committed. Committed, its temp
            # files are the checkpoint (readers and the next save roll it forward).
            if not _committed(journal, save_id):
                for t in temps + [journal_tmp]:
                    atomic_file.unlink_quietly(t)
            raise
        # committed: from here on a failure leaves the journal and the temp files it names,
        # and readers (and the next save) roll the save forward
        _fsync_dir(dirfd)
        for p, tmp in zip(paths, temps):
            os.replace(tmp, p)
        _fsync_dir(dirfd)
        os.unlink(journal)
        _fsync_dir(dirfd)


def _state(given, absolute):
    """({given path: the file to read for it, or None}, journal id, what identifies those
    files on disk): one look at the group, without a lock."""
    entry = _read_journal(_journal(absolute))
    real, ident = {}, []
    for p, a in zip(given, absolute):
        tmp = _temp_name(a, entry[0]) if entry is not None else None
        found = None
        for candidate, shown in ((tmp, tmp), (a, p)):
            if candidate is None or candidate == tmp and os.path.basename(a) not in entry[1]:
                continue
            try:
                st = os.stat(candidate)
            except FileNotFoundError:
                continue
            found = shown
            ident.append((candidate, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))
            break
        real[p] = found
    return real, (entry[0] if entry is not None else None), tuple(ident)


def read_group(paths, read):
    """({given path: read(path, file to read) or None where absent}, the journal's save id
    or None): the files of the group's last committed save, read without taking any lock,
    so a paused or dead writer never blocks it. When a save moves the files meanwhile (the
    group looks different after the read), the read is done again; after
    _READ_ATTEMPTS such rounds (a writer saving without pause) it waits for the writers'
    lock once. A damaged journal raises ValueError naming it."""
    given = [os.fspath(p) for p in paths]
    absolute = [os.path.abspath(p) for p in given]
    directory = os.path.dirname(absolute[0])
    if not os.path.isdir(directory):
        return {p: None for p in given}, None
    for attempt in range(_READ_ATTEMPTS + 1):
        if attempt == _READ_ATTEMPTS:
            lock = _locked_dir(directory, exclusive=False)
        else:
            lock = contextlib.nullcontext()
        with lock:
            before = _state(given, absolute)
            real, journal_id, _ = before
            try:
                got = {p: (read(p, r) if r is not None else None) for p, r in real.items()}
            except FileNotFoundError:
                if _state(given, absolute) == before:
                    raise               # really absent, not moved by a save
            else:
                if _state(given, absolute) == before:
                    return got, journal_id
        time.sleep(min(0.001 * 2 ** attempt, 0.05))
    raise AssertionError("a read under the writers' lock cannot see a save move files")
