"""Durable file writes, the one home of the pattern (the kernel cache and the checkpoint
commit protocol, numbaflow/persistence/atomic.py, both use it).

`write_new` creates a file that must not exist, fills it and fsyncs it, removing it again
on any failure (a full disk, Ctrl-C); `atomic_write` adds a temporary sibling renamed over
the target, so readers see the old file or the whole new one, and the new one survives a
power loss once it returns.
"""
import errno
import os

# a directory fsync that the file system does not support is skipped; any other error
# (EIO: the renames may be lost) is raised
_NO_DIR_FSYNC = (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF)


def fsync_dir(directory):
    """fsync a directory (an open fd or a path) so that its renames are durable.

    >>> fsync_dir('.')
    """
    if directory is None:
        return
    if isinstance(directory, int):
        fd, own = directory, False
    else:
        try:
            fd, own = os.open(directory, os.O_RDONLY), True
        except OSError:
            return          # cannot open it (no read permission): the rename still happened
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in _NO_DIR_FSYNC:
            raise
    finally:
        if own:
            os.close(fd)


def unlink_quietly(path):
    """Remove `path` if it exists; other errors too are ignored (best-effort cleanup)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def write_new(path, write):
    """Create `path` (it must not exist; mode 0666 & ~umask), fill it with `write(f)` on the
    binary file object, fsync it. On any failure the file is removed and the error raised.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), 'f')
    >>> write_new(p, lambda f: f.write(b'ok'))
    >>> open(p, 'rb').read()
    b'ok'
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        unlink_quietly(path)
        raise


def atomic_write(path, data):
    """Replace `path` by `data` (bytes or str, UTF-8): readers see the old file or the whole
    new one; durable (file and directory fsync'd) once this returns. On a failure (ENOSPC,
    an interrupt) the old file is untouched and no temporary file is left.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), 'f.txt')
    >>> atomic_write(p, 'one'); atomic_write(p, 'two')
    >>> open(p).read()
    'two'
    """
    if isinstance(data, str):
        data = data.encode()
    d, b = os.path.split(os.path.abspath(path))
    tmp = os.path.join(d, f".{b}.{os.getpid()}-{os.urandom(6).hex()}.tmp")
    write_new(tmp, lambda f: f.write(data))
    try:
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise
    fsync_dir(d)
