"""Running one compiled program on D local devices (threads) and R MPI ranks.

The program comes through the compiler's pass pipeline, whose last row is the
`multi_devices` rewrite (distributed/rewrite.py): every replica runs the same program,
whose gradients are summed by `c_allreduce_sum` ops through this process's LocalGroup
(distributed/collective_group.py), which also spans the MPI ranks. Per run:

1. the feed is split over the devices (feed.split_feed) and each device gets
   its `<loss>@GRAD` value (its share of the global batch, 1, or the user's);
2. parameters are made identical everywhere: at the first run and after any
   `Scope.set`, rank 0 broadcasts them to the other ranks, and the user's scope (device 0)
   is copied into the other devices' scopes;
3. the devices run their plans concurrently (device 0 on the caller's thread, the others
   on D-1 threads kept across runs; kernels release the GIL), each with 1/D of numba's
   threads. A steady step (the same feed names, shapes and fetches) is recognised by each
   device's plan cache repeat check, and its feed is not checked again;
4. the fetches are merged in device order.

Device 0's scope is the user's scope, so it always holds the current parameters (every
device applies the same summed update).
"""
import numba
import numpy as np

from ..graph.program import Parameter
from ..kernels.registry import COLLECTIVE, get_op_def
from ..graph.verify import verify
from .collective_group import GroupAborted, LocalGroup
from ..executor.plan_cache import PlanCache
from ..executor.runner import Runner
from .feed import loss_grad_scales, merge_fetch, split_feed
from ..executor.scope import Scope
from .modes import GradientScaleStrategy, ReduceStrategy
from .rewrite import assign_owners, optimizer_state, owner_program
from ..executor import threads as thread_budget


