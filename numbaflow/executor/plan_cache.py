"""PlanCache: the one way to a Plan. `plan_for` does the feed check, the fetch
resolution, the cache lookup (bounded, least recently used first out) and the
repeat-call fast path; every runner (local, and each data-parallel device) keeps one."""
import collections
import threading

import numpy as np

from .. import config
from . import threads
from .feed import check_feed, resolve_fetch
from .lowering import plain_rewrites
from .plan import Plan, PlanOptions

# a plain Program's plans: its default-on rewrites on the plan's op list
DEFAULT_OPTIONS = PlanOptions(rewrites=plain_rewrites)


def max_cached_plans():
    """How many plans each plan cache keeps (NUMBAFLOW_MAX_PLANS, default 64): every feed
    signature (a new batch size, a short last batch) has its own plan and buffers."""
    return config.max_plans()


class PlanCache:
    """Plans by (program, version, scope, feed signature, fetch names, options), at most
    `max_cached_plans()` of them; the least recently used one is dropped first
    (its buffers go with it once no run holds it).

    `plan_for` remembers the previous call: when the next one repeats it exactly (same
    program version, scope, options and fetch objects, C-contiguous ndarrays of the same
    names, shapes and dtypes), it skips feed conversion and the lookup, so a training
    loop pays for neither."""

    def __init__(self, backend, limit=None):
        self.backend = backend
        self.limit = limit
        self._plans = collections.OrderedDict()
        self._lock = threading.Lock()
        self._last = None  # (program, version, scope, options, fetch objects, feed specs, plan)

    def __len__(self):
        return len(self._plans)

    def plans(self):
        with self._lock:
            return list(self._plans.values())

    def clear(self):
        with self._lock:
            self._plans.clear()
            self._last = None

    def plan_for(self, program, feed, fetch_list, scope, options=DEFAULT_OPTIONS):
        """(the Plan for this signature, the checked feed arrays {name: ndarray})."""
        hit = self.repeat(program, feed, fetch_list, scope, options)
        if hit is not None:
            return hit
        block = program.global_block()
        feed_arrays = check_feed(block, feed)
        fetch_vars = resolve_fetch(block, fetch_list)
        key = (program.uid, program.version, id(scope),
               tuple((n, a.shape, a.dtype.str) for n, a in feed_arrays.items()),
               tuple(v.name for v in fetch_vars), options)
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
        if plan is None:
            threads.one_thread_blas()      # numba's threads split the products instead
            # built outside the lock: another thread may look up other plans meanwhile
            plan = Plan(program, {block.vars[n]: a for n, a in feed_arrays.items()},
                        fetch_vars, scope, self.backend, options)
            with self._lock:
                plan = self._plans.setdefault(key, plan)
                limit = self.limit or max_cached_plans()
                while len(self._plans) > limit:
                    self._plans.popitem(last=False)
        self._last = (program, program.version, scope, options,
                      tuple(fetch_list) if isinstance(fetch_list, (list, tuple)) else None,
                      tuple((n, a.shape, a.dtype) for n, a in feed_arrays.items()), plan)
        return plan, feed_arrays

    def repeat(self, program, feed, fetch_list, scope, options):
        """(plan, feed) when this call repeats the last one exactly (see the class
        docstring), else None: the steady step's whole lookup."""
        last = self._last       # one read: another thread may replace it meanwhile
        if last is None or last[0] is not program or last[1] != program.version or \
                last[2] is not scope or last[3] is not options or type(feed) is not dict:
            return None
        fetch, specs = last[4], last[5]
        # (tuple ==: identity first, and Variables compare by identity; one C call)
        if fetch is None or type(fetch_list) not in (list, tuple) or \
                len(feed) != len(specs) or tuple(fetch_list) != fetch:
            return None
        for name, shape, dtype in specs:
            a = feed.get(name)
            if type(a) is not np.ndarray or a.shape != shape or \
                    (a.dtype is not dtype and a.dtype != dtype):
                return None
            flags = a.flags
            if not (flags.c_contiguous and flags.aligned):
                return None
        # every key is one of the names checked (as many keys as names): the feed itself
        # is the {name: ndarray} the plan takes
        return last[6], feed
