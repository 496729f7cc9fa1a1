"""multi_devices: the data-parallel rewrite of a training program (one replica per device).

* The loss-gradient seed (the LOSS_GRAD-role op writing `<loss>@GRAD`) is removed and
  `<loss>@GRAD` becomes a fed variable: the runner feeds each device its share of the
  global batch (CoeffNumDevice), 1 (One), or the user's value (Customized).
* Every gradient an optimizer op reads is summed over all devices and ranks by a
  `c_allreduce_start` / `c_allreduce_wait` pair: started right after the op that finishes
  it, waited for just before its first reader, so the MPI call overlaps the rest of the
  backward pass (it runs on the group's communication thread). The backward ops now
  write the device's own `<grad>@LOCAL`, and the collective writes `<grad>`, so the
  optimizer, any clipping in between and a fetch of `<grad>` see the sum (the IR stays
  single-definition; the executor writes it in place over the dead local one). With
  `fuse_all_reduce_ops` the gradients are packed into buckets of at most `bucket_bytes` in the order they are finished, one pair
  (one MPI call: the executor lays a bucket out in one flat buffer) per bucket, started
  as soon as its last gradient is ready.

Every replica runs the same rewritten program.
"""
import numpy as np

from ..kernels.registry import OPTIMIZER, get_op_def
from ..graph.program import LOSS_GRAD
from ..graph.passes import Pass, register_pass


def _nbytes(v):
    return int(np.prod([max(d, 1) for d in v.shape], dtype=np.int64)) * np.dtype(v.dtype).itemsize


@register_pass
class MultiDevicesPass(Pass):
    name = "multi_devices"

    def __init__(self, protected=(), device="cpu", loss_name=None, fuse_all_reduce=True,
                 bucket_bytes=32 << 20, num_devices=2):
        super().__init__(protected, device)
        self.loss_name = loss_name
        self.num_devices = num_devices     # over all ranks: 1 needs no gradient sums
        self.fuse_all_reduce = fuse_all_reduce
        self.bucket_bytes = bucket_bytes
        self.loss_grad = None          # the fed `<loss>@GRAD` variable
        self.buckets = []              # [[gradient Variables]] in the order reduced

    def run(self, program):
        block = program.global_block()
        changed = self._seed_to_feed(block)
        grads = self._optimizer_grads(block) if self.num_devices > 1 else []
        if not grads:
            return changed
        finish = {}                    # gradient -> index of the op that finishes it
        for g in grads:
            last = block.producer(g)
            if last is not None:
                finish[g] = block.index(last)
        first_use = {}                 # gradient -> first later op reading it
        for g, i in finish.items():
            first_use[g] = min(j for j in map(block.index, block.consumers(g)) if j > i)
        order = sorted(finish, key=lambda g: (finish[g], g.name))
        self.buckets = self._bucket(order, finish, first_use)
        # the backward ops write `<grad>@LOCAL`; the collective writes `<grad>` itself, so
        # the optimizer, clipping and a fetch of `<grad>` all see the summed value. A
        # bucket starts right after its last gradient is finished and is waited for just
        # before the first op reading one of its sums: the MPI call overlaps what is
        # between (the rest of the backward pass).
        original = list(block.ops)
        inserts = []                   # (position in the original list, order, op)
        for k, bucket in enumerate(self.buckets):
            at = max(finish[g] for g in bucket)
            use = min(first_use[g] for g in bucket)
            local = [block.create_var(f"{g.name}@LOCAL", g.shape, g.dtype) for g in bucket]
            for g, lg in zip(bucket, local):
                upto = [o for o in block.consumers(g) + block.producers(g)
                        if block.index(o) <= at]
                block.replace_uses(g, lg, upto)
                block.replace_writes(g, lg, upto)
            token = block.create_var(f"allreduce_bucket_{k}.token", (), "int64")
            role = block.ops[at].role
            # nothing between the start and the wait: no overlap to gain, so the MPI call
            # is made at once, not handed to the communication thread
            start = block.make_op("c_allreduce_start", {"X": local}, {"Token": token},
                                   {"bucket": k, "overlap": use > at + 1})
            wait = block.make_op("c_allreduce_wait", {"X": local, "Token": token},
                                  {"Out": bucket}, {"bucket": k})
            start.role = wait.role = role
            inserts += [(at + 1, 0, k, start), (use, 1, k, wait)]
        # ops inserted at one original position keep (start before wait, bucket) order
        for pos, kind, k, op in sorted(inserts, key=lambda t: t[:3]):
            block.insert_before(original[pos] if pos < len(original) else None, op)
        return True

    def _seed_to_feed(self, block):
        if self.loss_name is None:
            return False
        name = f"{self.loss_name}@GRAD"
        for i, op in enumerate(block.ops):
            if op.role == LOSS_GRAD and op.output_arg_names == [name]:
                self.loss_grad = block.vars[name]
                self.loss_grad.is_data = True
                block.remove_ops([op])
                return True
        if name in block.vars:         # already fed (a Graph rewritten before)
            self.loss_grad = block.vars[name]
            return False
        self.refuse(name, "no loss-gradient seed op writes it: is loss_name the loss "
                          "that minimize() was called on?")
        return False

    @staticmethod
    def _optimizer_grads(block):
        grads = []
        for op in block.ops:
            if get_op_def(op.type).has(OPTIMIZER):
                grads += [g for g in op.inputs.get("Grad", []) if g not in grads]
        return grads

    def _bucket(self, order, finish, first_use):
        if not self.fuse_all_reduce:
            return [[g] for g in order]
        buckets, current, size = [], [], 0
        for g in order:
            # a bucket is placed after its last gradient is finished: it must still be
            # before the first reader of each gradient in it
            ready_at = max([finish[x] for x in current] + [finish[g]])
            fits = size + _nbytes(g) <= self.bucket_bytes and \
                (not current or current[0].dtype == g.dtype)     # one flat buffer per bucket
            in_time = all(ready_at < first_use[x] for x in current + [g])
            if current and not (fits and in_time):
                buckets.append(current)
                current, size = [], 0
            current.append(g)
            size += _nbytes(g)
        if current:
            buckets.append(current)
        return buckets


