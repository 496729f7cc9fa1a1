"""fuse_elewise_add_act: an elementwise_add and an activation become one
`fused_elemwise_add_activation` op, forward and backward (Paddle's pass, wider).

Patterns, applied in this order (PADDLE_SEMANTICS §2.1):

* forward "add then act": act(elementwise_add(X, Y)) -> functor_list [act, add];
* forward "act then add": elementwise_add(X, act(Y)) (act output in either slot) ->
  functor_list [add, act], X = the other operand, Y = the act's input;
* backward: `<act>_grad` feeding `elementwise_add_grad`'s Out@GRAD, and
  `elementwise_add_grad` feeding an `<act>_grad`'s Out@GRAD -> one
  `fused_elemwise_add_activation_grad` (functor names with `_grad`).

act is relu, tanh, sigmoid, gelu or scale, backward included (Paddle fuses only relu
backward, never sigmoid or gelu, and drops scale's bias). An intermediate that other ops
read (or that is fed or fetched) stays: the fused op writes it as IntermediateOut (or
IntermediateOut@GRAD) instead of the fusion being dropped; one nobody reads is removed
at the end, with `save_intermediate_out=False`. Every candidate left alone is recorded
with `refuse` and the reason.
"""
from ...kernels.fused.fused_add_act import ACTIVATIONS, ADD, FORWARD, GRAD, act_grad_reads, functors
from ...kernels.registry import ELEMENTWISE, NO_GRAD, get_op_def
from ..program import BACKWARD
from . import register_pass, remove_unused_vars
from .rewrite import Replacement, Rewrite, rewrite_block

ADD_GRAD = f"{ADD}_grad"


def _unary(op):
    """An elementwise X -> Out op that has a gradient (an activation-like op)."""
    d = get_op_def(op.type)
    return (d.has(ELEMENTWISE) and not d.has(NO_GRAD) and set(op.inputs) == {"X"}
            and set(op.outputs) == {"Out"} and not d.input_slot("X").duplicable)


def _grad_act(op):
    """The activation whose gradient `op` computes, or None. scale's gradient is a
    backward `scale` with bias 0 (its grad rule)."""
    if op is None:
        return None
    if op.type.endswith("_grad") and op.type[:-5] in ACTIVATIONS:
        return op.type[:-5]
    if op.type == "scale" and op.role == BACKWARD and op.attrs["bias"] == 0.0 and \
            "ScaleTensor" not in op.inputs:     # the fused kernel knows the attribute only
        return "scale"
    return None


def _act_attrs(act, attrs):
    return {k: attrs[k] for k in get_op_def(act).attrs}


def _functors(op):
    """(act, act_is_outer) of a fused op, or None for an unsupported functor_list."""
    try:
        return functors(op.attrs)
    except ValueError:
        return None


def _compare_attrs(act):
    """The attributes a forward activation and its gradient op must agree on (scale's
    gradient does not depend on the bias)."""
    return ("scale",) if act == "scale" else tuple(get_op_def(act).attrs)


def _one(op, slot):
    vs = op.inputs.get(slot) or op.outputs.get(slot) or []
    return vs[0] if vs else None


