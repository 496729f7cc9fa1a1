"""Block's mutators: every edit keeps the producer/consumer maps (checked against a scan
of the ops) and bumps the program version; `Block.ops` cannot be edited behind them;
`verify` catches maps that disagree with the ops; every pass leaves a verified IR."""
import copy
import random

import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.compiler.pipeline import PIPELINE
from numbaflow.graph.passes import all_pass_names, apply_passes, get_pass
from numbaflow.graph.passes.auto_fusion import BlockDependencies, dependencies
from numbaflow.distributed.rewrite import assign_owners, owner_program
from numbaflow.graph.program import Operator
from numbaflow.graph.verify import IRError

pytestmark = pytest.mark.usefixtures("fresh_graph_state")


# ---------------------------------------------------------------- references
def scanned_maps(block):
    """({var: [readers]}, {var: [writers]}) in program order, by scanning every op."""
    readers, writers = {}, {}
    for op in block.ops:
        for v in dict.fromkeys(op.input_vars()):
            readers.setdefault(v, []).append(op)
        for v in dict.fromkeys(op.output_vars()):
            writers.setdefault(v, []).append(op)
    return readers, writers


def assert_maps_match(block):
    readers, writers = scanned_maps(block)
    for v in set(block.vars.values()) | set(readers) | set(writers):
        assert block.consumers(v) == readers.get(v, []), v.name
        assert block.producers(v) == writers.get(v, []), v.name
        assert block.producer(v) is (writers[v][-1] if v in writers else None), v.name
        assert block.is_used(v) == (v in readers or v in writers), v.name
    for i, op in enumerate(block.ops):
        assert block.index(op) == i