class DataParallelRunner(Runner):
    """Runs a program that went through the `multi_devices` rewrite on `places` and the
    ranks of `world`; `loss_name`: the loss, whose `<loss>@GRAD` that rewrite made fed."""

    def __init__(self, program, loss_name, places, scope, build_strategy, options, backends,
                 world=None, share_from=None, drop_every=0):
        super().__init__(drop_every)
        self.places, self.D = places, len(places)
        self.world = world
        self.strategy = build_strategy.gradient_scale_strategy
        # the fed loss gradient (the rewrite turned its seed op into a feed)
        self.loss_grad = program.global_block().vars.get(f"{loss_name}@GRAD") \
            if loss_name is not None else None
        if world is not None and world.size > 1:
            # a rank with another program would wait forever in a collective: refuse now
            world.check_same("the data-parallel program (op types and gradient shapes)",
                             _signature(program))
        self.program = program
        self.training = self.loss_grad is not None
        self.collective = any(get_op_def(op.type).has(COLLECTIVE)
                              for op in program.global_block().ops)
        ranks = world.size if world is not None else 1
        rank = world.rank if world is not None else 0
        self.reduce = (build_strategy.reduce_strategy is ReduceStrategy.Reduce
                       and self.training and ranks * self.D > 1)
        if self.reduce:
            # each parameter is updated by its owner only, then broadcast from it
            self.owners = assign_owners(program, ranks * self.D)
            self.programs = [owner_program(program, self.owners, rank * self.D + i,
                                           build_strategy.fuse_broadcast_ops)
                             for i in range(self.D)]
            for p in self.programs:
                verify(p)
            if ranks > 1:
                # another rank's owners update part of the optimizer state: static.save
                # gathers it first (every rank must call it; see static.io.save)
                self.state_of = optimizer_state(program)
                scope.on_save(self.gather_optimizer_state)
        else:
            self.owners = None
            self.programs = [program] * self.D
        self.group = LocalGroup(self.D, world)
        # share_vars_from: the very scopes (parameter arrays) of the source's devices
        self.shared = share_from is not None
        self.scopes = list(share_from.scopes) if self.shared else \
            [scope] + [Scope() for _ in range(self.D - 1)]
        if len(self.scopes) != self.D:
            raise ValueError(f"share_vars_from: the source runs on {len(self.scopes)} places, "
                             f"this program on {self.D}; use the same places")
        self.options = [_with_comm(options, self.group.endpoint(i)) for i in range(self.D)]
        self.backends = backends       # one per place (a CUDA place: its own device)
        # each device's plans: the executor's PlanCache (same checks, same bound)
        self.device_caches = [PlanCache(b) for b in backends]
        self.workers = thread_budget.Workers(self.D - 1, "numbaflow-device")
        self._synced = None
        self._loss_grads = {}
        self.last_plans = []

    # ------------------------------------------------------------------ one run
    def plans(self):
        """Every plan of every device this runner keeps."""
        return [plan for cache in self.device_caches for plan in cache.plans()]

    def clear(self):
        for cache in self.device_caches:
            cache.clear()
        self.last_plan, self.last_plans = None, []

    def written(self, program, scope):
        return [(s, p.global_block().ops) for s, p in zip(self.scopes, self.programs)]

    def run(self, program, feed, fetch_list, scope, iterations=1, return_merged=True):
        """One run of `feed` (a dict split over the devices, or a per-device list),
        `iterations` times (the user's scope is locked throughout)."""
        with self.scopes[0].locked():
            try:
                result = self._run_one(feed, fetch_list, return_merged, iterations)
            except BaseException:
                # each device's plan restores its own persistables, but the devices may
                # not all have failed (Ctrl-C after one of them committed): the next run
                # makes every replica hold the user's scope (device 0) again
                self._synced = None
                raise
        if self.drop_every:
            self.ran()
        return result

    def _run_one(self, feed, fetch_list, return_merged, iterations):
        block = self.program.global_block()
        lg = self.loss_grad
        customized = self.strategy is GradientScaleStrategy.Customized
        custom = lg.name if (lg is not None and customized) else None
        feeds, sizes = split_feed(block, feed, self.D, self.training, custom, check=False)
        if len(feeds) < self.D and self.collective:
            raise ValueError(
                f"the batch of {sum(sizes)} sample(s) is smaller than the device count "
                f"{self.D}, and this program exchanges data between devices "
                f"(sync_batch_norm): every device needs at least one sample. Feed at least "
                f"{self.D} samples or run a clone(for_test=True) program")
        if lg is not None and not customized:
            for i, f in enumerate(feeds):
                f[lg.name] = self._loss_grad_array(i, lg)
        # a steady step passes every device's repeat check; otherwise the feed is checked
        # (per device, errors say so) before any collective
        plans = self._repeated(feeds, fetch_list)
        if plans is None:
            split_feed(block, feed, self.D, self.training, custom)
        # one small collective per run: the global batch, and whether any rank's user
        # changed a parameter (then every rank joins the re-broadcast from rank 0)
        total, resync = sum(sizes), self._needs_sync()
        if self.world is not None and self.world.size > 1:
            self.world.step_begins()   # from here a failure on one rank strands the others
            agreed = np.array([total, int(resync)], dtype=np.int64)
            self.world.allreduce_sum_(agreed)
            total, resync = int(agreed[0]), bool(agreed[1])
        if lg is not None and not customized:
            for f, s in zip(feeds, loss_grad_scales(sizes, total, self.strategy)):
                f[lg.name].fill(s)
        if resync:
            self._sync_parameters()
        if plans is None:
            plans = self._plans_for(feeds, fetch_list)
        self.last_plans = [plan for plan, _ in plans]
        self.last_plan = plans[0][0]
        results = self._run_devices(plans, iterations)
        if self.world is not None and self.world.size > 1:
            self.world.step_ends()
        return merge_fetch(results, return_merged)

    def _loss_grad_array(self, i, var):
        """Device i's `<loss>@GRAD` feed: one array per device, refilled each run (the
        same object, so its plan does not rebind)."""
        arr = self._loss_grads.get(i)
        if arr is None:
            arr = self._loss_grads[i] = _full(var, 1.0)
        return arr

    def _repeated(self, feeds, fetch_list):
        """[(plan, feed)] when every device's call repeats its last one, else None."""
        plans = []
        for i, f in enumerate(feeds):
            hit = self.device_caches[i].repeat(self.programs[i], f, fetch_list, self.scopes[i],
                                               self.options[i])
            if hit is None:
                return None
            plans.append(hit)
        return plans

    def _plans_for(self, feeds, fetch_list):
        """[(plan, checked feed arrays)] of the devices that get data."""
        return [self.device_caches[i].plan_for(self.programs[i], f, fetch_list, self.scopes[i],
                                               self.options[i])
                for i, f in enumerate(feeds)]

    def _run_devices(self, plans, iterations):
        n = len(plans)
        results, errors = [None] * n, [None] * n
        # the devices share one budget: numba's loops (thread-local); the BLAS at one thread
        threads = thread_budget.share(n)
        thread_budget.one_thread_blas()

        def device(i):
            previous = numba.get_num_threads()
            try:
                numba.set_num_threads(threads)   # thread-local in numba
                with _device_context(self.places[i]):
                    results[i] = plans[i][0].run(plans[i][1], iterations)
            except BaseException as e:      # noqa: B902 - reported below, on the caller
                errors[i] = e
                self.group.abort()          # the others stop waiting for this device
            finally:
                numba.set_num_threads(previous)

        try:
            self.workers.run([lambda i=i: device(i) for i in range(n)])
        except BaseException:
            # interrupted on this thread outside device 0's run (Ctrl-C while waiting for
            # the others): the other devices must not stay blocked in a collective, or the
            # next run would wait on them forever
            self.group.abort()
            self.workers.wait()
            self.group.reset()
            raise
        if any(errors):
            self.group.reset()
            first = next(e for e in errors if e is not None and not isinstance(e, GroupAborted))
            raise first
        return results

    # ------------------------------------------------------------------ consistency
    def gather_optimizer_state(self):
        """Collective: every rank receives, from its owner's rank, the optimizer state of
        every parameter, so each rank's scope (and a checkpoint) is complete."""
        user = self.scopes[0]
        # a rank that saves alone raises here instead of waiting forever in the gather
        self.world.agree("static.save under ReduceStrategy.Reduce (it gathers the optimizer "
                         "state from the ranks that own it)")
        for name in sorted(self.state_of):
            owner_rank = self.owners[name] // self.D
            for state in self.state_of[name]:
                if state in user:
                    self.world.bcast_(user.array(state), root=owner_rank)
                    user.wrote_on_host([state])

    def _needs_sync(self):
        """At the first run and after any Scope.set on the user's scope (a sharer sees
        the source's arrays and never syncs)."""
        return not self.shared and self._synced != self.scopes[0].writes

    def _sync_parameters(self):
        """Make every device and rank hold rank 0's parameters (the replicas never drift)."""
        user = self.scopes[0]
        if self.world is not None and self.world.size > 1:
            from .. import distributed
            distributed.broadcast_parameters(self.program, user)
        for program, scope in zip(self.programs[1:], self.scopes[1:]):
            used = {v for op in program.global_block().ops
                    for v in op.input_vars() + op.output_vars() if v.persistable}
            for v in sorted(used, key=lambda v: v.name):
                if v.name not in user:
                    continue
                if self.reduce and not isinstance(v, Parameter):
                    # optimizer state: only its owner touches it; sharing the user's
                    # array keeps the user's scope (and a checkpoint) complete
                    scope.share(v.name, user.array(v.name))
                else:
                    scope.set(v.name, user.array(v.name), create=True)
        self._synced = user.writes


def _device_context(place):
    """Make a CUDA place's device current in this thread (a no-op for a CPU place)."""
    from ..executor.place import CUDAPlace
    if isinstance(place, CUDAPlace):
        from numba import cuda
        return cuda.gpus[place.device_id]
    import contextlib
    return contextlib.nullcontext()


def _signature(program):
    block = program.global_block()
    return (tuple(op.type for op in block.ops),
            tuple(sorted((v.name, tuple(v.shape), str(v.dtype)) for v in block.vars.values()
                         if v.persistable)))


def _full(var, value):
    shape = tuple(d if d >= 0 else 1 for d in var.shape)
    return np.full(shape, value, dtype=var.dtype)


def _with_comm(options, comm):
    import dataclasses
    return dataclasses.replace(options, comm=comm)
