"""DOT dumps of a program's graph (BuildStrategy.debug_graphviz_path).

Ops are boxes labelled with their type, variables ellipses labelled ``name\\nshape``;
edges run variable -> op (input) and op -> variable (output).
"""
import os

from ..utils.atomic_file import atomic_write


def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def program_to_dot(program):
    lines = ["digraph G {"]
    block = program.global_block()
    var_ids = {}
    for i, v in enumerate(block.vars.values()):
        var_ids[v.name] = f"var_{i}"
        shape = ",".join(str(d) for d in v.shape)
        style = ", style=filled, fillcolor=lightgrey" if v.persistable else ""
        lines.append(f"  var_{i} [label={_quote(v.name + chr(10) + shape)}, "
                     f"shape=ellipse{style}];")
    for j, op in enumerate(block.ops):
        lines.append(f"  op_{j} [label={_quote(op.type)}, shape=box];")
        for v in op.input_vars():
            lines.append(f"  {var_ids[v.name]} -> op_{j};")
        for v in op.output_vars():
            lines.append(f"  op_{j} -> {var_ids[v.name]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_dot(program, path):
    """Write `program` as DOT to `path` (directories are created), atomically: a failed
    write keeps the previous file."""
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    atomic_write(path, program_to_dot(program))
