"""Process-wide unique names, as in Paddle: `fc_0`, `fc_1`, `mean_0`...

`guard()` installs a fresh generator for the duration of a `with` block, so two
programs built under separate guards get the same names.
"""
import contextlib
from collections import defaultdict


class UniqueNameGenerator:
    def __init__(self, prefix=""):
        self.prefix = prefix
        self.ids = defaultdict(int)

    def __call__(self, key):
        n = self.ids[key]
        self.ids[key] += 1
        return f"{self.prefix}{key}_{n}"


_generator = UniqueNameGenerator()


def generate(key):
    """Return `key_N` with N counting up from 0 per key: generate('fc') -> 'fc_0'."""
    return _generator(key)


def switch(new_generator=None):
    """Replace the process-wide generator; return the previous one."""
    global _generator
    old = _generator
    _generator = new_generator if new_generator is not None else UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Use a fresh name generator inside the block.

    >>> with guard():
    ...     generate('fc')
    'fc_0'
    """
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
