"""The IR's nodes: Variable, Parameter and Operator (program.py holds Block and Program,
which own them). Split from program.py only to keep files short; import them from
`numbaflow.graph.program` or `numbaflow.graph` as before.

The imports run one way: block.py and program.py import the nodes, never back. A node's
`block` is annotated `Block` as text only (annotations are not evaluated here), so that
the type costs no import of block.py."""
from __future__ import annotations

import functools

from typing import TYPE_CHECKING, Any

from .. import dtypes
from ..utils.hints import dygraph_attribute

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike


# Op roles, as in Paddle: which part of a training program an op belongs to.
FORWARD, BACKWARD, OPTIMIZE, LOSS_GRAD = "forward", "backward", "optimize", "loss_grad"


class Variable:
    """A named tensor of a Block: made by `static.data` and the layer functions, fed and
    fetched by name. Arithmetic operators (+ - * / ** @, unary -) append ops.

    Args:
        block (Block): the block it belongs to.
        name (str): the unique name (the key in feeds, fetches and the Scope).
        shape (sequence of int): -1 for an unknown (batch) dim; stored as a tuple.
        dtype (str or numpy dtype): the element type.
        persistable (bool): kept in the Scope between runs (parameters, optimizer state).
        stop_gradient (bool): no gradient flows through it.
        is_data (bool): fed by the user (made by `static.data`).

    Create Variables with `static.data`, the layer functions or `Block.create_var`, not
    directly.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> y = x * 2.0 + 1.0
        >>> y.shape, y.dtype, y.ndim
        ((-1, 3), dtype('float32'), 2)
    """

    # a tensor array (Paddle's LoDTensorArray, made by paddle.tensor.create_array): a
    # run-time list of tensors; shape and dtype are those of its elements
    is_tensor_array = False
    # a value whose shape and dtype are known only when the program runs: the output of a
    # cond whose branches give different shapes (Paddle's select_input of any shapes); its
    # declared shape has -1 where the branches differ. It can be fetched or returned from
    # an enclosing cond, not read by other ops (plans are static-shape)
    runtime_shape = False

    def __init__(self, block: Block, name: str, shape: Sequence[int], dtype: DTypeLike,
                 persistable: bool = False, stop_gradient: bool = False,
                 is_data: bool = False) -> None:
        self.block = block
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtypes.convert_dtype(dtype)
        self.persistable = persistable
        self.stop_gradient = stop_gradient
        self.is_data = is_data

    def __getattr__(self, name):
        # only missing attributes get here: dygraph's loss.backward(), x.numpy(), x.item()
        # are told what the static API does instead
        if name in ("backward", "numpy", "item"):
            raise dygraph_attribute("Variable", name)
        if name in Variable._methods:       # x.reshape(...), x.sum(), as Paddle's Variable
            return functools.partial(self._math, name, self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.shape)

    def __repr__(self):
        kind = "Parameter" if isinstance(self, Parameter) else "Variable"
        return (f"{kind}(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, "
                f"persistable={self.persistable}, stop_gradient={self.stop_gradient})")

    def to_string(self) -> str:
        """A one-line description: flags, name, shape, dtype, stop_gradient.

        Returns:
            str: e.g. `data var x : shape(-1, 3) dtype(float32) stop_gradient(True)`.
        """
        flags = []
        if self.persistable:
            flags.append("persist")
        if isinstance(self, Parameter):
            flags.append("trainable param" if self.trainable else "param")
        elif self.is_data:
            flags.append("data")
        prefix = (" ".join(flags) + " ") if flags else ""
        return (f"{prefix}var {self.name} : shape{self.shape} dtype({self.dtype}) "
                f"stop_gradient({self.stop_gradient})")

    # operator overloads build ops through the public math functions (add, matmul, ...),
    # which live above the graph layer: numbaflow.tensor hands them in when it is
    # imported (`use_math_functions`), so this layer never imports upward
    _math_functions = None
    # the tensor functions Paddle's static Variable also has as methods (its
    # tensor_method_func) that numbaflow.tensor implements: x.reshape(s) is reshape(x, s)
    _methods = frozenset()

    def _math(self, name, *args, **kw):
        return getattr(Variable._math_functions, name)(*args, **kw)

    def __add__(self, o): return self._math("add", self, o)
    def __radd__(self, o): return self._math("add", o, self)
    def __sub__(self, o): return self._math("subtract", self, o)
    def __rsub__(self, o): return self._math("subtract", o, self)
    def __mul__(self, o): return self._math("multiply", self, o)
    def __rmul__(self, o): return self._math("multiply", o, self)
    def __truediv__(self, o): return self._math("divide", self, o)
    def __rtruediv__(self, o): return self._math("divide", o, self)
    def __mod__(self, o): return self._math("remainder", self, o)
    def __floordiv__(self, o): return self._math("floor_divide", self, o)
    def __rmod__(self, o): return self._math("remainder", o, self)
    def __pow__(self, o): return self._math("pow", self, o)
    def __rpow__(self, o): return self._math("pow", o, self)
    def __matmul__(self, o): return self._math("matmul", self, o)
    def __neg__(self): return self._math("scale", self, scale=-1.0)
    # comparisons give bool Variables, as in Paddle (== and != stay identity: Variables
    # are dict keys and list members throughout the graph code)
    def __lt__(self, o): return self._math("less_than", self, o)
    def __le__(self, o): return self._math("less_equal", self, o)
    def __gt__(self, o): return self._math("greater_than", self, o)
    def __ge__(self, o): return self._math("greater_equal", self, o)
    __hash__ = object.__hash__

    def astype(self, dtype: DTypeLike) -> Variable:
        """This Variable cast to `dtype` (a `cast` op), as Paddle's Variable.astype.

        Args:
            dtype (str or numpy dtype): the new element type.

        Returns:
            Variable: x's shape, `dtype`.

        Example:
            >>> x = static.data('x', [None, 3], 'int64')
            >>> str(x.astype('float32').dtype)
            'float32'
        """
        return self._math("cast", self, dtype)

    def __getitem__(self, item: Any) -> Variable:
        """Basic indexing as a `slice` op (`strided_slice` when a step is not 1), both
        differentiable: ints, slices, `...`; an int drops its dim, as in numpy.

        Args:
            item (int, slice, Ellipsis or a tuple of them): the index.

        Returns:
            Variable: the selected part.

        Example:
            >>> x = static.data('x', [None, 4, 3])
            >>> x[0].shape, x[:, 1:3].shape, x[..., ::-1].shape
            ((4, 3), (-1, 2, 3), (-1, 4, 3))
        """
        return _getitem(self, item)


