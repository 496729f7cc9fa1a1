"""The fusion passes' cost rule (graph/passes/cost.py): what each op is priced at, and
which candidates the passes fuse or refuse because of it (issue 22 item 4)."""
import numpy as np
import pytest

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.graph import verify
from numbaflow.graph.passes import apply_passes, cost, get_pass
from numbaflow.compiler.compiled_program import passed_programs

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

F32 = 4
B = cost.UNKNOWN_DIM        # the open batch dimension counts as this many rows


def passed(main, name, protected=(), device="cpu"):
    g = static.Graph(main)
    g.apply_pass(name, protected=protected, device=device)
    verify(g.program)
    return g.program, g.applied_passes[-1]


def types(program):
    return [op.type for op in program.global_block().ops]


def ops_of(program, op_type):
    return [op for op in program.global_block().ops if op.type == op_type]


# ---------------------------------------------------------------- prices
def test_elementwise_price_counts_what_the_loop_loads_and_stores():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 100])
        b = static.data("b", [100])
        paddle.nn.functional.relu(x + b)
    add, relu = main.global_block().ops
    full = B * 100 * F32
    assert cost.price(add) == cost.Price(2 * full + 100 * F32, 1, 1, 0)
    assert cost.price(relu) == cost.Price(2 * full, 1, 1, 0)


def test_add_grad_price_copies_and_sums_down_without_scratch():
    """dX is dOut passed through (a copy: read + write), dY is dOut summed down to the
    bias (read full, write small): two calls after no loop, strung together."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 50])
        b = static.data("b", [50])
        x.stop_gradient = b.stop_gradient = False
        static.gradients([paddle.mean(x + b)], [x, b])
    grad, = ops_of(main, "elementwise_add_grad")
    full, small = B * 50 * F32, 50 * F32
    assert cost.price(grad) == cost.Price(2 * full + full + small, 1, 2, 1)


def test_plain_op_reads_every_input_and_writes_every_output():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 30])
        static.nn.fc(x, 20, bias_attr=False)
    mul, = main.global_block().ops
    assert cost.price(mul) == cost.Price((B * 30 + 30 * 20 + B * 20) * F32, 1, 1, 0)


def test_verdict_text_gives_both_sides():
    v = cost.Verdict(cost.Price(3000, 2, 2, 0), cost.Price(1000, 1, 2, 1), cost.RATES["cpu"])
    r = cost.RATES["cpu"]
    want = 2000 / r.bytes_per_s + r.op_s - r.sequence_s
    assert v.saved_s == pytest.approx(want)
    assert str(v).startswith("saves 2.0 KB and 1 op, costs 1 sequence: ")
    assert v.pays == (want > 0)


# ---------------------------------------------------------------- decisions
def chain(width):
    """tanh(relu(x * 2 + 1)) over [None, width]: an elementwise chain whose intermediates
    the fused loop keeps in registers."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, width])
        out = paddle.tanh(paddle.nn.functional.relu(paddle.scale(x, 2.0, 1.0)))
    return main, out


def test_a_fusion_that_saves_bytes_fires_with_the_saving_computed():
    main, out = chain(4096)
    before = list(main.global_block().ops)
    program, p = passed(main, "auto_fusion", [out.name])
    assert types(program) == ["fused_elementwise"]
    # three ops each reading and writing the full tensor -> one reading x, writing out
    full = B * 4096 * F32
    v = cost.judge(before, program.global_block().ops[0])
    assert (v.before.bytes, v.after.bytes) == (6 * full, 2 * full)
    assert v.pays and not [r for r in p.refusals if "pay" in r[1]]


def test_a_matmul_head_is_left_out_where_it_only_adds_a_call_sequence():
    """fc(x, 1000) + relu: fusing the bias add and the relu saves a pass over the
    activations; taking the GEMM in too saves one op but strings two kernels in Python."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 64])
        h = static.nn.fc(x, 1000, activation="relu")
    program, p = passed(main, "auto_fusion", [h.name])
    assert types(program) == ["mul", "fused_elementwise"]
    what, why = next(r for r in p.refusals if r[0].startswith("mul("))
    assert "pays more without it" in why, why


def test_a_tiny_group_is_refused_with_the_numbers():
    """fc(x, 3) without activation: mul + a bias add over 3 columns saves no bytes worth a
    call sequence: the pass refuses, and says what it would save and cost."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 4])
        h = static.nn.fc(x, 3)
    program, p = passed(main, "auto_fusion", [h.name])
    assert types(program) == ["mul", "elementwise_add"]
    (what, why), = [r for r in p.refusals if "pay" in r[1]]
    assert what.startswith("group mul(") and "elementwise_add(" in what
    assert why.startswith("fusing does not pay: saves 1 op, costs 1 sequence: -"), why


def test_the_rule_can_be_switched_off_for_the_mechanics():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 4])
        h = static.nn.fc(x, 3)
    p = get_pass("auto_fusion", protected=[h.name], cost_rule=False)
    apply_passes(main, [p])
    assert types(main) == ["fused_elementwise"] and p.changed


def test_a_gpu_pays_for_launches_not_sequences():
    """The same tiny group on a GPU: one op fewer and no launch more, so it fuses."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 4])
        h = static.nn.fc(x, 3)
    program, _ = passed(main, "auto_fusion", [h.name], device="gpu")
    assert types(program) == ["fused_elementwise"]


def test_add_act_and_optimizer_fusions_that_pay_still_fire():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 256])
        y = static.data("y", [None, 1], "int64")
        h = static.nn.fc(x, 256, activation="relu")
        loss = paddle.mean(paddle.nn.functional.softmax_with_cross_entropy(
            static.nn.fc(h, 10), y))
        paddle.optimizer.Momentum(0.1, 0.9).minimize(loss)
    program, p = passed(main, "fuse_elewise_add_act", [loss.name])
    assert "fused_elemwise_add_activation" in types(program)
    assert "fused_elemwise_add_activation_grad" in types(program)
    assert not [r for r in p.refusals if "pay" in r[1]], p.refusals
    program, p = passed(main, "fuse_all_optimizer_ops", [loss.name])
    assert types(program).count("fused_momentum") == 1 and "momentum" not in types(program)


def test_fused_training_with_the_rule_equals_unfused():
    """Through CompiledProgram with the rule on: the chain fuses and computes the same."""
    main, out = chain(2048)
    x = np.random.default_rng(1).standard_normal((8, 2048)).astype("float32")
    exe = static.Executor(paddle.CPUPlace())
    want, = exe.run(main, feed={"x": x}, fetch_list=[out])
    bs = static.BuildStrategy()
    bs.enable_auto_fusion = True
    compiled = static.CompiledProgram(main, build_strategy=bs)
    got, = exe.run(compiled, feed={"x": x}, fetch_list=[out])
    np.testing.assert_allclose(got, np.tanh(np.maximum(2 * x + 1, 0)), rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    program, = passed_programs(compiled)
    assert types(program) == ["fused_elementwise"]
