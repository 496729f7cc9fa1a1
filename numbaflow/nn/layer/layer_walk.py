"""Walking a Layer tree: sublayers, parameters and buffers by path, train() / eval(),
apply(), to(). Mixed into `Layer` (numbaflow/nn/layer/layers.py), which imports this
file: so the annotations name the mixin, `LayerWalk`, that every Layer is."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ...graph.program import Parameter, Variable


class LayerWalk:
    """The tree-walking methods of `paddle.nn.Layer`.

    Example:
        >>> [n for n, _ in paddle.nn.Linear(2, 2).named_parameters()]
        ['weight', 'bias']
    """

    def _own_parameters(self):
        return list(self._parameters.items())

    def _own_buffers(self):
        return list(self._buffers.items())

    # ------------------------------------------------------------------ walking
    def named_children(self) -> Iterator[tuple[str, LayerWalk]]:
        """The direct sublayers with their attribute names.

        Yields:
            (str, Layer): name and sublayer.

        Example:
            >>> seq = paddle.nn.Sequential(paddle.nn.Linear(2, 2), paddle.nn.ReLU())
            >>> [n for n, _ in seq.named_children()]
            ['0', '1']
        """
        seen = set()
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield name, layer

    def children(self) -> Iterator[LayerWalk]:
        """The direct sublayers.

        Yields:
            Layer: each direct sublayer.

        Example:
            >>> seq = paddle.nn.Sequential(paddle.nn.Linear(2, 2), paddle.nn.ReLU())
            >>> len(list(seq.children()))
            2
        """
        for _, layer in self.named_children():
            yield layer

    def named_sublayers(self, prefix: str = "", include_self: bool = False,
                        layers_set: set | None = None) -> Iterator[tuple[str, LayerWalk]]:
        """Every sublayer, depth first, with its dotted path (`block.0.conv`).

        Args:
            prefix (str): put before every path.
            include_self (bool): yield (prefix, self) first.
            layers_set (set, optional): ids already seen (a layer is yielded once).

        Yields:
            (str, Layer): path and sublayer.

        Example:
            >>> seq = paddle.nn.Sequential(paddle.nn.Sequential(paddle.nn.ReLU()))
            >>> [n for n, _ in seq.named_sublayers()]
            ['0', '0.0']
        """
        layers_set = set() if layers_set is None else layers_set
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for name, layer in self._sub_layers.items():
            if layer is None:
                continue
            path = f"{prefix}.{name}" if prefix else name
            yield from layer.named_sublayers(path, True, layers_set)

    def sublayers(self, include_self: bool = False) -> list[LayerWalk]:
        """Every sublayer, depth first.

        Args:
            include_self (bool): put self first.

        Returns:
            list of Layer: the sublayers.

        Example:
            >>> seq = paddle.nn.Sequential(paddle.nn.Linear(2, 2), paddle.nn.ReLU())
            >>> [type(s).__name__ for s in seq.sublayers()]
            ['Linear', 'ReLU']
        """
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """The parameters with their dotted paths (`fc.weight`), each once.

        Args:
            prefix (str): put before every path.
            include_sublayers (bool): also the sublayers' parameters.

        Yields:
            (str, Parameter): path and parameter.

        Example:
            >>> fc = paddle.nn.Linear(2, 3)
            >>> [(n, p.shape) for n, p in fc.named_parameters()]
            [('weight', (2, 3)), ('bias', (3,))]
        """
        seen = set()
        layers = self.named_sublayers(prefix, True) if include_sublayers else [(prefix, self)]
        for path, layer in layers:
            for name, p in layer._own_parameters():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{path}.{name}" if path else name), p

    def parameters(self, include_sublayers: bool = True) -> list[Parameter]:
        """The parameters (each once), e.g. for `optimizer.Adam(parameters=...)`.

        Args:
            include_sublayers (bool): also the sublayers' parameters.

        Returns:
            list of Parameter: the parameters.

        Example:
            >>> [p.name for p in paddle.nn.Linear(2, 3).parameters()]
            ['linear_0.w_0', 'linear_0.b_0']
        """
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True
                      ) -> Iterator[tuple[str, Variable]]:
        """The buffers with their dotted paths.

        Args:
            prefix (str): put before every path.
            include_sublayers (bool): also the sublayers' buffers.

        Yields:
            (str, Variable): path and buffer.

        Example:
            >>> layer = paddle.nn.Layer()
            >>> layer.register_buffer('steps', np.zeros([1], 'float32'))
            >>> [n for n, _ in layer.named_buffers()]
            ['steps']
        """
        layers = self.named_sublayers(prefix, True) if include_sublayers else [(prefix, self)]
        for path, layer in layers:
            for name, b in layer._own_buffers():
                if b is not None:
                    yield (f"{path}.{name}" if path else name), b

    def buffers(self, include_sublayers: bool = True) -> list[Variable]:
        """The buffers.

        Args:
            include_sublayers (bool): also the sublayers' buffers.

        Returns:
            list of Variable: the buffers.

        Example:
            >>> paddle.nn.Linear(2, 2).buffers()
            []
        """
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    # ------------------------------------------------------------------ modes
    def train(self) -> LayerWalk:
        """Training mode for this layer and its sublayers: calls build dropout and batch
        statistics.

        Returns:
            Layer: self.

        Example:
            >>> paddle.nn.Dropout(0.5).train().training
            True
        """
        for layer in self.sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self) -> LayerWalk:
        """Inference mode for this layer and its sublayers: calls made afterwards build
        the inference ops (dropout off, batch norm with its running statistics).

        Returns:
            Layer: self.

        Example:
            >>> paddle.nn.Dropout(0.5).eval().training
            False
        """
        for layer in self.sublayers(include_self=True):
            layer.training = False
        return self

    def apply(self, fn: Callable[[LayerWalk], Any]) -> LayerWalk:
        """Call `fn(layer)` on every sublayer (children first), then on self.

        Args:
            fn (callable): takes a Layer.

        Returns:
            Layer: self.

        Example:
            >>> seen = []
            >>> _ = paddle.nn.Sequential(paddle.nn.ReLU()).apply(lambda l: seen.append(type(l).__name__))
            >>> seen
            ['ReLU', 'Sequential']
        """
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def to(self, device: Any = None, dtype: Any = None, blocking: Any = None) -> LayerWalk:
        """Accepted for Paddle compatibility; the place is the Executor's, so nothing moves.

        Args:
            device (str, optional): ignored.
            dtype (str, optional): ignored.
            blocking (bool, optional): ignored.

        Returns:
            Layer: self.

        Example:
            >>> fc = paddle.nn.Linear(2, 2)
            >>> fc.to('cpu') is fc
            True
        """
        return self
