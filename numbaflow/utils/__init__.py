"""Helpers: unique names, logging (`log`), the health check (`run_check`)."""
from . import health, log, unique_name  # noqa: F401
from .health import run_check  # noqa: F401
