"""Containers: Sequential, LayerList, LayerDict, ParameterList (Paddle 2.6's; sublayers
are registered under their index or key, so state_dict keys read `0.weight`, `blocks.1.bias`)."""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ...graph.program import Parameter
from .layers import Layer

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["Sequential", "LayerList", "LayerDict", "ParameterList"]


class Sequential(Layer):
    """Calls its layers one after another.

    Args:
        *layers: Layers, or (name, Layer) pairs (or one OrderedDict of them).

    Example:
        >>> net = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.ReLU(),
        ...                            paddle.nn.Linear(8, 2))
        >>> net(static.data('x', [None, 4])).shape
        (-1, 2)
        >>> list(net.state_dict(keys_only=True))
        ['0.weight', '0.bias', '2.weight', '2.bias']
        >>> named = paddle.nn.Sequential(('l1', paddle.nn.Linear(4, 2)))
        >>> named['l1'] is named[0]
        True
    """

    def __init__(self, *layers: Any) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], dict):
            layers = tuple(layers[0].items())
        for i, layer in enumerate(layers):
            if isinstance(layer, (tuple, list)) and len(layer) == 2:
                self.add_sublayer(str(layer[0]), layer[1])
            else:
                self.add_sublayer(str(i), layer)

    def __getitem__(self, index):
        if isinstance(index, str):      # a layer added as a (name, Layer) pair
            return self._sub_layers[index]
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        return layers[index]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def forward(self, input: Any) -> Any:
        """Each layer applied to the previous one's output.

        Args:
            input (Variable): the first layer's input.

        Returns:
            Variable: the last layer's output.
        """
        for layer in self._sub_layers.values():
            input = layer(input)
        return input


class LayerList(Layer):
    """A list of sublayers, registered under their indices.

    Args:
        sublayers (iterable of Layer, optional): the initial layers.

    Example:
        >>> blocks = paddle.nn.LayerList([paddle.nn.Linear(4, 4) for _ in range(2)])
        >>> len(blocks), list(blocks.state_dict(keys_only=True))[-1]
        (2, '1.bias')
    """

    def __init__(self, sublayers: Iterable[Layer] | None = None) -> None:
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def _index(self, i):
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"LayerList index {i} out of range (length {n})")
        return str(i % n)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return LayerList(list(self._sub_layers.values())[i])
        return self._sub_layers[self._index(i)]

    def __setitem__(self, i, layer):
        self.add_sublayer(self._index(i), layer)

    def __delitem__(self, i):
        layers = list(self._sub_layers.values())
        del layers[i if isinstance(i, slice) else int(self._index(i))]
        self._sub_layers = OrderedDict((str(k), v) for k, v in enumerate(layers))

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self._sub_layers.values())

    def append(self, sublayer: Layer) -> LayerList:
        """Add `sublayer` at the end.

        Args:
            sublayer (Layer): the layer.

        Returns:
            LayerList: self.
        """
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index: int, sublayer: Layer) -> None:
        """Insert `sublayer` before `index`.

        Args:
            index (int): the position.
            sublayer (Layer): the layer.
        """
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._sub_layers = OrderedDict()
        for layer in layers:
            self.append(layer)

    def extend(self, sublayers: Iterable[Layer]) -> LayerList:
        """Append each of `sublayers`.

        Args:
            sublayers (iterable of Layer): the layers.

        Returns:
            LayerList: self.
        """
        for layer in sublayers:
            self.append(layer)
        return self


class LayerDict(Layer):
    """An ordered dict of sublayers, registered under their keys.

    Args:
        sublayers (dict or iterable of (key, Layer), optional): the initial layers.

    Example:
        >>> d = paddle.nn.LayerDict({'fc': paddle.nn.Linear(2, 2), 'act': paddle.nn.ReLU()})
        >>> list(d.keys()), len(d)
        (['fc', 'act'], 2)
    """

    def __init__(self, sublayers: Any = None) -> None:
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, layer):
        self.add_sublayer(key, layer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key):
        return key in self._sub_layers

    def clear(self) -> None:
        """Remove every sublayer."""
        self._sub_layers.clear()

    def pop(self, key: str) -> Layer:
        """Remove and return the sublayer `key`.

        Args:
            key (str): the key.

        Returns:
            Layer: the removed layer.
        """
        return self._sub_layers.pop(key)

    def keys(self) -> Any:
        """The keys.

        Returns:
            keys view: the keys, in order.
        """
        return self._sub_layers.keys()

    def items(self) -> Any:
        """The (key, layer) pairs.

        Returns:
            items view: in order.
        """
        return self._sub_layers.items()

    def values(self) -> Any:
        """The layers.

        Returns:
            values view: in order.
        """
        return self._sub_layers.values()

    def update(self, sublayers: Any) -> None:
        """Add (or replace) the given layers.

        Args:
            sublayers (dict or iterable of (key, Layer)): the layers.
        """
        for key, layer in (sublayers.items() if hasattr(sublayers, "items") else sublayers):
            self.add_sublayer(key, layer)


class ParameterList(Layer):
    """A list of parameters, registered under their indices.

    Args:
        parameters (iterable of Parameter, optional): the initial parameters.

    Example:
        >>> owner = paddle.nn.Layer()
        >>> plist = paddle.nn.ParameterList([owner.create_parameter([2]) for _ in range(3)])
        >>> len(plist), [n for n, _ in plist.named_parameters()]
        (3, ['0', '1', '2'])
    """

    def __init__(self, parameters: Iterable[Parameter] | None = None) -> None:
        super().__init__()
        for p in parameters or ():
            self.append(p)

    def __getitem__(self, i):
        return list(self._parameters.values())[i]

    def __setitem__(self, i, p):
        self.add_parameter(str(i % len(self)), p)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, parameter: Parameter) -> ParameterList:
        """Add `parameter` at the end.

        Args:
            parameter (Parameter): the parameter.

        Returns:
            ParameterList: self.
        """
        self.add_parameter(str(len(self)), parameter)
        return self
