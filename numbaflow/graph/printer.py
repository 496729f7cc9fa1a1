"""A readable text listing of a Program, in the spirit of Paddle's `str(program)`."""


def _fmt_attr(v):
    if isinstance(v, float):
        return f"{v:g}"
    return repr(v) if isinstance(v, str) else str(v)


def op_to_string(op):
    outs = ", ".join(f"{k}={op.output(k)}" for k in op.outputs)
    ins = ", ".join(f"{k}={op.input(k)}" for k in op.inputs)
    attrs = ", ".join(f"{k} = {_fmt_attr(v)}" for k, v in sorted(op.attrs.items()))
    return f"{{{outs}}} = {op.type}(inputs={{{ins}}}{', ' + attrs if attrs else ''})"


def program_to_string(program):
    lines = []
    for block in program.blocks:
        lines.append(f"{{ // block {block.idx}")
        for v in block.vars.values():
            lines.append(f"    {v.to_string()}")
        lines.append("")
        for op in block.ops:
            lines.append(f"    {op_to_string(op)}")
        lines.append("}")
    return "\n".join(lines)
