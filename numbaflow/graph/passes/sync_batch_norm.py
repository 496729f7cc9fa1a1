"""sync_batch_norm: batch_norm / batch_norm_grad become sync_batch_norm /
sync_batch_norm_grad (kernels/parallel/sync_bn.py), whose batch statistics and their gradients
are summed over every device and rank (BuildStrategy.sync_batch_norm; Paddle's
sync_batch_norm_pass is the same rename, PADDLE_SEMANTICS §1.6).

Same slots and attributes, so the rename is the whole rewrite. Ops that normalise with
the running statistics (is_test without trainable_statistics, or use_global_stats) have
no batch statistics to share and are left alone, with the reason recorded.
"""
from ...kernels.nn.batch_norm import bn_uses_global_stats
from . import register_pass
from .rewrite import Refused, Replacement, Rewrite

RENAME = {"batch_norm": "sync_batch_norm", "batch_norm_grad": "sync_batch_norm_grad"}


@register_pass
class SyncBatchNormPass(Rewrite):
    name = "sync_batch_norm"
    cost_rule = False       # a rename for correctness across devices, not a fusion
    anchors = tuple(RENAME)

    def what(self, op):
        return f"{op.type} -> {RENAME[op.type]} (X = {op.inputs['X'][0].name})"

    def match(self, block, op):
        if bn_uses_global_stats(op.attrs):
            why = "use_global_stats" if op.attrs["use_global_stats"] else "is_test"
            raise Refused(f"it normalises with the running statistics ({why}): there "
                          f"are no batch statistics to synchronise")
        new = block.make_op(RENAME[op.type], op.inputs, op.outputs, op.attrs)
        new.role = op.role
        return Replacement([op], [new], [op])
