"""Where the test tree and the repository are, for tests in any folder under tests/.

Shared test modules (`book_util`, `tensor_check`, `mpirun`, the drivers ...) live in
tests/ itself; pyproject's `pythonpath = ["tests"]` makes them importable from every folder.
"""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