def chain(n=4):
    """x -> scale -> relu -> tanh -> ... (n unary ops), then add(last, x)."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 3])
        h = x
        for i in range(n):
            h = [lambda v: paddle.scale(v, 2.0), paddle.nn.functional.relu, paddle.tanh][i % 3](h)
        out = h + x
    return main, x, out


# ---------------------------------------------------------------- Block.ops is read-only
def test_ops_cannot_be_edited_in_place():
    main, x, out = chain()
    block = main.global_block()
    op = block.ops[0]
    edits = [lambda: block.ops.append(op), lambda: block.ops.insert(0, op),
             lambda: block.ops.extend([op]), lambda: block.ops.pop(),
             lambda: block.ops.remove(op), lambda: block.ops.clear(),
             lambda: block.ops.reverse(), lambda: block.ops.sort(key=id)]

    def setitem():
        block.ops[0] = op

    def setslice():
        block.ops[:] = []

    def delitem():
        del block.ops[0]

    def iadd():
        ops = block.ops
        ops += [op]
    for edit in edits + [setitem, setslice, delitem, iadd]:
        with pytest.raises(TypeError, match="read-only"):
            edit()
    with pytest.raises(AttributeError):
        block.ops = []
    assert len(block.ops) == 5 and block.ops[0] is op
    # reading and copying work as for a list, and copies are plain lists
    mine = copy.copy(block.ops)
    mine.append(op)
    assert type(mine) is list and len(mine) == 6 and len(block.ops) == 5
    assert block.ops + [op] == list(block.ops) + [op]
    assert block.ops[1:3] == [block.ops[1], block.ops[2]]


# ---------------------------------------------------------------- each mutator
def test_each_mutator_keeps_maps_order_and_version():
    main, x, out = chain(3)
    block = main.global_block()
    scale, relu, tanh, add = block.ops
    mirror = [scale, relu, tanh, add]       # the expected op order, edited by hand
    versions = [main.version]

    def check():
        assert list(block.ops) == mirror
        assert main.version > versions[-1]
        versions.append(main.version)
        assert_maps_match(block)

    y = block.create_var("y", (-1, 3))
    versions.append(main.version)
    exp = block.insert_before(tanh, block.make_op("exp", {"X": scale.outputs["Out"]},
                                                   {"Out": y}, {}))
    mirror.insert(2, exp)
    check()
    z = block.create_var("z", (-1, 3))
    versions.append(main.version)
    sig = block.insert_after(add, block.make_op("sigmoid", {"X": y}, {"Out": z}, {}))
    mirror.append(sig)
    check()
    block.move_before(relu, [tanh, exp])        # in the order given
    mirror[:] = [scale, tanh, exp, relu, add, sig]
    check()
    block.move_after(sig, [scale])
    mirror[:] = [tanh, exp, relu, add, sig, scale]
    check()
    block.move_before(tanh, [scale])
    mirror[:] = [scale, tanh, exp, relu, add, sig]
    check()
    s_out = scale.outputs["Out"][0]
    block.replace_uses(s_out, x, [exp])          # only exp: relu still reads s_out
    assert exp.inputs["X"] == [x] and relu.inputs["X"] == [s_out]
    check()
    block.replace_uses(y, x)                     # every reader of y (sigmoid)
    assert sig.inputs["X"] == [x] and block.consumers(y) == []
    check()
    w = block.create_var("w", (-1, 3))
    versions.append(main.version)
    block.replace_writes(y, w)
    assert exp.outputs["Out"] == [w] and block.producers(y) == []
    check()
    block.set_input(add, "Y", z)
    assert add.inputs["Y"] == [z]
    check()
    block.set_output(sig, "Out", None)           # removes the slot
    assert "Out" not in sig.outputs and block.producers(z) == []
    check()
    block.set_output(sig, "Out", [z])
    check()
    block.set_op_type(exp, "tanh")
    assert exp.type == "tanh"
    check()
    block.set_attr(scale, "scale", 5.0)
    assert scale.attrs["scale"] == 5.0
    check()
    fused = block.make_op("assign", {"X": x}, {"Out": w}, {})
    block.replace_ops([exp, relu], fused, where=relu)
    mirror[:] = [scale, tanh, fused, add, sig]
    check()
    fused2 = block.make_op("assign", {"X": x}, {"Out": w}, {})
    block.replace_ops([fused], [fused2])
    mirror[:] = [scale, tanh, fused2, add, sig]
    check()
    block.remove_ops([sig, scale])
    mirror[:] = [tanh, fused2, add]
    check()
    block.remove_ops(block.ops[:1])
    mirror[:] = [fused2, add]
    check()
    new = block._insert_op(1, "relu", {"X": x}, {"Out": y})
    mirror.insert(1, new)
    check()
    block.remove_ops([])                         # nothing removed, still a change
    check()


def test_many_inserts_at_one_place_keep_the_order():
    """Inserting again and again before one op uses up the rank gap there (the block
    renumbers); positions and order must stay right throughout."""
    main, x, out = chain(2)
    block = main.global_block()
    mirror = list(block.ops)
    anchor = mirror[1]
    for i in range(70):
        v = block.create_var(f"t{i}", (-1, 3))
        op = block.make_op("relu", {"X": x}, {"Out": v}, {})
        if i % 2:
            block.insert_before(anchor, op)
            mirror.insert(mirror.index(anchor), op)
        else:
            block.insert_after(mirror[0], op)
            mirror.insert(1, op)
        assert list(block.ops) == mirror
        assert [block.index(o) for o in mirror] == list(range(len(mirror)))
    assert_maps_match(block)
    verify(main)


def test_clone_and_append_build_the_maps():
    main, x, out = chain(5)
    assert_maps_match(main.global_block())
    for c in (main.clone(), main.clone(for_test=True)):
        assert_maps_match(c.global_block())
        verify(c)


def test_random_edits_keep_maps_equal_to_a_scan():
    """Random mutator sequences against an independent mirror of the op order and a
    rescan of every op's slots."""
    for seed in range(6):
        rng = random.Random(seed)
        main, x, out = chain(6)
        block = main.global_block()
        mirror = list(block.ops)
        pool = list(block.vars.values())
        for step in range(40):
            kind = rng.choice(["insert", "remove", "move", "uses", "writes", "slot",
                               "replace"])
            if len(mirror) < 2:
                kind = "insert"
            version = main.version
            if kind == "insert":
                op = block.make_op("elementwise_add", {"X": rng.choice(pool),
                                                        "Y": rng.choice(pool)},
                                    {"Out": rng.choice(pool)}, {})
                anchor = rng.choice(mirror + [None])
                block.insert_before(anchor, op)
                mirror.insert(len(mirror) if anchor is None else mirror.index(anchor), op)
            elif kind == "remove":
                gone = rng.sample(mirror, min(len(mirror), rng.randint(1, 3)))
                block.remove_ops(gone)
                mirror = [o for o in mirror if o not in gone]
            elif kind == "move":
                anchor = rng.choice(mirror)
                moved = rng.sample([o for o in mirror if o is not anchor], 1)
                after = rng.random() < 0.5
                (block.move_after if after else block.move_before)(anchor, moved)
                mirror = [o for o in mirror if o not in moved]
                at = mirror.index(anchor) + after
                mirror[at:at] = moved
            elif kind in ("uses", "writes"):
                old, new = rng.choice(pool), rng.choice(pool)
                which = rng.sample(mirror, min(len(mirror), 2)) if rng.random() < 0.5 else None
                getattr(block, "replace_" + kind)(old, new, which)
                ops = mirror if which is None else which
                side = "inputs" if kind == "uses" else "outputs"
                for op in ops:
                    assert all(v is not old for v in getattr(op, side).get("X", [])
                               + getattr(op, side).get("Out", [])) or old is new
            elif kind == "slot":
                op = rng.choice(mirror)
                slot = rng.choice(sorted(op.inputs) or ["X"])
                block.set_input(op, slot, rng.choice(pool))
            elif kind == "replace":
                old = rng.sample(mirror, 2)
                new = block.make_op("relu", {"X": rng.choice(pool)}, {"Out": rng.choice(pool)},
                                     {})
                where = rng.choice(old)
                block.replace_ops(old, new, where=where)
                mirror[mirror.index(where)] = new
                mirror = [o for o in mirror if o not in old]
            assert main.version > version, kind
            assert list(block.ops) == mirror, (seed, step, kind)
            assert_maps_match(block)


