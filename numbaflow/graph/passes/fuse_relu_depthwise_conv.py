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
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite

CONV = "depthwise_conv2d"
ATTR = "fuse_relu_before_depthwise_conv"


@register_pass
class FuseReluDepthwiseConv(Rewrite):
    name = "fuse_relu_depthwise_conv"
    anchors = (CONV,)

    def what(self, conv):
        return f"relu({conv.inputs['Input'][0].name}) -> {CONV}"

    def match(self, block, conv):
        y = conv.inputs["Input"][0]
        relu = block.producer(y)
        if relu is None or relu.type != "relu" or conv.attrs[ATTR]:
            return None
        if y.name in self.protected:
            raise Refused(f"{y.name} is fed or fetched")
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
            raise Refused(f"{y.name} has other readers: "
                          f"{[o.type for o in others + grads[1:] + relu_grads[1:]]}")
        grad = grads[0] if grads else None
        relu_grad = relu_grads[0] if relu_grads else None
        dy = grad.outputs.get("Input@GRAD", [None])[0] if grad else None
        if relu_grad is not None:
            if dy is None or relu_grad.inputs["Out@GRAD"][0] is not dy:
                raise Refused(f"relu_grad does not read the gradient {CONV}_grad computes "
                              f"for {y.name}")
            if dy.name in self.protected or [o for o in block.consumers(dy)
                                             if o is not relu_grad]:
                raise Refused(f"{dy.name} has other readers or is fed or fetched")
        elif dy is not None:
            raise Refused(f"{dy.name} ({y.name}'s gradient) is not consumed by relu_grad")
        # the convs read x instead of y (one shape: they cost what they cost now), and
        # the grad writes x's gradient; the relu ops go
        x = relu.inputs["X"][0]
        old, new, at = [relu, conv], [], []
        for op in (conv, grad):
            if op is None:
                continue
            outputs = dict(op.outputs)
            if op is grad and relu_grad is not None:
                outputs["Input@GRAD"] = relu_grad.outputs["X@GRAD"]
            fused = block.make_op(op.type, dict(op.inputs, Input=[x]), outputs,
                                  dict(op.attrs, **{ATTR: True}))
            fused.role = op.role
            new.append(fused)
            at.append(op)
        old += [o for o in (grad, relu_grad) if o is not None]
        return Replacement(old, new, at)
