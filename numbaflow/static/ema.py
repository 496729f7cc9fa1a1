"""paddle.static.ExponentialMovingAverage and paddle.static.InputSpec."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from .. import tensor as M
from ..executor import global_scope
from ..graph.program import OPTIMIZE, Variable, default_main_program

if TYPE_CHECKING:
    from numpy.typing import DTypeLike


class ExponentialMovingAverage:
    """Shadow copies of the trainable parameters: after each training run
    `ema = decay * ema + (1 - decay) * param` (ops appended by `update()`, after the
    optimizer's); `apply()` swaps the bias-corrected averages `ema / (1 - decay^t)` into
    the parameters, e.g. to evaluate, and restores them afterwards (Paddle's rules).

    Args:
        decay (float): the decay rate in (0, 1).
        thres_steps (Variable, optional): a step counter; the decay used is then
            min(decay, (1 + t) / (10 + t)).
        name (str, optional): a prefix for the averages' names.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> loss = paddle.mean(static.nn.fc(x, size=1))
        >>> _ = paddle.optimizer.SGD(0.1).minimize(loss)
        >>> ema = static.ExponentialMovingAverage(0.99)
        >>> ema.update()
    """

    def __init__(self, decay: float = 0.999, thres_steps: Variable | None = None,
                 name: str | None = None) -> None:
        if not 0.0 < float(decay) < 1.0:
            raise ValueError(f"ExponentialMovingAverage: decay must be in (0, 1), got {decay}")
        if thres_steps is not None and not isinstance(thres_steps, Variable):
            raise TypeError("ExponentialMovingAverage: thres_steps must be a Variable (a step "
                            f"counter) or None, got {type(thres_steps).__name__}")
        self._decay, self._thres_steps = float(decay), thres_steps
        self._name = name or "ema"
        self._pairs: list[tuple[str, str]] = []      # (param name, average name)
        self._decay_pow: str | None = None

    def update(self) -> None:
        """Append the averaging ops for every trainable parameter of the default main
        program (call it after `optimizer.minimize`)."""
        from ..tensor.creation import create_global_var
        program = default_main_program()
        params = [p for p in program.all_parameters() if p.trainable]
        with program.role_guard(OPTIMIZE):
            decay = M.full([1], self._decay, "float32")
            if self._thres_steps is not None:
                t = M.cast(self._thres_steps, "float32")
                decay = M.minimum(decay, M.divide(M.scale(t, 1.0, 1.0),
                                                  M.scale(t, 1.0, 10.0)))
                decay = M.reshape(decay, [1])
            pow_var = create_global_var([1], 1.0, "float32", persistable=True,
                                        name=f"{self._name}.decay_pow")
            M.assign(M.multiply(pow_var, decay), output=pow_var)
            self._decay_pow = pow_var.name
            for p in params:
                avg = create_global_var(list(p.shape), 0.0, p.dtype, persistable=True,
                                        name=f"{p.name}.{self._name}")
                d = decay if p.dtype == decay.dtype else M.cast(decay, p.dtype)
                new = M.add(M.multiply(avg, d), M.multiply(p, M.scale(d, -1.0, 1.0)))
                M.assign(new, output=avg)
                self._pairs.append((p.name, avg.name))

    @contextlib.contextmanager
    def apply(self, executor: object = None, need_restore: bool = True) -> Iterator[None]:
        """Within the block, the parameters of the global scope hold the bias-corrected
        averages; with need_restore, their trained values come back afterwards.

        Args:
            executor (Executor): accepted for Paddle compatibility.
            need_restore (bool): put the trained values back when the block ends.

        Yields:
            None.
        """
        if self._decay_pow is None:
            raise RuntimeError("ExponentialMovingAverage.apply: call update() (after "
                               "minimize) and train first")
        scope = global_scope()
        correction = 1.0 - float(np.asarray(scope.get(self._decay_pow)).reshape(-1)[0])
        if correction <= 0.0:
            raise RuntimeError("ExponentialMovingAverage.apply: no training run has updated "
                               "the averages yet")
        self._backup = {p: np.array(scope.get(p)) for p, _ in self._pairs}
        for p, avg in self._pairs:
            value = np.asarray(scope.get(avg)) / correction
            scope.set(p, value.astype(self._backup[p].dtype))
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor: object = None) -> None:
        """Put back the parameters' trained values saved by `apply`.

        Args:
            executor (Executor): accepted for Paddle compatibility.
        """
        scope = global_scope()
        for p, value in getattr(self, "_backup", {}).items():
            scope.set(p, value)


class InputSpec:
    """The shape, dtype and name of a model input (None or -1: any size).

    Args:
        shape (list of int or None): the shape.
        dtype (str): the element type.
        name (str, optional): the feed name.
        stop_gradient (bool): whether gradients stop at the input.

    Example:
        >>> spec = static.InputSpec([None, 784], 'float32', 'x')
        >>> spec.shape, spec.batch(16).shape
        ((-1, 784), (16, -1, 784))
    """

    def __init__(self, shape: Sequence[int | None], dtype: DTypeLike = "float32",
                 name: str | None = None, stop_gradient: bool = False) -> None:
        self.shape = tuple(-1 if d is None else int(d) for d in shape)
        self.dtype = dtypes.convert_dtype(dtype)
        self.name, self.stop_gradient = name, bool(stop_gradient)

    @classmethod
    def from_tensor(cls, tensor: Variable, name: str | None = None) -> InputSpec:
        """The spec of a Variable.

        Args:
            tensor (Variable): the variable.
            name (str, optional): default the variable's name.

        Returns:
            InputSpec: its shape and dtype.
        """
        return cls(tensor.shape, tensor.dtype, name or tensor.name)

    @classmethod
    def from_numpy(cls, ndarray: np.ndarray, name: str | None = None) -> InputSpec:
        """The spec of an array.

        Args:
            ndarray (numpy.ndarray): the array.
            name (str, optional): the name.

        Returns:
            InputSpec: its shape and dtype.
        """
        return cls(ndarray.shape, ndarray.dtype, name)

    def batch(self, batch_size: int) -> InputSpec:
        """A copy with a leading batch dim.

        Args:
            batch_size (int): the batch size (-1 / None for any).

        Returns:
            InputSpec: the batched spec.
        """
        return InputSpec((batch_size,) + self.shape, self.dtype, self.name,
                         self.stop_gradient)

    def unbatch(self) -> InputSpec:
        """A copy without the leading dim.

        Returns:
            InputSpec: the spec of one sample.
        """
        if not self.shape:
            raise ValueError("InputSpec.unbatch: a 0-D spec has no batch dim")
        return InputSpec(self.shape[1:], self.dtype, self.name, self.stop_gradient)

    def __repr__(self) -> str:
        return f"InputSpec(shape={self.shape}, dtype={self.dtype}, name={self.name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InputSpec) and (self.shape, self.dtype, self.name) == \
            (other.shape, other.dtype, other.name)

    __hash__ = None
