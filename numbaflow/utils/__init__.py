"""numbaflow.utils: `unique_name` (the layer-name generator), `log` (the `numbaflow` logger,
NUMBAFLOW_LOG_LEVEL), `metrics` (`ScalarLogger`: TensorBoard event files; `Progress`: a
training loop's progress bar and callbacks), `hints` (the messages for common mistakes) and
`run_check` (the health check behind ``python -m numbaflow``).

>>> from numbaflow.utils import unique_name
>>> with unique_name.guard():
...     unique_name.generate('fc')
'fc_0'
"""
from . import hints, log, metrics, profiling_hook, unique_name  # noqa: F401
from .metrics import Progress, ScalarLogger  # noqa: F401

# run_check trains a program, so it lives above this (base) layer, in numbaflow._health;
# `import numbaflow` puts it here, as paddle.utils.run_check.
__all__ = ["unique_name", "log", "metrics", "hints", "run_check", "ScalarLogger", "Progress"]
