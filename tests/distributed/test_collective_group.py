"""Where a bucket's MPI call runs: on the communication thread when there is backward
work to overlap it with, on the calling thread when there is none (the hand-over cost
the 2-rank MLP step ~1 ms), and always in the order the buckets were started."""
import threading

import numpy as np

from numbaflow.distributed.collective_group import LocalGroup


class FakeWorld:
    """Two ranks whose other rank contributes ones; records the thread of each call."""
    size, rank = 2, 0

    def __init__(self, hold=None):
        self.calls = []                 # (array id, thread name)
        self.hold = hold                # an Event the first call waits for

    def allreduce_sum_(self, array):
        if self.hold is not None and not self.calls:
            self.hold.wait(5)
        self.calls.append((id(array), threading.current_thread().name))
        array += 1
        return array


def _bucket(n, value):
    flat = np.full(n, value, np.float32)
    return (flat[:2], flat[2:]), flat


def test_a_bucket_with_nothing_to_overlap_is_summed_on_the_calling_thread():
    world = FakeWorld()
    group = LocalGroup(1, world)
    arrays, flat = _bucket(5, 2.0)
    group.allreduce_start_(0, arrays, 0, flat, overlap=False)
    assert world.calls == [(id(flat), threading.current_thread().name)]
    group.allreduce_wait_(0, arrays, arrays, 0)
    np.testing.assert_array_equal(flat, np.full(5, 3.0, np.float32))


def test_a_bucket_with_work_after_it_goes_to_the_communication_thread():
    world = FakeWorld()
    group = LocalGroup(1, world)
    arrays, flat = _bucket(4, 1.0)
    group.allreduce_start_(0, arrays, 0, flat, overlap=True)
    group.allreduce_wait_(0, arrays, arrays, 0)
    (_, thread), = world.calls
    assert thread.startswith("numbaflow-comm")
    np.testing.assert_array_equal(flat, np.full(4, 2.0, np.float32))


def test_a_call_with_nothing_to_overlap_waits_its_turn_behind_a_running_one():
    # MPI needs the collectives in the same order on every rank: while bucket 0 is still
    # on the communication thread, bucket 1 must not overtake it on the calling thread
    hold = threading.Event()
    world = FakeWorld(hold)
    group = LocalGroup(1, world)
    (a0, f0), (a1, f1) = _bucket(3, 0.0), _bucket(3, 5.0)
    group.allreduce_start_(0, a0, 0, f0, overlap=True)
    group.allreduce_start_(0, a1, 1, f1, overlap=False)
    hold.set()
    group.allreduce_wait_(0, a0, a0, 0)
    group.allreduce_wait_(0, a1, a1, 1)
    assert [i for i, _ in world.calls] == [id(f0), id(f1)]
    assert all(t.startswith("numbaflow-comm") for _, t in world.calls)
    np.testing.assert_array_equal(f1, np.full(3, 6.0, np.float32))


def test_the_synchronous_allreduce_runs_on_the_calling_thread():
    world = FakeWorld()
    group = LocalGroup(1, world)
    arrays, flat = _bucket(3, 4.0)
    group.allreduce_(0, arrays, 0, flat)
    assert world.calls == [(id(flat), threading.current_thread().name)]
    np.testing.assert_array_equal(flat, np.full(3, 5.0, np.float32))