# ---------------------------------------------------------------- ReduceStrategy.Reduce
def assign_owners(program, num_devices):
    """{parameter name: global device index}: Paddle's greedy rule — walking the
    gradients in the order the backward pass finishes them, each goes to the device with
    the fewest elements so far (ties: the lowest index)."""
    block = program.global_block()
    pairs = {}                         # grad -> param, from the optimizer ops
    for op in block.ops:
        if get_op_def(op.type).has(OPTIMIZER):
            for p, g in zip(op.inputs.get("Param", []), op.inputs.get("Grad", [])):
                pairs[g] = p
    finished = []
    for op in block.ops:
        for v in op.output_vars():
            if v in pairs and v not in finished:
                finished.append(v)
    load, owners = [0] * num_devices, {}
    for g in finished:
        d = min(range(num_devices), key=lambda k: (load[k], k))
        owners[pairs[g].name] = d
        load[d] += int(np.prod([max(x, 1) for x in g.shape], dtype=np.int64))
    return owners


def optimizer_state(program):
    """{parameter name: [names of its optimizer state variables]} (moments, beta powers)."""
    return {name: sorted({v.name for op in ops for v in op.output_vars()
                          if v.persistable and v.name != name})
            for name, ops in _update_groups(program.global_block())}


def _update_groups(block):
    """[(parameter name, [ops updating it or its optimizer state])] in program order:
    each optimizer op with the OPTIMIZE ops that write its state inputs (Adam's beta-power
    `scale` ops)."""
    groups = []
    for op in block.ops:
        if not get_op_def(op.type).has(OPTIMIZER):
            continue
        params = op.inputs.get("Param", [])
        if len(params) != 1:
            raise ValueError(f"ReduceStrategy.Reduce: {op.type} updates {len(params)} "
                             f"parameters in one op; turn fuse_all_optimizer_ops off")
        state = {v for v in op.input_vars() if v.persistable} - set(params) - \
            set(op.inputs.get("LearningRate", []))
        followers = [o for o in block.ops if o is not op and o.output_vars()
                     and set(o.output_vars()) <= state]
        groups.append((params[0].name, [op] + followers))
    return groups


def owner_program(program, owners, device, fuse_broadcast=True):
    """A copy of `program` for global device `device` under Reduce: it updates only the
    parameters it owns, then every parameter is broadcast from its owner (one
    `c_broadcast` per owner and dtype with `fuse_broadcast`, else one per parameter; the
    same sequence on every device)."""
    prog = program.clone()
    block = prog.global_block()
    drop = set()
    for name, ops in _update_groups(block):
        if owners[name] != device:
            drop.update(id(o) for o in ops)
    block.remove_ops([o for o in block.ops if id(o) in drop])
    order = sorted(owners, key=lambda n: (owners[n], list(owners).index(n)))
    groups = []
    for name in order:
        p = block.vars[name]
        key = (owners[name], p.dtype)
        if fuse_broadcast and groups and groups[-1][0] == key:
            groups[-1][1].append(p)
        else:
            groups.append((key, [p]))
    for k, ((owner, _), params) in enumerate(groups):
        op = block.make_op("c_broadcast", {"X": params}, {"Out": params},
                            {"root": owner, "bucket": k})
        op.role = block.ops[-1].role if block.ops else op.role
        block.insert_before(None, op)
    return prog
