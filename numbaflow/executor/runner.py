"""Runners: what `Executor.run` hands a lowered program to.

`Runner` is the interface the executor drives; `LocalRunner` (here) runs one program on
one place through its PlanCache, `distributed.runner.DataParallelRunner` runs it on
several places and ranks. What every runner shares lives on the base class once: the
K-iteration transaction (`run_feeds`) and the release of pooled temporaries (now, or
every `drop_every` runs).
"""
import collections.abc

from .atomic import transaction
from .plan_cache import DEFAULT_OPTIONS, PlanCache
from ..utils.hints import one_place_feed

# periodic drops keep pools smaller than this: freeing them gives back nothing
# measurable and the next run would pay a rebind (~0.2 ms for the seed model)
DROP_MIN_BYTES = 1 << 20


class Runner:
    """Runs a program's plans, and keeps them. A subclass implements `run`, `plans`,
    `clear` (drop every plan: `Executor.close`) and `written`."""

    def __init__(self, drop_every=0):
        self.drop_every = drop_every    # release pooled temporaries every N runs (0: never)
        self.runs = 0
        self.last_plan = None

    def run(self, program, feed, fetch_list, scope, iterations=1, return_merged=True):
        """One `Executor.run` of one feed (a dict, or one per device), reused for
        `iterations` iterations; returns the fetches."""
        raise NotImplementedError

    def run_feeds(self, program, feeds, fetch_list, scope, return_merged=True):
        """One `Executor.run` over the K feeds an iterator gave, as one unit: if any of
        them fails, every persistable the program writes is restored to its value
        before the first. Returns the last fetches."""
        with transaction(self.written(program, scope)):
            for feed in feeds:
                result = self.run(program, feed, fetch_list, scope, 1, return_merged)
        return result

    def written(self, program, scope):
        """[(scope, ops)]: the persistables a run may write, for the transaction."""
        raise NotImplementedError

    def plans(self):
        """Every plan this runner keeps."""
        raise NotImplementedError

    def clear(self):
        """Drop every plan (and its buffers) this runner keeps."""
        raise NotImplementedError

    def ran(self):
        """Count a run: every `drop_every` runs, release the big pools."""
        self.runs += 1
        if self.runs % self.drop_every == 0:
            self.release(periodic=True)

    def release(self, periodic=False):
        """Release the plans' pooled temporaries (rebuilt on the next run); when
        `periodic`, keep pools under DROP_MIN_BYTES."""
        for plan in self.plans():
            if not periodic or plan.pool_bytes() >= DROP_MIN_BYTES:
                plan.release()


class LocalRunner(Runner):
    """One program on one place: the PlanCache's plan, run `iterations` times (inside
    the compiled segment when there is one)."""

    def __init__(self, backend, options=DEFAULT_OPTIONS, drop_every=0):
        super().__init__(drop_every)
        self.cache = PlanCache(backend)
        self.options = options

    def run(self, program, feed, fetch_list, scope, iterations=1, return_merged=True):
        cache = self.cache
        hit = cache.repeat(program, feed, fetch_list, scope, self.options)    # a steady step
        plan, arrays = hit if hit is not None else \
            cache.plan_for(program, feed, fetch_list, scope, self.options)
        self.last_plan = plan
        result = plan.run(arrays, iterations)     # (holds the scope's lock)
        if self.drop_every:
            self.runs += 1          # (Runner.ran, inlined: this is every step's path)
            if self.runs % self.drop_every == 0:
                self.release(periodic=True)
        return result

    def written(self, program, scope):
        return [(scope, program.global_block().ops)]

    def plans(self):
        return self.cache.plans()

    def clear(self):
        self.cache.clear()
        self.last_plan = None


def iteration_feeds(feed, k):
    """The feeds of one run of K iterations: a dict (or per-device list), reused by all K
    (so it is returned once), or K items from an iterator."""
    if feed is None or isinstance(feed, (dict, list, tuple)):
        return [feed]
    if isinstance(feed, collections.abc.Iterator):
        out = []
        for i in range(k):
            try:
                out.append(next(feed))
            except StopIteration:
                raise ValueError(f"num_iteration_per_run={k} but the feed iterator ended after "
                                 f"{i} feeds") from None
        return out
    one_place_feed(feed)    # neither: raises the TypeError that shows the fix
    raise AssertionError("one_place_feed returned for a feed that is not a dict")
