"""A readable text listing of a Program, in the spirit of Paddle's `str(program)`."""


def _fmt_attr(v):
    if isinstance(v, float):
        return f"{v:g}"
    if hasattr(v, "parent_idx") and hasattr(v, "ops"):     # a sub_block
        return f"block[{v.idx}]"
    return repr(v) if isinstance(v, str) else str(v)


def op_to_string(op):
    outs = ", ".join(f"{k}={op.output(k)}" for k in op.outputs)
    ins = ", ".join(f"{k}={op.input(k)}" for k in op.inputs)
    attrs = ", ".join(f"{k} = {_fmt_attr(v)}" for k, v in sorted(op.attrs.items()))
    return f"{{{outs}}} = {op.type}(inputs={{{ins}}}{', ' + attrs if attrs else ''})"


def program_to_string(program):
    lines = []
    for block in program.blocks:
        parent = f" (parent {block.parent_idx})" if block.parent_idx >= 0 else ""
        lines.append(f"{{ // block {block.idx}{parent}")
        for v in block.vars.values():
            lines.append(f"    {v.to_string()}")
        lines.append("")
        for op in block.ops:
            lines.append(f"    {op_to_string(op)}")
        lines.append("}")
    return "\n".join(lines)