def _getitem(var, item):
    items = list(item) if isinstance(item, tuple) else [item]
    if sum(it is Ellipsis for it in items) > 1:
        raise IndexError(f"{var.name}[...]: an index can hold at most one '...'")
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (var.ndim - len(items) + 1)
    if len(items) > var.ndim:
        raise IndexError(f"{var.name}: too many indices ({len(items)}) for a Variable of "
                         f"shape {var.shape}")
    big = 2 ** 62       # an end beyond any dim (Python slicing clamps it)
    axes, starts, ends, steps, decrease = [], [], [], [], []
    for ax, it in enumerate(items):
        if isinstance(it, bool) or not isinstance(it, (int, slice)) and \
                not hasattr(it, "__index__"):
            raise TypeError(f"{var.name}[...]: only ints, slices and '...' index a Variable "
                            f"(got {type(it).__name__}); index lists, masks and None "
                            f"(gather-style indexing) are not supported")
        if isinstance(it, slice):
            step = 1 if it.step is None else int(it.step)
            if step == 0:
                raise ValueError(f"{var.name}[...]: slice step cannot be zero")
            if it.start is None and it.stop is None and step == 1:
                continue
            start = (0 if step > 0 else big) if it.start is None else int(it.start)
            end = (big if step > 0 else -big) if it.stop is None else int(it.stop)
            axes.append(ax), starts.append(start), ends.append(end), steps.append(step)
        else:
            i = int(it)
            dim = var.shape[ax]
            if dim != -1 and not -dim <= i < dim:
                raise IndexError(f"{var.name}: index {i} is out of range for axis {ax} of "
                                 f"size {dim}")
            axes.append(ax), starts.append(i), ends.append(i + 1 if i != -1 else big)
            steps.append(1), decrease.append(ax)
    attrs = {"axes": axes, "starts": starts, "ends": ends, "decrease_axis": decrease,
             "infer_flags": [1] * len(axes)}
    if any(st != 1 for st in steps):
        return var._math("slice_op", "strided_slice", var, dict(attrs, strides=steps))
    return var._math("slice_op", "slice", var, attrs)


class Parameter(Variable):
    """A persistable, trainable Variable initialised by an op in the startup program.
    Made by layers (`static.nn.fc`, ...) through `ParamAttr`, not directly.

    Args:
        block (Block): the block it belongs to.
        name (str): the unique name.
        shape (sequence of int): fully known.
        dtype (str or numpy dtype): the element type.
        trainable (bool): optimizers update it (stop_gradient is `not trainable`).
        learning_rate (float): a factor on the optimizer's learning rate.
        regularizer (L2Decay, optional): its own weight decay.
        initializer (Initializer, optional): how the startup program fills it.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> _ = static.nn.fc(x, size=2)
        >>> [(p.name, p.shape, p.trainable) for p in static.default_main_program().all_parameters()]
        [('fc_0.w_0', (3, 2), True), ('fc_0.b_0', (2,), True)]
    """

    def __init__(self, block: Block, name: str, shape: Sequence[int], dtype: DTypeLike,
                 trainable: bool = True, learning_rate: float = 1.0,
                 regularizer: object = None, initializer: object = None) -> None:
        super().__init__(block, name, shape, dtype, persistable=True,
                         stop_gradient=not trainable)
        self.trainable = trainable
        self.optimize_attr = {"learning_rate": learning_rate}
        self.regularizer = regularizer
        self.initializer = initializer