@register_pass
class FuseElewiseAddAct(Rewrite):
    """Four patterns, each matched over the whole block in turn (the forward ones first:
    the backward ones look for the fused forward op), then the fused forward ops whose
    IntermediateOut nobody reads stop writing it."""
    name = "fuse_elewise_add_act"

    def run(self, program):
        block = self.block = program.global_block()
        self.made = []              # forward fused ops made here (IntermediateOut cleanup)
        self.dropped = set()        # names of variables the removed ops referenced
        changed = False
        for self.pattern in (self._forward_add_act, self._forward_act_add,
                             self._backward_act_add, self._backward_add_act):
            changed |= rewrite_block(self, block)
            inserted = {id(o) for o in block.ops}      # (the cost rule may have said no)
            self.made = [f for f in self.made if id(f) in inserted]
        for f in self.made:
            inter = _one(f, "IntermediateOut")
            if inter is not None and not block.consumers(inter) and \
                    inter.name not in self.protected:
                block.set_output(f, "IntermediateOut", None)
                block.set_attr(f, "save_intermediate_out", False)
                self.dropped.add(inter.name)
        remove_unused_vars(block, sorted(self.dropped - self.protected))
        return changed

    def candidates(self, block, ops):
        return ops

    def match(self, block, op):
        return self.pattern(op)

    # ------------------------------------------------------------ bookkeeping
    def _readers(self, var, besides):
        return [o for o in self.block.consumers(var) if not any(o is b for b in besides)]

    def _keep(self, var, besides):
        """`var` must survive the fusion of `besides` (other readers, or fed/fetched)."""
        return bool(self._readers(var, besides)) or var.name in self.protected

    def _replace(self, old, new, what):
        """The Replacement putting `new` where the first of `old` was (or, if an input is
        produced in between, where the last was); None (refused) when neither place keeps
        the order valid."""
        block = self.block
        idx = sorted(block.index(o) for o in old)
        gone = {id(o) for o in old}

        def positions(ops):
            return [block.index(o) for o in ops if id(o) not in gone]

        def valid(pos):
            for v in new.input_vars():      # computed before pos (by an op that stays)
                if not (v.persistable or v.is_data) and \
                        max(positions(block.producers(v)), default=pos) >= pos:
                    return False
            return not any(i < pos for v in set(new.output_vars())
                           for i in positions(block.consumers(v) + block.producers(v)))
        pos = next((p for p in (idx[0], idx[-1]) if valid(p)), None)
        if pos is None:
            self.refuse(what, "no position keeps the program order valid (an input of the "
                              "fused op is computed between the two ops, and one of its "
                              "outputs is used there)")
            return None
        new.role = old[0].role
        for o in old:
            self.dropped.update(v.name for v in o.input_vars() + o.output_vars())
        return Replacement(old, [new], [block.ops[pos]], what=what)

    # ------------------------------------------------------------ forward
    def _forward_add_act(self, add):
        """act(elementwise_add(X, Y)) -> [act, elementwise_add]."""
        if add.type != ADD:
            return
        inter = add.outputs["Out"][0]
        acts = [o for o in self.block.consumers(inter) if _unary(o)]

        def what(act):
            return f"{ADD}({inter.name}) -> {act.type}"
        for act in acts:
            if act.type not in ACTIVATIONS:
                self.refuse(what(act), f"{act.type} is not a fusable activation "
                                       f"({', '.join(ACTIVATIONS)})")
        acts = [a for a in acts if a.type in ACTIVATIONS]
        if not acts:
            return
        act = acts[0]
        if inter.dtype.kind != "f":
            self.refuse(what(act), f"{inter.name} is {inter.dtype}, not a float")
            return
        new = self.block.make_op(
            FORWARD, {"X": add.inputs["X"], "Y": add.inputs["Y"]},
            {"Out": act.outputs["Out"], "IntermediateOut": [inter]},
            dict(_act_attrs(act.type, act.attrs), functor_list=[act.type, ADD],
                 axis=add.attrs["axis"], save_intermediate_out=True))
        found = self._replace([add, act], new, what(act))
        if found is None:
            return None
        self.made.append(new)
        for other in acts[1:]:
            self.refuse(what(other), f"{inter.name} is already fused with {act.type}; "
                                     f"{other.type} reads it as IntermediateOut")
        return found

    def _forward_act_add(self, add):
        """elementwise_add(X, act(Y)) (act output in either slot) -> [elementwise_add, act]."""
        if add.type != ADD:
            return
        out = add.outputs["Out"][0]
        for side, other_side in (("Y", "X"), ("X", "Y")):
            r = add.inputs[side][0]
            act = self.block.producer(r)
            if act is None or not _unary(act):
                continue
            what = f"{act.type}({r.name}) -> {ADD}({out.name})"
            if act.type not in ACTIVATIONS:
                self.refuse(what, f"{act.type} is not a fusable activation "
                                  f"({', '.join(ACTIVATIONS)})")
                continue
            if out.dtype.kind != "f":
                self.refuse(what, f"{out.name} is {out.dtype}, not a float")
                return
            if add.inputs[other_side][0] is r:
                self.refuse(what, f"both operands of the add are {r.name}")
                return
            if self._keep(r, [add]) and r.shape != out.shape:
                self.refuse(what, f"{r.name} has other readers (or is fed/fetched) and shape "
                                  f"{r.shape}, smaller than {out.shape}: the fused kernel "
                                  f"writes its outputs over the add's shape")
                continue
            new = self.block.make_op(
                FORWARD, {"X": add.inputs[other_side], "Y": act.inputs["X"]},
                {"Out": [out], "IntermediateOut": [r]},
                dict(_act_attrs(act.type, act.attrs), functor_list=[ADD, act.type],
                     axis=add.attrs["axis"], save_intermediate_out=True))
            found = self._replace([act, add], new, what)
            if found is not None:
                self.made.append(new)
            return found

    # ------------------------------------------------------------ backward
    def _grad_inputs(self, x, y, d, out, inter):
        """The fused gradient's inputs. X is left out (as Paddle does) when X@GRAD has
        Out@GRAD's shape for sure: X has that shape and Y no unknown dim."""
        ins = {"Y": [y], "Out": [out], "Out@GRAD": [d]}
        if not (x.shape == d.shape and -1 not in y.shape):
            ins["X"] = [x]
        if inter is not None:
            ins["IntermediateOut"] = [inter]
        return ins

    def _backward_act_add(self, g2):
        """`<act>_grad` -> elementwise_add_grad: the gradient of act(x + y)."""
        if g2.type != ADD_GRAD:
            return
        d_inter = g2.inputs["Out@GRAD"][0]
        g1 = self.block.producer(d_inter)
        act = _grad_act(g1)
        if act is None:
            for f in self.made:
                if (_functors(f)[1] and f.inputs["X"][0] is g2.inputs["X"][0]
                        and f.inputs["Y"][0] is g2.inputs["Y"][0]):
                    self.refuse(f"backward of {FORWARD}({_one(f, 'Out').name})",
                                f"{d_inter.name} comes from {g1.type if g1 else 'no op'}, not "
                                f"from an activation's gradient (the intermediate's gradient "
                                f"sums several readers' contributions)")
            return
        what = f"{g1.type} -> {ADD_GRAD}({d_inter.name})"
        reads = act_grad_reads(act)
        d_out = g1.inputs["Out@GRAD" if reads else "X"][0]
        inter = g1.inputs["X"][0] if reads == "X" else None
        out = g1.inputs["Out"][0] if reads == "Out" else self._act_out(act, g1, g2, inter)
        if out is None:
            self.refuse(what, f"the forward {act} output could not be found (the fused "
                              f"gradient reads it)")
            return
        outs = {k: g2.outputs[k] for k in ("X@GRAD", "Y@GRAD") if g2.outputs.get(k)}
        if self._keep(d_inter, [g2]):
            outs["IntermediateOut@GRAD"] = [d_inter]
        new = self.block.make_op(
            GRAD, self._grad_inputs(g2.inputs["X"][0], g2.inputs["Y"][0], d_out, out, inter),
            outs, dict(_act_attrs(act, g1.attrs if act != "scale" else
                                  {"scale": g1.attrs["scale"], "bias": 0.0,
                                   "bias_after_scale": True}),
                       functor_list=[f"{act}_grad", ADD_GRAD], axis=g2.attrs["axis"],
                       save_intermediate_out=inter is not None))
        return self._replace([g1, g2], new, what)

    def _act_out(self, act, g1, g2, inter):
        """The forward output of `act` whose gradient `g1` is (gelu: by its input;
        scale: by the add the gradient flows into)."""
        x, y, axis = g2.inputs["X"][0], g2.inputs["Y"][0], g2.attrs["axis"]
        for op in self._act_out_candidates(x, inter):
            if op.role == BACKWARD:
                continue
            if op.type == FORWARD and _functors(op) == (act, True) and (
                    _one(op, "IntermediateOut") is inter if inter is not None else
                    op.inputs["X"][0] is x and op.inputs["Y"][0] is y
                    and op.attrs["axis"] == axis and op.attrs["scale"] == g1.attrs["scale"]):
                return op.outputs["Out"][0]
            if op.type == act:
                src = op.inputs["X"][0]
                if inter is not None:
                    if src is inter:
                        return op.outputs["Out"][0]
                    continue
                add = self.block.producer(src)
                if (op.attrs["scale"] == g1.attrs["scale"] and add is not None
                        and add.type == ADD and add.inputs["X"][0] is x
                        and add.inputs["Y"][0] is y and add.attrs["axis"] == axis):
                    return op.outputs["Out"][0]
        return None

    def _act_out_candidates(self, x, inter):
        """In program order, the ops `_act_out` may pick (from the maps): those writing
        or reading `inter`, or else reading `x` or the output of an op reading `x`."""
        block = self.block
        if inter is not None:
            ops = block.producers(inter) + block.consumers(inter)
        else:
            first = block.consumers(x)
            ops = first + [c for f in first for v in f.output_vars() for c in block.consumers(v)]
        return sorted({id(o): o for o in ops}.values(), key=block.index)

    def _backward_add_act(self, g2):
        """elementwise_add_grad -> `<act>_grad`: the gradient of x + act(y)."""
        if g2.type != ADD_GRAD:
            return
        for side, other_side in (("Y", "X"), ("X", "Y")):
            dr = _one(g2, f"{side}@GRAD")
            if dr is None:
                continue
            g1s = [o for o in self.block.consumers(dr) if _grad_act(o)]
            if not g1s:
                continue
            g1 = g1s[0]
            act = _grad_act(g1)
            reads = act_grad_reads(act)
            if g1.inputs["Out@GRAD" if reads else "X"][0] is not dr:
                continue
            r = g2.inputs[side][0]
            what = f"{ADD_GRAD}({dr.name}) -> {g1.type}"
            h = self._act_source(r, act, g1)
            if isinstance(h, str):
                self.refuse(what, h)
                continue
            out = self._add_out(g2, side, other_side, r, act)
            if out is None:
                self.refuse(what, f"the forward add reading {r.name} could not be found (the "
                                  f"fused gradient reads its output)")
                continue
            outs = {"Y@GRAD": g1.outputs["X@GRAD" if reads else "Out"]}
            if g2.outputs.get(f"{other_side}@GRAD"):
                outs["X@GRAD"] = g2.outputs[f"{other_side}@GRAD"]
            if self._keep(dr, [g1]):
                outs["IntermediateOut@GRAD"] = [dr]
            inter = r if reads == "Out" else None
            new = self.block.make_op(
                GRAD, self._grad_inputs(g2.inputs[other_side][0], h, g2.inputs["Out@GRAD"][0],
                                        out, inter),
                outs, dict(_act_attrs(act, g1.attrs if act != "scale" else
                                      {"scale": g1.attrs["scale"], "bias": 0.0,
                                       "bias_after_scale": True}),
                           functor_list=[ADD_GRAD, f"{act}_grad"], axis=g2.attrs["axis"],
                           save_intermediate_out=inter is not None))
            return self._replace([g2, g1], new, what)

    def _act_source(self, r, act, g1):
        """The input of the forward `act` whose output `r` `g1` differentiates, or the
        reason the pair cannot be fused."""
        p = self.block.producer(r)
        h = attrs = None
        if p is not None and p.type == act and p.outputs["Out"][0] is r:
            h, attrs = p.inputs["X"][0], p.attrs
        elif p is not None and p.type == FORWARD and _functors(p) == (act, False) \
                and _one(p, "IntermediateOut") is r:
            h, attrs = p.inputs["Y"][0], p.attrs
        elif p is not None and p.type == FORWARD and _functors(p) == (act, True) \
                and p.outputs["Out"][0] is r:
            h, attrs = _one(p, "IntermediateOut"), p.attrs
        if h is None:
            return (f"{r.name} is not the output of a {act} op whose input is in the graph "
                    f"(it comes from {p.type if p else 'no op'})")
        reads = act_grad_reads(act)
        if reads == "Out" and g1.inputs["Out"][0] is not r or \
                reads == "X" and g1.inputs["X"][0] is not h:
            return f"{g1.type} does not read the forward {act}'s values"
        if any(attrs[k] != g1.attrs[k] for k in _compare_attrs(act)):
            return f"{g1.type}'s attributes differ from the forward {act}'s"
        return h

    def _add_out(self, g2, side, other_side, r, act):
        """The output of the forward add (plain, or fused with `act`) that `g2`
        differentiates, reading the activation output `r` on `side`."""
        other, axis = g2.inputs[other_side][0], g2.attrs["axis"]
        p = self.block.producer(r)
        if (p is not None and p.type == FORWARD and _functors(p) == (act, False)
                and p.inputs["X"][0] is other and p.attrs["axis"] == axis):
            return p.outputs["Out"][0]
        for c in self.block.consumers(r):
            if (c.type == ADD and c.role != BACKWARD and c.attrs["axis"] == axis
                    and c.inputs[side][0] is r and c.inputs[other_side][0] is other):
                return c.outputs["Out"][0]
        return None
