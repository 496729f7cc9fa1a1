"""Open a file that came from outside (a model, parameters, a checkpoint, a pickle) with
bounds: the one place every reader of such files goes through.

`open_outside` opens without blocking (O_NONBLOCK: opening a FIFO for reading would wait
for a writer), then refuses anything that is not a regular file (a device such as
/dev/zero reads without end, a FIFO or socket blocks), and hands back the file with its
size from fstat of the open descriptor, so a symlink swapped meanwhile cannot change what
is checked. `read_outside` reads at most that many bytes, after checking them against
the caller's limit. Every refusal is a FileFormatError naming the file and the fix.
"""
import contextlib
import os
import stat

from ..graph.serialize import FileFormatError

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def _kind(mode):
    return next((name for test, name in _KINDS if test(mode)), "not a file")


@contextlib.contextmanager
def open_outside(path, shown=None):
    """(binary file object, its size in bytes) of the regular file `path`; FileFormatError
    naming `shown` (default `path`) for a device, FIFO, socket or directory.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as t:
    ...     _ = t.write(b'abc'); t.flush()
    ...     with open_outside(t.name) as (f, size):
    ...         size
    3
    >>> with open_outside('/dev/zero', 'm.pdmodel') as (f, size):
    ...     pass
    Traceback (most recent call last):
    ...
    numbaflow.graph.serialize.FileFormatError: file 'm.pdmodel' is not a regular file but a character device (/dev/zero); give the path of the model or parameters file itself
    """
    shown = path if shown is None else shown
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | \
        getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, PermissionError):
        raise
    except OSError:                # a socket (ENXIO), a directory (EISDIR), ...
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            raise
        raise FileFormatError(f"file {shown!r} is not a regular file but {_kind(mode)}; give "
                              f"the path of the model or parameters file itself") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            target = os.path.realpath(path)
            raise FileFormatError(
                f"file {shown!r} is not a regular file but {_kind(st.st_mode)}"
                f"{f' ({target})' if target != os.path.abspath(shown) else ''}; give the "
                f"path of the model or parameters file itself")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f, st.st_size


def read_outside(path, shown=None, limit=None, what="file"):
    """All the bytes of the regular file `path` (as `open_outside` checks it), refusing one
    over `limit` bytes before reading; reads no more than the size fstat gave.

    >>> read_outside('/dev/null')
    Traceback (most recent call last):
    ...
    numbaflow.graph.serialize.FileFormatError: file '/dev/null' is not a regular file but a character device; give the path of the model or parameters file itself
    """
    shown = path if shown is None else shown
    with open_outside(path, shown) as (f, size):
        if limit is not None and size > limit:
            raise FileFormatError(f"file {shown!r} is {size} bytes, more than any {what} "
                                  f"numbaflow reads ({limit}); not a {what}?")
        return f.read(size)
