"""numbaflow's logging: notices go to the ``numbaflow`` logger (and its children such as
``numbaflow.cache`` and ``numbaflow.passes``); deprecated or ignored settings use `warnings`.
The library never prints.

By default WARNING and above reach stderr, as Python shows them when the application has
configured no logging, but each line names the logger (``numbaflow.executor: ...``) and,
under mpiexec, the rank (``[rank 1/2] ...``). Set ``NUMBAFLOW_LOG_LEVEL`` (DEBUG, INFO,
WARNING, ERROR or a number) to give the ``numbaflow`` logger that level and show its lines
whatever the application configured, e.g. ``NUMBAFLOW_LOG_LEVEL=INFO`` to see the
background compiles too. An application can instead configure the logger itself:

>>> import logging
>>> logging.getLogger("numbaflow").setLevel(logging.INFO)
"""
import contextlib
import logging
import sys
import threading
import warnings

from .. import config

logger = logging.getLogger("numbaflow")

# A compile the user waits on that is still running after this gets one WARNING line: a
# Paddle or PyTorch user does not expect a compile at all, so a silent pause looks like a hang.
COMPILE_NOTICE_AFTER_S = 2.0


def get_logger(name=""):
    """The ``numbaflow`` logger, or its child ``numbaflow.<name>``.

    >>> get_logger("cache").name
    'numbaflow.cache'
    """
    return logging.getLogger(f"numbaflow.{name}" if name else "numbaflow")


def line_format():
    """The format of numbaflow's stderr lines: ``numbaflow.x INFO: message``, and under
    mpiexec (more than one rank) ``[rank r/R] `` in front, so the ranks' lines tell apart.

    >>> line_format()       # (not under mpiexec)
    '%(name)s %(levelname)s: %(message)s'
    """
    rank, size = config.launcher_rank_size()
    tag = f"[rank {rank}/{size}] " if size > 1 else ""
    return tag + "%(name)s %(levelname)s: %(message)s"


class _Handler(logging.StreamHandler):
    """numbaflow's stderr handler (one per process: recognised so it is added once).

    Without NUMBAFLOW_LOG_LEVEL it stands in for Python's last-resort handler: WARNING and
    above, and only while the application has configured no logging of its own (its
    handlers then get the records by propagation). With it, it shows every record of
    that level, whatever the application configured."""

    def __init__(self):
        super().__init__()
        self.explicit = False
        self.setLevel(logging.WARNING)
        self.setFormatter(logging.Formatter(line_format()))

    def emit(self, record):
        if not self.explicit and logging.getLogger().handlers:
            return
        self.stream = sys.stderr        # the current one (tests and tools replace it)
        super().emit(record)


def configure_from_env(default=None):
    """Install numbaflow's stderr handler and apply NUMBAFLOW_LOG_LEVEL (at `import
    numbaflow`), or the level `default` when it is unset (a program's own choice, e.g.
    'INFO'); return the level set, or None."""
    handler = next((h for h in logger.handlers if isinstance(h, _Handler)), None)
    if handler is None:
        handler = _Handler()
        logger.addHandler(handler)
    handler.explicit = False
    handler.setLevel(logging.WARNING)
    raw = config.log_level() or default
    if not raw:
        return None
    level = int(raw) if raw.isdigit() else logging.getLevelName(raw.upper())
    if not isinstance(level, int):
        warnings.warn(f"NUMBAFLOW_LOG_LEVEL={raw!r} is not a logging level (DEBUG, INFO, WARNING, "
                      "ERROR, CRITICAL or a number); ignored", RuntimeWarning, stacklevel=2)
        return None
    logger.setLevel(level)
    handler.setLevel(level)
    handler.explicit = True
    logger.propagate = False        # one line per record, even when the root logs too
    return level


def first_run(ops, feed_names):
    """How a compile notice names a program's first run: its op count, its first op types
    (in program order: the forward layers come first) and what it is fed.

    >>> class Op:
    ...     def __init__(self, type): self.type = type
    >>> first_run([Op("mul"), Op("relu"), Op("mul")], ["x"])
    'the first run of a program of 3 ops (mul, relu; fed x)'
    """
    kinds = list(dict.fromkeys(op.type for op in ops))
    shown = ", ".join(kinds[:5]) + (f" and {len(kinds) - 5} more op types" if len(kinds) > 5
                                    else "")
    fed = f"; fed {', '.join(sorted(feed_names))}" if feed_names else ""
    return f"the first run of a program of {len(ops)} ops ({shown}{fed})"


@contextlib.contextmanager
def compile_notice(what, after=COMPILE_NOTICE_AFTER_S, log=logger):
    """Around a compile the caller waits on: when it is still running after `after`
    seconds, log ONE WARNING line naming `what`, where compiled code is cached and how to
    compile ahead of time, so a pause has an explanation; short compiles and warm caches
    log nothing.

    >>> with compile_notice("3 segments of program 7"):
    ...     pass
    """
    if not log.isEnabledFor(logging.WARNING):
        yield
        return
    timer = threading.Timer(after, _notice, (log, what))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _notice(log, what):
    log.warning("compiling the kernels for %s: a one-off pause (seconds to a minute on a cold "
                "cache); numba keeps compiled kernels on disk (numbaflow's generated ones in "
                "%s; `python -m numbaflow cache info` says more), so later runs and processes "
                "load them in milliseconds. To compile the common ops ahead of time, run: "
                "python -m numbaflow warmup", what, config.kernel_cache_dir())
