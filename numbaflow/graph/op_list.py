"""A Block's op list with its producer/consumer maps (the bookkeeping behind Block's
mutators in program.py).

`Block.ops` is an `OpList`: a list you can read, index, slice and copy, but not edit in
place; edits go through Block methods, which keep these maps and the program version
right. The maps make "who reads / writes this variable" O(uses) instead of a scan of
the program; an op's position is a binary search over ranks (no rescan after an edit).
"""
import bisect

_READ_ONLY = ("Block.ops is read-only: edit a block with its mutators (append_op, "
              "insert_before, insert_after, remove_ops, replace_ops, move_before, move_after, "
              "replace_uses, replace_writes, set_input, set_output, set_op_type, set_attr), "
              "which keep the producer/consumer maps and the program version up to date")


class OpList(list):
    """A list of Operators that refuses in-place edits (see Block's mutators)."""

    def _read_only(self, *args, **kw):
        raise TypeError(_READ_ONLY)

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce_ex__(self, protocol):
        return (list, (list(self),))      # a copy is a plain, editable list


def _add(table, var, op):
    table.setdefault(var, {})[id(op)] = op


def _drop(table, var, op):
    users = table.get(var)
    if users is not None:
        users.pop(id(op), None)
        if not users:
            del table[var]


class UseMaps:
    """The ops of one block, in order, with {Variable: {id(op): op}} of readers and writers.

    Each op has an integer rank, increasing along the list (`_ranks` runs parallel to
    `ops`), so an op's position is a binary search and ordering ops is a sort by rank;
    an insert takes ranks from the gap between its neighbours (all ranks are renumbered,
    O(n), only when a gap is used up).
    """

    GAP = 1 << 20

    def __init__(self):
        self.ops = OpList()
        self.readers = {}
        self.writers = {}
        self._rank = {}         # id(op) -> rank
        self._ranks = []        # the ranks of `ops`, in order

    # ------------------------------------------------------------ queries
    def index(self, op):
        r = self._rank.get(id(op))
        if r is not None:
            i = bisect.bisect_left(self._ranks, r)
            if i < len(self.ops) and self.ops[i] is op:
                return i
        raise ValueError(f"op {op.type} is not in this block")

    def contains(self, op):
        return id(op) in self._rank

    def ranks_follow(self, ops):
        """True when the ranks are those of `ops` (the block's list), increasing, and
        no other op has one (the IR verifier's check of this bookkeeping)."""
        ranks = [self._rank.get(id(op)) for op in ops]
        return ranks == self._ranks and len(self._rank) == len(ranks) and \
            all(a < b for a, b in zip(ranks, ranks[1:]))

    def in_order(self, ops):
        rank = self._rank
        return sorted(ops, key=lambda op: rank[id(op)])

    # ------------------------------------------------------------ edits
    def link(self, op):
        for v in op.input_vars():
            _add(self.readers, v, op)
        for v in op.output_vars():
            _add(self.writers, v, op)

    def unlink(self, op):
        for v in op.input_vars():
            _drop(self.readers, v, op)
        for v in op.output_vars():
            _drop(self.writers, v, op)

    def insert(self, i, ops):
        """Put `ops` (not in the list) at index `i`; the caller links them."""
        n, k = len(self._ranks), len(ops)
        lo = self._ranks[i - 1] if i > 0 else 0
        hi = self._ranks[i] if i < n else lo + (k + 1) * self.GAP
        list.__setitem__(self.ops, slice(i, i), ops)
        if hi - lo > k:
            step = (hi - lo) // (k + 1)
            new = [lo + step * (j + 1) for j in range(k)]
            self._ranks[i:i] = new
            self._rank.update(zip(map(id, ops), new))
        else:
            self._ranks = list(range(self.GAP, (n + k + 1) * self.GAP, self.GAP))
            self._rank = dict(zip(map(id, self.ops), self._ranks))

    def delete(self, ops):
        """Take `ops` (all in the list) out of it; the caller unlinks them."""
        for i in sorted((self.index(op) for op in ops), reverse=True):
            list.__delitem__(self.ops, i)
            del self._ranks[i]
        for op in ops:
            del self._rank[id(op)]
