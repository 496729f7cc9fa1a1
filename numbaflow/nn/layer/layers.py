"""`paddle.nn.Layer` in static mode: a Layer's `forward` appends ops to the current
program (through the functional ops), and its parameters live in the program it was
built in, initialised by the startup program, their values in the scope.

Names follow Paddle 2.6: a Layer is `full_name()` = `<snake_case class name>_N`
(`linear_0`, `batch_norm2d_0`), its parameters `linear_0.w_0`, `linear_0.b_0`, ..., and
`state_dict()` keys are the attribute paths (`conv.weight`, `bn._mean`), so a Paddle
`.pdparams` of the same model loads with `set_state_dict(paddle.load(path))`.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from ...graph.program import Parameter, Variable, default_main_program
from ...layer_helper import LayerHelper
from ...utils import unique_name
from .layer_state import LayerState
from .layer_walk import LayerWalk

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Layer"]


def camel_to_snake(name: str) -> str:
    """Paddle's layer name stem of a class name.

    >>> camel_to_snake('BatchNorm2D')
    'batch_norm2d'
    """
    # Paddle's _convert_camel_to_snake: BatchNorm2D -> batch_norm2d, Conv2D -> conv2d
    s1 = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", s1).lower()


class HookRemoveHelper:
    """What `register_forward_*_hook` returns: `.remove()` unregisters the hook."""

    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing).

        Example:
            >>> layer = paddle.nn.Layer()
            >>> h = layer.register_forward_pre_hook(lambda layer, inputs: None)
            >>> h.remove()
        """
        self._hooks.pop(self._key, None)


