"""numbaflow's logging: notices go to the ``numbaflow`` logger (and its children such as
``numbaflow.cache`` and ``numbaflow.passes``); deprecated or ignored settings use `warnings`.
The library never prints.

By default nothing is configured: Python shows WARNING and above on stderr. Set
``NUMBAFLOW_LOG_LEVEL`` (DEBUG, INFO, WARNING, ERROR or a number) to give the ``numbaflow``
logger that level and its own stderr handler, e.g. ``NUMBAFLOW_LOG_LEVEL=INFO`` to see
when a long compile starts. An application can instead configure the logger itself:

>>> import logging
>>> logging.getLogger("numbaflow").setLevel(logging.INFO)
"""
import contextlib
import logging
import os
import threading
import warnings

logger = logging.getLogger("numbaflow")

COMPILE_NOTICE_AFTER_S = 1.0     # a compile still running after this gets one INFO line


def get_logger(name=""):
    """The ``numbaflow`` logger, or its child ``numbaflow.<name>``.

    >>> get_logger("cache").name
    'numbaflow.cache'
    """
    return logging.getLogger(f"numbaflow.{name}" if name else "numbaflow")


class _Handler(logging.StreamHandler):
    """The stderr handler NUMBAFLOW_LOG_LEVEL installs (recognised so it is added once)."""


def configure_from_env():
    """Apply NUMBAFLOW_LOG_LEVEL (at `import numbaflow`); return the level set, or None."""
    raw = os.environ.get("NUMBAFLOW_LOG_LEVEL", "").strip()
    if not raw:
        return None
    level = int(raw) if raw.isdigit() else logging.getLevelName(raw.upper())
    if not isinstance(level, int):
        warnings.warn(f"NUMBAFLOW_LOG_LEVEL={raw!r} is not a logging level (DEBUG, INFO, WARNING, "
                      "ERROR, CRITICAL or a number); ignored", RuntimeWarning, stacklevel=2)
        return None
    logger.setLevel(level)
    if not any(isinstance(h, _Handler) for h in logger.handlers):
        handler = _Handler()
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False        # one line per record, even when the root logs too
    return level


@contextlib.contextmanager
def compile_notice(what, after=COMPILE_NOTICE_AFTER_S, log=logger):
    """Around a compile: when it is still running after `after` seconds, log ONE INFO line
    (``compiling <what> ...``) so a pause has an explanation; short compiles and warm
    caches log nothing.

    >>> with compile_notice("3 segments of program 7"):
    ...     pass
    """
    if not log.isEnabledFor(logging.INFO):
        yield
        return
    timer = threading.Timer(after, log.info, (
        "compiling %s (numba; a one-off pause, cached on disk for later runs) ...", what))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
