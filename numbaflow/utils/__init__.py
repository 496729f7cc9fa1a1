"""numbaflow.utils: `unique_name` (the layer-name generator), `log` (the `numbaflow` logger,
NUMBAFLOW_LOG_LEVEL) and `run_check` (the health check behind ``python -m numbaflow``).

>>> from numbaflow.utils import unique_name
>>> with unique_name.guard():
...     unique_name.generate('fc')
'fc_0'
"""
from . import health, log, unique_name  # noqa: F401
from .health import run_check  # noqa: F401

__all__ = ["unique_name", "log", "run_check"]
