"""numbaflow.nn: functional ops, initializers and gradient clipping."""
from . import functional, initializer  # noqa: F401
from .clip import ClipGradByGlobalNorm  # noqa: F401
