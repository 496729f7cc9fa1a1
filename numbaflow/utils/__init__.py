"""numbaflow.utils: `unique_name` (the layer-name generator).

>>> from numbaflow.utils import unique_name
>>> with unique_name.guard():
...     unique_name.generate('fc')
'fc_0'
"""
from . import unique_name  # noqa: F401

__all__ = ["unique_name"]
