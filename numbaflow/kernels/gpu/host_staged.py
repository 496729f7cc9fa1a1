"""Ops without a GPU kernel on a GPU: their CPU kernel run on host copies of the device
arrays (also the collectives: the communicator works on host memory)."""
import functools

import numpy as np


def _on_device(a):
    """A device array (a tensor array's list or a run-time value lives in a host 0-d object
    array on every place: executor/plan.py)."""
    return not (isinstance(a, np.ndarray) and a.dtype == object)


def host_staged(cpu_bind, ins, outs):
    """A thunk running a CPU kernel on device arrays through host buffers allocated here
    once: copy the inputs to the host, run `cpu_bind(host ins, host outs)`'s thunk, copy
    the outputs back. For ops without a GPU kernel, and for collectives (the
    communicator works on host memory). Host object arrays pass as they are."""
    # one host buffer per device array: an op updating an input in place (a `while`'s
    # loop variables are its X and its Out) updates it in one buffer, as on the host
    host = {}

    def staged(arrays):
        return {k: [host.setdefault(id(a), np.empty(a.shape, a.dtype)) if _on_device(a)
                    else a for a in v] for k, v in arrays.items()}
    h_ins, h_outs = staged(ins), staged(outs)
    run = cpu_bind(h_ins, h_outs)
    pairs_in = list({id(d): (d, h) for k in ins for d, h in zip(ins[k], h_ins[k])
                     if _on_device(d)}.values())
    pairs_out = list({id(d): (d, h) for k in outs for d, h in zip(outs[k], h_outs[k])
                      if _on_device(d)}.values())

    def thunk():
        for d, h in pairs_in:
            d.copy_to_host(h)
        run()
        for d, h in pairs_out:
            d.copy_to_device(h)
    return thunk


def on_host(cpu):
    """The GPU factory of an op whose CPU kernel factory `cpu` runs on host copies of the
    device arrays (`host_staged`)."""
    return lambda cop: functools.partial(host_staged, cpu(cop))
