"""A Block's op list with its producer/consumer maps (the bookkeeping behind Block's
mutators in program.py).

`Block.ops` is an `OpList`: a list you can read, index, slice and copy, but not edit in
place; edits go through Block methods, which keep these maps and the program version
right. The maps make "who reads / writes this variable" O(uses) instead of a scan of
the program, and position lookups are amortised O(1): an op's last known index is a
hint, checked (`ops[i] is op`) before use and refreshed from the first edited index on.
"""

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
    """The ops of one block, in order, with {Variable: {id(op): op}} of readers and writers."""

    def __init__(self):
        self.ops = OpList()
        self.readers = {}
        self.writers = {}
        self._pos = {}          # id(op) -> index hint
        self._clean = 0         # hints below this index are exact

    # ------------------------------------------------------------ queries
    def index(self, op):
        i = self._pos.get(id(op))
        if i is None or i >= len(self.ops) or self.ops[i] is not op:
            n = len(self.ops)
            self._pos.update(zip(map(id, self.ops[self._clean:]), range(self._clean, n)))
            self._clean = n
            i = self._pos.get(id(op))
            if i is None or self.ops[i] is not op:
                raise ValueError(f"op {op.type} is not in this block")
        return i

    def contains(self, op):
        i = self._pos.get(id(op))
        if i is not None and i < len(self.ops) and self.ops[i] is op:
            return True
        try:
            self.index(op)
            return True
        except ValueError:
            return False

    def in_order(self, ops):
        return sorted(ops, key=self.index)

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
        if i == len(self.ops):
            for k, op in enumerate(ops):
                self._pos[id(op)] = i + k
            if self._clean == i:
                self._clean += len(ops)
        else:
            self._clean = min(self._clean, i)
        list.__setitem__(self.ops, slice(i, i), ops)

    def delete(self, ops):
        """Take `ops` (all in the list) out of it; the caller unlinks them."""
        at = sorted((self.index(op) for op in ops), reverse=True)
        for i in at:
            list.__delitem__(self.ops, i)
        for op in ops:
            self._pos.pop(id(op), None)
        if at:
            self._clean = min(self._clean, at[-1])
