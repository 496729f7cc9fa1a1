"""executor/atomic.backup_call copies every live persistable into its backup, for any count
of them, through one compiled signature of the byte copy (chunks padded to one length)."""
import numpy as np
import pytest

from numbaflow.executor import atomic
from numbaflow.executor.backend import HostBackend


@pytest.mark.parametrize("count", [1, 3, atomic.BACKUP_CHUNK, atomic.BACKUP_CHUNK + 1, 17])
def test_backup_call_copies_every_pair(count):
    rng = np.random.default_rng(count)
    live = [rng.standard_normal((i + 1, 3)).astype(np.float32) for i in range(count)]
    saved = [np.zeros_like(a) for a in live]
    atomic.backup_call(list(zip(live, saved)), HostBackend())()
    for a, b in zip(live, saved):
        np.testing.assert_array_equal(a, b)
    assert len(atomic._copy_bytes.overloads) == 1
