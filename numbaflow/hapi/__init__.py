"""numbaflow.hapi: paddle.Model and paddle.callbacks (Paddle's high-level API).

>>> paddle.Model is paddle.hapi.Model
True
"""
from . import callbacks  # noqa: F401
from .flops import flops  # noqa: F401
from .model import Model  # noqa: F401
from .summary import summary  # noqa: F401

__all__ = ["Model", "callbacks", "flops", "summary"]