# ---------------------------------------------------------------- the executor sees edits
def test_executor_reruns_an_edited_program():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3])
        y = paddle.scale(x, 2.0)
        r = paddle.nn.functional.relu(x)
        out = paddle.tanh(y)
    block = main.global_block()
    exe = static.Executor(paddle.CPUPlace())
    xv = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    run = lambda: exe.run(main, feed={"x": xv}, fetch_list=[out])[0]  # noqa: E731
    np.testing.assert_allclose(run(), np.tanh(2 * xv), rtol=1e-6)
    scale, relu, tanh = block.ops
    block.set_attr(scale, "scale", 3.0)
    np.testing.assert_allclose(run(), np.tanh(3 * xv), rtol=1e-6)
    block.replace_uses(y, r)
    np.testing.assert_allclose(run(), np.tanh(np.maximum(xv, 0)), rtol=1e-6)
    block.set_op_type(tanh, "sigmoid")
    np.testing.assert_allclose(run(), 1 / (1 + np.exp(-np.maximum(xv, 0))), rtol=1e-6)
    verify(main)


# ---------------------------------------------------------------- errors
def test_mutators_refuse_bad_edits_with_clear_errors():
    main, x, out = chain(3)
    other, ox, _ = chain(2)
    block = main.global_block()
    scale, relu, tanh, add = block.ops
    foreign = other.global_block().ops[0]
    with pytest.raises(ValueError, match="another block"):
        block.insert_before(None, foreign)
    with pytest.raises(ValueError, match="already in block"):
        block.insert_before(None, relu)
    made = block.make_op("relu", {"X": x}, {"Out": block.create_var("q", (-1, 3))}, {})
    with pytest.raises(ValueError, match="twice"):
        block.insert_before(None, [made, made])
    with pytest.raises(ValueError, match="not in this block"):
        block.remove_ops([made])
    with pytest.raises(ValueError, match="not in this block"):
        block.insert_before(made, [])
    with pytest.raises(ValueError, match="must be one of"):
        block.replace_ops([relu], made, where=tanh)
    with pytest.raises(ValueError, match="next to itself"):
        block.move_before(relu, [relu])
    with pytest.raises(ValueError, match="unknown input slot"):
        block.set_input(relu, "Y", x)
    with pytest.raises(ValueError, match="not a Variable of block"):
        block.set_input(relu, "X", ox)
    with pytest.raises(ValueError, match="unknown attribute"):
        block.set_attr(relu, "scale", 1.0)
    with pytest.raises(ValueError, match="must be a Variable of"):
        block.replace_uses(x, ox)
    with pytest.raises(ValueError):
        block.set_op_type(relu, "no_such_op")
    with pytest.raises(TypeError, match="Operator"):
        block.insert_before(None, ["relu"])
    with pytest.raises(IndexError):
        block._insert_op(99, "relu", {"X": x}, {"Out": block.var("q")})
    # nothing above changed the block
    assert list(block.ops) == [scale, relu, tanh, add]
    assert_maps_match(block)
    verify(main)


def test_verify_catches_ops_edited_behind_the_mutators():
    main, x, out = chain(3)
    block = main.global_block()
    scale, relu, tanh, add = block.ops
    relu.inputs["X"] = [x]                       # a direct edit: maps go stale
    with pytest.raises(IRError, match="consumer map"):
        verify(main)
    relu.inputs["X"] = scale.outputs["Out"]
    verify(main)
    spare = block.create_var("spare", (-1, 3))
    t = tanh.outputs["Out"][0]
    tanh.outputs["Out"] = [spare]               # and its reader, so only the maps are off
    add.inputs["X"] = [spare]
    with pytest.raises(IRError, match="(producer|consumer) map"):
        verify(main)
    tanh.outputs["Out"], add.inputs["X"] = [t], [t]
    verify(main)


