"""paddle.nn's layers in static mode: the `Layer` base and the layer zoo (thin Layers
over the functional ops). numbaflow.nn re-exports every name of `__all__`."""
from . import activation, common, container, conv, loss, norm, pooling, rnn, transformer, vision
from . import pooling3d
from .layers import Layer

__all__ = ["Layer"]
for _mod in (common, conv, pooling, norm, container, activation, loss, transformer, rnn,
             vision, pooling3d):
    for _name in _mod.__all__:
        globals()[_name] = getattr(_mod, _name)
    __all__ += _mod.__all__