class Operator:
    """One op of a Block: `type`, {slot: [Variable]} `inputs` / `outputs`, `attrs` (with the
    OpDef's defaults filled in) and `role` (forward, backward, optimize, loss_grad).
    Made by `Block.append_op` (which the layer functions call), not directly.

    Args:
        block (Block): the block it belongs to.
        type (str): the registered op type.
        inputs (dict): {slot: [Variable]}.
        outputs (dict): {slot: [Variable]}.
        attrs (dict): every attribute of the op type.
        role (str): 'forward', 'backward', 'optimize' or 'loss_grad'.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> y = paddle.scale(x, scale=2.0)
        >>> op = static.default_main_program().global_block().ops[-1]
        >>> op.type, op.input('X'), op.output('Out'), op.attr('scale')
        ('scale', ['x'], ['scale_0.tmp_0'], 2.0)
    """

    def __init__(self, block: Block, type: str, inputs: dict[str, list[Variable]],
                 outputs: dict[str, list[Variable]], attrs: dict[str, Any], role: str) -> None:
        self.block, self.type, self.role = block, type, role
        self.inputs, self.outputs, self.attrs = inputs, outputs, attrs

    # Paddle-style accessors (names)
    def input(self, slot: str) -> list[str]:
        """The names of the Variables in input slot `slot` (empty if unused).

        Args:
            slot (str): e.g. 'X'.

        Returns:
            list of str: the names.
        """
        return [v.name for v in self.inputs.get(slot, [])]

    def output(self, slot: str) -> list[str]:
        """The names of the Variables in output slot `slot` (empty if unused).

        Args:
            slot (str): e.g. 'Out'.

        Returns:
            list of str: the names.
        """
        return [v.name for v in self.outputs.get(slot, [])]

    @property
    def input_names(self) -> list[str]:
        """The input slots in use."""
        return list(self.inputs)

    @property
    def output_names(self) -> list[str]:
        """The output slots in use."""
        return list(self.outputs)

    @property
    def input_arg_names(self) -> list[str]:
        """The names of every input Variable."""
        return [v.name for vs in self.inputs.values() for v in vs]

    @property
    def output_arg_names(self) -> list[str]:
        """The names of every output Variable."""
        return [v.name for vs in self.outputs.values() for v in vs]

    def attr(self, name: str) -> Any:
        """The value of attribute `name`.

        Args:
            name (str): the attribute.

        Returns:
            its value.

        Raises:
            ValueError: the op has no such attribute (the message lists those it has).
        """
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"op {self.type!r} has no attribute {name!r}; it has "
                             f"{sorted(self.attrs)}") from None

    def all_attrs(self) -> dict:
        """Every attribute (defaults included), as in Paddle's program introspection.

        Returns:
            dict: {name: value}, a copy.

        Example:
            >>> x = static.data('x', [None, 3])
            >>> _ = paddle.scale(x, 2.0)
            >>> sorted(static.default_main_program().global_block().ops[-1].all_attrs())
            ['bias', 'bias_after_scale', 'scale']
        """
        return dict(self.attrs)

    @property
    def attr_names(self) -> list[str]:
        """The attribute names, sorted."""
        return sorted(self.attrs)

    def has_attr(self, name: str) -> bool:
        """Whether the op has attribute `name`.

        Args:
            name (str): the attribute.

        Returns:
            bool: True if it has one.
        """
        return name in self.attrs

    def _set_attr(self, name, value):
        self.attrs[name] = value
        self.block.program.bump()

    def input_vars(self) -> list[Variable]:
        """Every input Variable, slot by slot.

        Returns:
            list of Variable: the inputs.
        """
        return [v for vs in self.inputs.values() for v in vs]

    def output_vars(self) -> list[Variable]:
        """Every output Variable, slot by slot.

        Returns:
            list of Variable: the outputs.
        """
        return [v for vs in self.outputs.values() for v in vs]

    def __repr__(self):
        from .printer import op_to_string
        return op_to_string(self)


def as_var_list(v):
    """[v] for one Variable, v (Nones dropped) for a list or tuple, [] for None."""
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        return [x for x in v if x is not None]
    return [v]
