"""Tests read public state (issue 31): a test that needs something of numbaflow's asks for it
by a public name, as a user or tool would, so a refactoring inside a module does not break
tests that only watched. The few underscored names tests still reach are listed with why."""
import ast
import pathlib

from test_layering import PACKAGE, defined_names

TESTS = pathlib.Path(__file__).resolve().parents[1]

PADDLE = "Paddle's own name: Paddle's code and tests call it so"
WRAPPED = "a seam a fault-injection test wraps with monkeypatch (read to call the original)"
UNIT = "the unit test of that private helper (its behaviour is the test's subject)"
# (test file, expression): why it is allowed
ALLOWED = {
    ("executor/test_segments.py", "scale_op._set_attr"): PADDLE,
    ("graph/test_block_mutators.py", "block._insert_op"): PADDLE,
    ("graph/test_control_flow.py", "main._create_block"): PADDLE,
    ("graph/test_control_flow.py", "main._rollback"): PADDLE,
    ("nn/test_nn_layer.py", "model.bn._mean"): PADDLE,
    ("nn/test_nn_layers.py", "paddle.optimizer.Optimizer._persistable"): PADDLE,
    ("distributed/test_data_parallel.py", "dp_feed._check_each"): WRAPPED,
    ("executor/test_executor.py", "plan_mod.Plan._run"): WRAPPED,
    ("executor/test_first_run_interrupts.py", "plan_mod.Plan._bind_op"): WRAPPED,
    ("gpu/test_gpu_gate_registers.py", "gpu_check._compile_one"): UNIT,
    ("gpu/test_gpu_check.py", "from numbaflow.gpu_check import _block_registers"): UNIT,
    ("faults/test_fault_disks.py", "cache._evict"): UNIT,
    ("kernels/test_kernel_cache.py", "cache._evict"): UNIT,
    ("kernels/test_conv_nchwc.py", "conv._use_nchwc_dx"): UNIT,
    ("io/test_atomic_backup.py", "atomic._copy_bytes"): UNIT,
    ("executor/test_warmup.py", "from numbaflow import _warmup"): UNIT,
    ("io/test_dataloader.py", "from numbaflow.io import _workers"): UNIT,
    ("training/test_health.py", "from numbaflow import _health"): UNIT,
    ("training/test_health.py", "log._Handler"): UNIT,
    ("multihost.py", "hosts._setup"): "the multi-host harness sets up its test hosts",
}


def private_reads_of(names, path):
    """(expression) of every `x._name` read or `from numbaflow... import _name` in `path`,
    where `_name` is one of numbaflow's `names` and x is not self/cls."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in names:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield ast.unparse(node)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("numbaflow"):
            yield from (f"from {node.module} import {a.name}" for a in node.names
                        if a.name in names)


def numbaflow_private_names():
    names = set()
    for p in PACKAGE.rglob("*.py"):
        names |= defined_names(ast.parse(p.read_text(encoding="utf-8"))) | {p.stem}
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_tests_read_only_public_state():
    names, bad, used = numbaflow_private_names(), [], set()
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        for expr in private_reads_of(names, path):
            if (rel, expr) in ALLOWED:
                used.add((rel, expr))
            elif rel != "api/test_tests_read_public_state.py":
                bad.append(f"tests/{rel}: {expr}")
    assert not bad, ("tests reading numbaflow's underscored names (give the state a public "
                     "name or a verb, or list why here):\n" + "\n".join(sorted(set(bad))))
    assert not set(ALLOWED) - used, f"listed but no longer read: {sorted(set(ALLOWED) - used)}"


def test_the_check_sees_a_private_read(tmp_path):
    f = tmp_path / "t.py"
    f.write_text("from numbaflow.m import _x, y\ndef t(plan, self):\n"
                 "    self._own = plan._cache\n    return plan.public\n")
    assert list(private_reads_of({"_x", "_cache", "_own"}, f)) == [
        "from numbaflow.m import _x", "plan._cache"]
