"""Process-wide unique names, as in Paddle: `fc_0`, `fc_1`, `mean_0`...

`guard()` installs a fresh generator for the duration of a `with` block, so two
programs built under separate guards get the same names.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["UniqueNameGenerator", "generate", "switch", "guard"]


class UniqueNameGenerator:
    """Names `<prefix><key>_N`, N counting up from 0 per key.

    Args:
        prefix (str): put before every name.

    Example:
        >>> from numbaflow.utils import unique_name
        >>> gen = unique_name.UniqueNameGenerator('net_')
        >>> gen('fc'), gen('fc'), gen('conv')
        ('net_fc_0', 'net_fc_1', 'net_conv_0')
    """

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.ids = defaultdict(int)

    def __call__(self, key: str) -> str:
        n = self.ids[key]
        self.ids[key] += 1
        return f"{self.prefix}{key}_{n}"


_generator = UniqueNameGenerator()


def generate(key: str) -> str:
    """The next unique name for `key`, from the current generator.

    Args:
        key (str): the name stem, e.g. a layer type.

    Returns:
        str: `key_N`, N counting up from 0 per key.

    Example:
        >>> from numbaflow.utils import unique_name
        >>> with unique_name.guard():
        ...     unique_name.generate('fc'), unique_name.generate('fc')
        ('fc_0', 'fc_1')
    """
    return _generator(key)


def switch(new_generator: UniqueNameGenerator | None = None) -> UniqueNameGenerator:
    """Replace the process-wide generator.

    Args:
        new_generator (UniqueNameGenerator, optional): default a fresh one.

    Returns:
        UniqueNameGenerator: the previous generator (pass it back to restore it).

    Example:
        >>> from numbaflow.utils import unique_name
        >>> old = unique_name.switch()
        >>> unique_name.generate('fc')
        'fc_0'
        >>> _ = unique_name.switch(old)
    """
    global _generator
    old = _generator
    _generator = new_generator if new_generator is not None else UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator: UniqueNameGenerator | str | None = None) -> Iterator[None]:
    """Use a fresh name generator inside the `with` block, so two programs built under
    separate guards get the same names.

    Args:
        new_generator (UniqueNameGenerator or str, optional): the generator, or a prefix
            for a fresh one.

    Returns:
        a context manager.

    Example:
        >>> from numbaflow.utils import unique_name
        >>> with unique_name.guard():
        ...     unique_name.generate('fc')
        'fc_0'
    """
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
