"""fuse_relu_depthwise_conv: depthwise_conv2d(relu(x)) reads x and applies the relu
inside its kernel, forward and backward (PADDLE_SEMANTICS §2.2; on CPU and GPU, where
Paddle's pass is GPU-only).

Forward-only form: x -> relu -> y -> depthwise_conv2d. Forward + backward form, in
addition: depthwise_conv2d_grad(Input=y) -> y@GRAD -> relu_grad(Out=y) -> x@GRAD.
The rewrite sets `fuse_relu_before_depthwise_conv=True` on the conv (and its grad), makes
them read x (the grad writes x@GRAD: its kernel masks Input@GRAD by x > 0, as relu_grad
did by y > 0), and removes relu, relu_grad, y and y@GRAD. y and y@GRAD must have no
other reader and not be fed or fetched; otherwise the candidate is refused, with the
reason.
"""
from . import Pass, register_pass, remove_unused_vars

CONV = "depthwise_conv2d"
ATTR = "fuse_relu_before_depthwise_conv"


@register_pass
class FuseReluDepthwiseConv(Pass):
    name = "fuse_relu_depthwise_conv"

    def run(self, program):
        block = program.global_block()
        changed = False
        for conv in [op for op in block.ops if op.type == CONV]:
            changed |= self._fuse(block, conv)
        return changed

    def _fuse(self, block, conv):
        y = conv.inputs["Input"][0]
        relu = block.producer(y)
        if relu is None or relu.type != "relu" or conv.attrs[ATTR]:
            return False
        what = f"relu({y.name}) -> {CONV}"
        if y.name in self.protected:
            return self._refuse(what, f"{y.name} is fed or fetched")
        grads, relu_grads, others = [], [], []
        for op in block.consumers(y):
            if op is conv:
                continue
            if op.type == CONV + "_grad" and op.inputs["Input"][0] is y \
                    and op.attrs == conv.attrs:
                grads.append(op)
            elif op.type == "relu_grad" and op.inputs["Out"][0] is y:
                relu_grads.append(op)
            else:
                others.append(op)
        if others or len(grads) > 1 or len(relu_grads) > 1:
            return self._refuse(what, f"{y.name} has other readers: "
                                      f"{[o.type for o in others + grads[1:] + relu_grads[1:]]}")
        grad = grads[0] if grads else None
        relu_grad = relu_grads[0] if relu_grads else None
        dy = grad.outputs.get("Input@GRAD", [None])[0] if grad else None
        if relu_grad is not None:
            if dy is None or relu_grad.inputs["Out@GRAD"][0] is not dy:
                return self._refuse(what, f"relu_grad does not read the gradient "
                                          f"{CONV}_grad computes for {y.name}")
            if dy.name in self.protected or [o for o in block.consumers(dy)
                                             if o is not relu_grad]:
                return self._refuse(what, f"{dy.name} has other readers or is fed or fetched")
        elif dy is not None:
            return self._refuse(what, f"{dy.name} ({y.name}'s gradient) is not consumed by "
                                      f"relu_grad")
        # x and y (and their gradients) have one shape: the rewritten conv ops cost what
        # they cost now, and the relu ops go
        convs = [o for o in (conv, grad) if o is not None]
        if not self.pays(what, [o for o in (relu, relu_grad) if o is not None] + convs, convs):
            return False
        x = relu.inputs["X"][0]
        dropped = [y.name] + ([dy.name] if dy is not None else [])
        for op in (conv, grad):
            if op is not None:
                block.set_input(op, "Input", x)
                block.set_attr(op, ATTR, True)
        if relu_grad is not None:
            block.set_output(grad, "Input@GRAD", relu_grad.outputs["X@GRAD"])
        block.remove_ops([o for o in (relu, relu_grad) if o is not None])
        remove_unused_vars(block, dropped)
        return True

    def _refuse(self, what, reason):
        self.refuse(what, reason)
        return False