class Layer(LayerWalk, LayerState):
    """The base of every layer and model (Paddle's `paddle.nn.Layer`), in static mode:
    calling it runs `forward`, which appends ops to the current main program.

    Sublayers and parameters assigned as attributes (`self.fc = nn.Linear(4, 2)`) are
    registered; `parameters()`, `state_dict()`, `train()` / `eval()` walk them.

    Args:
        name_scope (str, optional): the stem of `full_name()` and of the parameters'
            names; default the class name in snake case (`MyNet` -> `my_net_0`).
        dtype (str): the default dtype of `create_parameter`.

    Example:
        >>> class Net(paddle.nn.Layer):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = paddle.nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return F.relu(self.fc(x))
        >>> net = Net()
        >>> net(static.data('x', [None, 4])).shape
        (-1, 2)
        >>> list(net.state_dict(keys_only=True))
        ['fc.weight', 'fc.bias']
        >>> [p.name for p in net.parameters()]
        ['linear_0.w_0', 'linear_0.b_0']
    """

    def __init__(self, name_scope: str | None = None, dtype: str = "float32") -> None:
        self.training = True
        self._full_name = unique_name.generate(name_scope or camel_to_snake(type(self).__name__))
        self._dtype = dtype
        self._parameters = OrderedDict()
        self._sub_layers = OrderedDict()
        self._buffers = OrderedDict()
        self._non_persistable_buffer_names_set = set()
        self._forward_pre_hooks = OrderedDict()
        self._forward_post_hooks = OrderedDict()
        self._hook_id = 0

    # ------------------------------------------------------------------ calling
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """The computation: a subclass defines it (called by `layer(...)`).

        Args:
            *inputs: the inputs (Variables).
            **kwargs: keyword inputs.

        Returns:
            Variable or tuple: the outputs.

        Raises:
            NotImplementedError: the subclass did not define forward.
        """
        raise NotImplementedError(
            f"{type(self).__name__} ({self._full_name}) has no forward(): define "
            f"`def forward(self, x): ...` in the class, returning the output Variable(s) "
            f"built from its sublayers and paddle.nn.functional ops")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.__init__ did not call "
                               f"super().__init__(): call it first in __init__")
        self._adopt_into_current_program()
        for hook in list(self._forward_pre_hooks.values()):
            got = hook(self, inputs)
            if got is not None:
                inputs = got if isinstance(got, tuple) else (got,)
        out = self.forward(*inputs, **kwargs)
        for hook in list(self._forward_post_hooks.values()):
            got = hook(self, inputs, out)
            if got is not None:
                out = got
        return out

    def _adopt_into_current_program(self):
        """A layer built in one program and called in another (built outside
        `program_guard`, or called again for a test program) uses that program's
        Parameters of the same names (declared there if missing; the values are the
        scope's, by name): else the calling program's optimizer would not see them and
        they would silently not train. Initialisers stay in the startup program the
        layer was built with."""
        block = default_main_program().global_block()
        for layer in self.sublayers(include_self=True):
            own = layer._parameters
            for key, p in own.items():
                if p is None or p.block is block:
                    continue
                there = block.vars.get(p.name)
                if there is None:
                    there = block.create_parameter(
                        p.name, p.shape, p.dtype, trainable=p.trainable,
                        learning_rate=p.optimize_attr["learning_rate"],
                        regularizer=p.regularizer, initializer=p.initializer)
                elif not isinstance(there, Parameter) or there.shape != p.shape:
                    raise ValueError(f"{layer.full_name()}: the current program already has a "
                                     f"variable {p.name!r} ({there!r}) that is not this "
                                     f"layer's parameter; build the layer under a "
                                     f"unique_name.guard() or in this program")
                own[key] = there

    def _register_hook(self, hooks, hook):
        if not callable(hook):
            raise TypeError(f"{self._full_name}: a hook must be callable, got "
                            f"{type(hook).__name__}")
        self._hook_id += 1
        hooks[self._hook_id] = hook
        return HookRemoveHelper(hooks, self._hook_id)

    def register_forward_pre_hook(self, hook: Callable) -> HookRemoveHelper:
        """Call `hook(layer, inputs)` before forward; a non-None result replaces the inputs.

        Args:
            hook (callable): `hook(layer, inputs_tuple)`.

        Returns:
            HookRemoveHelper: `.remove()` unregisters it.

        Example:
            >>> fc = paddle.nn.Linear(2, 2)
            >>> h = fc.register_forward_pre_hook(lambda layer, inp: (inp[0] * 2.0,))
            >>> fc(static.data('x', [None, 2])).shape
            (-1, 2)
        """
        return self._register_hook(self._forward_pre_hooks, hook)

    def register_forward_post_hook(self, hook: Callable) -> HookRemoveHelper:
        """Call `hook(layer, inputs, output)` after forward; a non-None result replaces the
        output.

        Args:
            hook (callable): `hook(layer, inputs_tuple, output)`.

        Returns:
            HookRemoveHelper: `.remove()` unregisters it.

        Example:
            >>> fc = paddle.nn.Linear(2, 2)
            >>> h = fc.register_forward_post_hook(lambda layer, inp, out: F.relu(out))
            >>> fc(static.data('x', [None, 2])).shape
            (-1, 2)
        """
        return self._register_hook(self._forward_post_hooks, hook)

    # ------------------------------------------------------------------ registration
    def full_name(self) -> str:
        """This layer's unique name, the stem of its parameters' names.

        Returns:
            str: e.g. 'linear_0'.

        Example:
            >>> paddle.nn.Linear(2, 3).full_name()
            'linear_0'
        """
        return self._full_name

    @property
    def _helper(self) -> LayerHelper:
        # Paddle's Layer._helper: what a forward written with raw ops (Paddle's own
        # ParameterList example) appends them through
        return LayerHelper(self._full_name, self._full_name)

    def create_parameter(self, shape: list[int], attr: Any = None, dtype: str | None = None,
                         is_bias: bool = False, default_initializer: Any = None
                         ) -> Parameter | None:
        """A Parameter named `<full_name>.w_N` (`.b_N` with is_bias) in the current main
        program, its initialiser in the startup program.

        Args:
            shape (list of int): fully known.
            attr (ParamAttr, str or False, optional): name / initializer / trainable;
                False: no parameter (returns None).
            dtype (str, optional): default the layer's dtype.
            is_bias (bool): zero-initialised by default, named `.b_N`.
            default_initializer (Initializer, optional): used when attr gives none
                (default XavierUniform for weights).

        Returns:
            Parameter or None: the parameter (assign it to an attribute to register it).

        Example:
            >>> layer = paddle.nn.Layer()
            >>> w = layer.create_parameter([3, 2])
            >>> w.name, w.shape
            ('layer_0.w_0', (3, 2))
        """
        if attr is False:
            return None
        if isinstance(attr, str) and attr == "":
            attr = None
        return self._helper.create_parameter(attr, list(shape), dtype or self._dtype, is_bias,
                                       default_initializer)

    def add_parameter(self, name: str, parameter: Parameter | None) -> Parameter | None:
        """Register `parameter` under `name` (as `self.name = parameter` does).

        Args:
            name (str): the attribute name (no '.').
            parameter (Parameter or None): from create_parameter.

        Returns:
            Parameter or None: the parameter.

        Example:
            >>> layer = paddle.nn.Layer()
            >>> _ = layer.add_parameter('scale', layer.create_parameter([1]))
            >>> [n for n, _ in layer.named_parameters()]
            ['scale']
        """
        self._check_name(name, "add_parameter")
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"{self._full_name}.add_parameter({name!r}): expected a Parameter "
                            f"(from create_parameter), got {type(parameter).__name__}")
        if name in self._sub_layers or name in self._buffers:
            raise KeyError(f"{self._full_name}.add_parameter: {name!r} is already a "
                           f"{'sublayer' if name in self._sub_layers else 'buffer'}")
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name: str, sublayer: Layer) -> Layer:
        """Register `sublayer` under `name` (as `self.name = sublayer` does).

        Args:
            name (str): the attribute name.
            sublayer (Layer): the child.

        Returns:
            Layer: the sublayer.

        Example:
            >>> net = paddle.nn.Layer()
            >>> _ = net.add_sublayer('fc', paddle.nn.Linear(2, 2))
            >>> [n for n, _ in net.named_children()]
            ['fc']
        """
        if not (sublayer is None or isinstance(sublayer, Layer)):
            raise TypeError(f"{self._full_name}.add_sublayer({name!r}): expected a Layer, "
                            f"got {type(sublayer).__name__}")
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def register_buffer(self, name: str, tensor: Variable | np.ndarray | None,
                        persistable: bool = True) -> None:
        """Register a non-trainable state (e.g. running statistics): a Variable, or an
        array (then a persistable variable `<full_name>.buffer_N` set by the startup
        program). Persistable buffers are in state_dict().

        Args:
            name (str): the attribute name.
            tensor (Variable, ndarray or None): the buffer.
            persistable (bool): whether state_dict() holds it.

        Example:
            >>> layer = paddle.nn.Layer()
            >>> layer.register_buffer('steps', np.zeros([1], 'float32'))
            >>> list(layer.state_dict(keys_only=True))
            ['steps']
        """
        self._check_name(name, "register_buffer")
        if name in self._parameters or name in self._sub_layers:
            raise KeyError(f"{self._full_name}.register_buffer: {name!r} is already a "
                           f"{'parameter' if name in self._parameters else 'sublayer'}")
        if tensor is not None and not isinstance(tensor, Variable):
            tensor = self._array_buffer(np.asarray(tensor))
        self._buffers[name] = tensor
        if persistable:
            self._non_persistable_buffer_names_set.discard(name)
        else:
            self._non_persistable_buffer_names_set.add(name)

    def _array_buffer(self, value):
        from ...param_attr import ParamAttr
        from ...param_init import Assign
        attr = ParamAttr(name=unique_name.generate(f"{self._full_name}.buffer"),
                         initializer=Assign(value), trainable=False)
        return LayerHelper(self._full_name, self._full_name).create_parameter(
            attr, list(value.shape), str(value.dtype))

    def _check_name(self, name, fn):
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"{self._full_name}.{fn}: the name must be a non-empty str "
                           f"without '.', got {name!r}")
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                               f"{fn}")

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter) and "_parameters" in d:
            for other in (d["_sub_layers"], d["_buffers"]):
                other.pop(name, None)
            d.pop(name, None)
            d["_parameters"][name] = value
        elif isinstance(value, Layer):
            if "_sub_layers" not in d:
                raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                                   f"assigning the sublayer {name!r}")
            d["_parameters"].pop(name, None)
            d["_buffers"].pop(name, None)
            d.pop(name, None)
            d["_sub_layers"][name] = value
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(f"{self._full_name}: {name!r} is a parameter; assign a "
                                f"Parameter (from create_parameter) or None, not "
                                f"{type(value).__name__}")
            d["_parameters"][name] = None
        elif "_sub_layers" in d and name in d["_sub_layers"] and value is None:
            d["_sub_layers"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Variable):
                raise TypeError(f"{self._full_name}: {name!r} is a buffer; assign a "
                                f"Variable or None, not {type(value).__name__}")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for reg in ("_parameters", "_sub_layers", "_buffers"):
            if reg in d and name in d[reg]:
                return d[reg][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        for reg in ("_parameters", "_sub_layers", "_buffers"):
            if name in self.__dict__.get(reg, {}):
                del self.__dict__[reg][name]
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._sub_layers)
                      | set(self._buffers))

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The constructor arguments shown by repr(); a subclass may override it.

        Returns:
            str: e.g. 'in_features=2, out_features=3'.

        Example:
            >>> paddle.nn.Linear(2, 3).extra_repr()
            'in_features=2, out_features=3, dtype=float32'
        """
        return ""

    def __repr__(self):
        lines = [f"({n}): " + repr(sub).replace("\n", "\n  ")
                 for n, sub in self._sub_layers.items() if sub is not None]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n  " + "\n  ".join(lines) + "\n)" if lines else ")")