# ---------------------------------------------------------------- cost: O(uses)
def test_mutators_cost_does_not_grow_with_the_program(monkeypatch):
    """Counting slot scans (Operator.input_vars / output_vars): an edit touching one
    op and one variable scans the same number of ops in a 20-op and a 400-op program."""
    calls = {"n": 0}
    real_in, real_out = Operator.input_vars, Operator.output_vars

    def counted(real):
        def f(self):
            calls["n"] += 1
            return real(self)
        return f

    def cost(n):
        main, x, out = chain(n)
        block = main.global_block()
        mid = block.ops[n // 2]
        v = mid.outputs["Out"][0]
        extra = block.create_var("extra", (-1, 3))
        monkeypatch.setattr(Operator, "input_vars", counted(real_in))
        monkeypatch.setattr(Operator, "output_vars", counted(real_out))
        calls["n"] = 0
        try:
            block.consumers(v)
            block.producer(v)
            block.replace_uses(v, extra)
            block.replace_uses(extra, v)
            new = block.make_op("relu", {"X": v}, {"Out": extra}, {})
            block.insert_after(mid, new)
            block.remove_ops([new])
            block.move_before(block.ops[1], [mid])
            return calls["n"]
        finally:
            monkeypatch.setattr(Operator, "input_vars", real_in)
            monkeypatch.setattr(Operator, "output_vars", real_out)
    small, large = cost(20), cost(400)
    assert small == large and small < 40, (small, large)


# ---------------------------------------------------------------- every pass: verified, maps right
def mlp_adam():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 8])
        h = x
        for _ in range(3):
            h = static.nn.fc(h, 8, activation="relu")
        h = paddle.tanh(h) + h
        loss = paddle.mean(paddle.nn.functional.sigmoid(h) + paddle.scale(h, 2.0))
        paddle.optimizer.Adam(0.01).minimize(loss)
    return main, loss


def conv_bn():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4, 6, 6])
        y = static.data("y", [None, 1], "int64")
        r = paddle.nn.functional.relu(x)
        c = static.nn.conv2d(r, 4, 3, padding=1, groups=4, act="relu")
        c = static.nn.batch_norm(c)
        loss = paddle.nn.functional.cross_entropy(static.nn.fc(c, 3), y)
        paddle.optimizer.Momentum(0.1, 0.9).minimize(loss)
    return main, loss


# the pass table's passes, in its order, but the data-parallel rewrite (tested on its own)
FUSIONS = [r.pass_class.name for r in PIPELINE if not r.data_parallel]


def test_every_registered_pass_has_a_row():
    assert set(all_pass_names()) == {r.pass_class.name for r in PIPELINE}


@pytest.mark.parametrize("build", [mlp_adam, conv_bn])
def test_each_pass_leaves_verified_ir_with_right_maps(build):
    main, loss = build()
    changed = set()
    for name in FUSIONS:
        for protected in ({loss.name}, set()):
            prog = main.clone()
            before = prog.version
            p, = apply_passes(prog, [name], protected)      # verifies when it changed
            verify(prog)
            assert_maps_match(prog.global_block())
            assert (prog.version > before) == p.changed
            changed.update([name] if p.changed else [])
    # the pipeline, verified after every pass
    prog = main.clone()
    for name in FUSIONS:
        apply_passes(prog, [name], {loss.name})
        verify(prog)
        assert_maps_match(prog.global_block())
    if build is mlp_adam:
        assert {"fuse_elewise_add_act", "fuse_all_optimizer_ops", "auto_fusion"} <= changed
    else:
        assert {"sync_batch_norm", "fuse_relu_depthwise_conv"} <= changed


@pytest.mark.parametrize("fuse", [True, False])
def test_data_parallel_rewrites_leave_verified_ir(fuse):
    main, loss = mlp_adam()
    prog = main.clone()
    mp = get_pass("multi_devices", loss_name=loss.name, fuse_all_reduce=fuse, bucket_bytes=300)
    assert mp.run(prog)
    verify(prog)
    assert_maps_match(prog.global_block())
    types = [op.type for op in prog.global_block().ops]
    assert types.count("c_allreduce_start") == len(mp.buckets) == types.count("c_allreduce_wait")
    owners = assign_owners(prog, 2)
    for d in range(2):
        own = owner_program(prog, owners, d)
        verify(own)
        assert_maps_match(own.global_block())


@pytest.mark.parametrize("build", [mlp_adam, conv_bn])
def test_auto_fusion_map_dependencies_equal_the_full_scan(build):
    """auto_fusion's rewrite loop reads dependencies from the maps; they must equal the
    scan of the whole op list, before and after other passes rewrote the program."""
    main, loss = build()
    for names in ([], ["fuse_elewise_add_act"], ["fuse_all_optimizer_ops"]):
        prog = main.clone()
        apply_passes(prog, names, {loss.name})
        block = prog.global_block()
        lazy, full = BlockDependencies(block), dependencies(block.ops)
        assert [lazy[i] for i in range(len(block.ops))] == full
