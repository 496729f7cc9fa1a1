"""Table rows for sync_batch_norm (kernels/parallel/sync_bn.py). The table runs ops on one device,
where the statistics over all devices are the local ones: the rows are batch_norm's
reference (tests/op_rows/nn.py). The multi-device meaning is tested with real replicas
in tests/kernels/test_sync_bn.py."""
from . import row
from .nn import _bn_inputs, bn_ref

for _id, _shape, _c, _attrs in [
        ("train-2d", (5, 3), 3, {}),
        ("train-4d", (2, 3, 2, 2), 3, {"momentum": 0.8, "epsilon": 1e-3}),
        ("train-nhwc", (2, 2, 2, 3), 3, {"data_layout": "NHWC"}),
        ("test-4d", (2, 3, 2, 2), 3, {"is_test": True}),
        ("global_stats-4d", (2, 2, 3, 2), 2, {"use_global_stats": True}),
        ("test-trainable_statistics", (4, 3), 3,
         {"is_test": True, "trainable_statistics": True})]:
    row("sync_batch_norm", _bn_inputs(_shape, _c), bn_ref, f"sync_batch_norm-{_id}",
        attrs=_attrs, outputs_for_grad=("Y",))
