"""Ops without a GPU kernel on a GPU: their CPU kernel run on host copies of the device
arrays (also the collectives: the communicator works on host memory)."""
import numpy as np


def host_staged(cpu_bind, ins, outs):
    """A thunk running a CPU kernel on device arrays through host buffers allocated here
    once: copy the inputs to the host, run `cpu_bind(host ins, host outs)`'s thunk, copy
    the outputs back. For ops without a GPU kernel, and for collectives (the
    communicator works on host memory)."""
    h_ins = {k: [np.empty(a.shape, a.dtype) for a in v] for k, v in ins.items()}
    h_outs = {k: [np.empty(a.shape, a.dtype) for a in v] for k, v in outs.items()}
    run = cpu_bind(h_ins, h_outs)
    pairs_in = [(d, h) for k in ins for d, h in zip(ins[k], h_ins[k])]
    pairs_out = [(d, h) for k in outs for d, h in zip(outs[k], h_outs[k])]

    def thunk():
        for d, h in pairs_in:
            d.copy_to_host(h)
        run()
        for d, h in pairs_out:
            d.copy_to_device(h)
    return thunk
