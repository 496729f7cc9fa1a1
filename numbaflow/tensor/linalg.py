"""paddle.tensor.linalg: matrix products."""
from __future__ import annotations

from ..graph.program import Variable
from ..layer_helper import LayerHelper
from ._helpers import check_variable as _var
from .manipulation import reshape, transpose
from .math import sum as reduce_sum


def matmul(x: Variable, y: Variable, transpose_x: bool = False, transpose_y: bool = False,
           name: str | None = None) -> Variable:
    """numpy-style matmul (batch dims broadcast) with optional transposes (op `matmul_v2`).

    Args:
        x (Variable): the left operand.
        y (Variable): the right operand, of x's dtype.
        transpose_x (bool): use x's last two dims swapped.
        transpose_y (bool): use y's last two dims swapped.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: the product.

    Example:
        >>> x = static.data('x', [None, 3])
        >>> w = static.data('w', [3, 4])
        >>> paddle.matmul(x, w).shape
        (-1, 4)
    """
    _var(x, "matmul", "x"), _var(y, "matmul", "y")
    if x.dtype != y.dtype:
        raise TypeError(f"matmul: x ({x.dtype}) and y ({y.dtype}) must have the same dtype")
    return LayerHelper("matmul_v2", name).simple(
        "matmul_v2", {"X": x, "Y": y}, {"trans_x": bool(transpose_x), "trans_y": bool(transpose_y)})



def bmm(x: Variable, y: Variable, name: str | None = None) -> Variable:
    """Batched matrix product of two 3-D tensors, [B, M, K] @ [B, K, N] (op `matmul_v2`).

    Args:
        x (Variable): [B, M, K].
        y (Variable): [B, K, N], x's dtype.
        name (str, optional): a prefix for the output's name.

    Returns:
        Variable: [B, M, N].

    Example:
        >>> x = static.data('x', [None, 2, 3])
        >>> y = static.data('y', [None, 3, 4])
        >>> paddle.bmm(x, y).shape
        (-1, 2, 4)
    """
    _var(x, "bmm"), _var(y, "bmm", "y")
    if x.ndim != 3 or y.ndim != 3:
        raise ValueError(f"bmm: x and y must be 3-D, got {x.name} {x.shape} and {y.name} "
                         f"{y.shape}; use paddle.matmul for other ranks")
    if -1 not in (x.shape[2], y.shape[1]) and x.shape[2] != y.shape[1]:
        raise ValueError(f"bmm: x {x.shape} and y {y.shape} disagree on the inner dim")
    return matmul(x, y, name=name)


def _merged(dims):
    """The product of `dims`, -1 when one is unknown."""
    out = 1
    for d in dims:
        if d == -1:
            return -1
        out *= d
    return out


def einsum(equation: str, *operands: Variable) -> Variable:
    """Einstein summation over one or two operands, lowered to `transpose2`, `reshape2`,
    `reduce_sum` and one batched `matmul_v2` (so it is differentiable and as fast as a
    matmul): 'bij,bjk->bik', 'ij->ji', 'bhqd,bhkd->bhqk', 'i,i->' ...

    Args:
        equation (str): the subscripts; without '->' the output is the letters that
            appear once, sorted. No '...' and no repeated letter within one operand.
        operands (Variable): one or two tensors of one dtype.

    Returns:
        Variable: the result.

    Raises:
        NotImplementedError: three or more operands, '...', or a diagonal ('ii').

    Example:
        >>> q = static.data('q', [None, 4, 8])
        >>> k = static.data('k', [None, 6, 8])
        >>> paddle.einsum('bqd,bkd->bqk', q, k).shape
        (-1, 4, 6)
    """
    eq = equation.replace(" ", "")
    if "..." in eq or not 1 <= len(operands) <= 2:
        raise NotImplementedError(
            f"einsum: {equation!r} with {len(operands)} operands: one or two operands "
            f"without '...' are supported; split it into pairwise einsums")
    lhs, _, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {equation!r} names {len(ins)} operands, got "
                         f"{len(operands)}")
    for sub, x in zip(ins, operands):
        _var(x, "einsum", "operands")
        if len(sub) != x.ndim or len(set(sub)) != len(sub):
            raise NotImplementedError(
                f"einsum: subscripts {sub!r} must name each of the {x.ndim} dims of "
                f"{x.name} {x.shape} once (diagonals are not supported)")
    if "->" not in eq:
        out = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    stray = [c for c in out if c not in lhs]
    if stray or len(set(out)) != len(out):
        raise ValueError(f"einsum: {equation!r}: the output letter "
                         f"{(stray or [c for c in out if out.count(c) > 1])[0]!r} "
                         f"{'is in no operand' if stray else 'appears twice'}; each output "
                         f"letter must name a dim of an operand, once")
    size = {}
    for sub, x in zip(ins, operands):
        for c, d in zip(sub, x.shape):
            if d == -1:
                continue
            if size.setdefault(c, d) != d:
                raise ValueError(f"einsum: {equation!r}: letter {c!r} is {size[c]} in one "
                                 f"operand and {d} in {x.name} {x.shape}; a letter must have "
                                 f"one size in every operand")

    def summed(x, sub, keep):
        """x with the letters not in `keep` summed away; (x, its subscripts)."""
        gone = [i for i, c in enumerate(sub) if c not in keep]
        if gone:
            x = reduce_sum(x, axis=gone)
        return x, "".join(c for c in sub if c in keep)

    if len(operands) == 1:
        x, sub = summed(operands[0], ins[0], out)
        return transpose(x, [sub.index(c) for c in out]) if sub != out and sub else x
    a, sa = summed(operands[0], ins[0], out + ins[1])
    b, sb = summed(operands[1], ins[1], out + ins[0])
    batch = [c for c in sa if c in sb and c in out]
    contract = [c for c in sa if c in sb and c not in out]
    a_keep = [c for c in sa if c not in sb]
    b_keep = [c for c in sb if c not in sa]

    def grouped(x, sub, groups):
        x = transpose(x, [sub.index(c) for g in groups for c in g])
        return reshape(x, [_merged([size.get(c, -1) for c in g]) for g in groups])

    prod = matmul(grouped(a, sa, [batch, a_keep, contract]),
                  grouped(b, sb, [batch, contract, b_keep]))
    letters = batch + a_keep + b_keep
    res = reshape(prod, [size.get(c, -1) for c in letters])
    return transpose(res, [letters.index(c) for c in out]) if "".join(letters) != out else res
