"""The CNN ops' CUDA kernels (conv2d, depthwise_conv2d, fused_conv2d, pool2d, batch_norm,
dropout, lookup_table_v2 and their gradients): every op-table row equals the CPU kernel,
forward and gradient; extra shapes reach what the tiny rows do not; gradient ops with
some outputs absent; dropout draws the CPU kernel's mask for the same seed. Prints
`checked N [ops]`. Run by tests/gpu/test_gpu_sim_nn.py as `cnn_ops.py OP...`."""
import sys

import numpy as np
from op_rows import load_all

from numbaflow.kernels import get_op_def, run_op
from numbaflow.kernels.registry import build_kernel
from numbaflow.testing.op_test import grad_inputs, make_inputs

OPS = tuple(sys.argv[1:])        # the ops of tests/gpu/test_gpu_sim_nn.py's OPS
checked, failures = [], []
rng = np.random.default_rng(0)


def close(label, g, w):
    tol = 1e-5 if w.dtype == np.float32 else 1e-12
    if g.shape != w.shape or g.dtype != w.dtype or not np.allclose(g, w, rtol=tol, atol=tol):
        failures.append(f"{label}: gpu {g} vs cpu {w}")


def compare(label, op, arrays, attrs):
    cpu = run_op(op, arrays, attrs)
    try:
        gpu = run_op(op, arrays, attrs, device="gpu")
    except Exception as e:
        failures.append(f"{label}: {type(e).__name__}: {str(e)[-300:]}")
        return cpu
    for slot, want in cpu.items():
        close(f"{label} {slot}", gpu[slot], want)
    checked.append(op)
    return cpu


def fwd_and_grad(label, op, arrays, attrs):
    out = compare(label, op, arrays, attrs)
    compare(label + " (grad)", op + "_grad", grad_inputs(get_op_def(op + "_grad"), arrays,
                                                         out, rng), attrs)


for case in load_all():
    if case.op not in OPS:
        continue
    for dtype in case.dtypes:
        fwd_and_grad(f"{case.id}-{dtype}", case.op, make_inputs(case, dtype), case.attrs)

# shapes the table's tiny rows do not reach: more threads than one block, a channel
# longer than a block (the per-thread loop before the tree), grid-strided channels
u = lambda *s: rng.uniform(-1, 1, s)
perm = lambda *s: rng.permutation(int(np.prod(s))).reshape(s) / 10.0   # no ties
EXTRA = [
    ("conv2d", {"Input": u(2, 3, 9, 8), "Filter": u(4, 3, 3, 3)},
     {"paddings": [1, 1], "strides": [2, 1]}),
    ("fused_conv2d", {"Input": u(2, 3, 9, 8), "Filter": u(4, 3, 3, 3), "Bias": u(4)},
     {"paddings": [1, 1], "activation": "relu"}),
    ("depthwise_conv2d", {"Input": u(2, 4, 9, 8), "Filter": u(8, 1, 3, 3)},
     {"groups": 4, "paddings": [1, 1], "fuse_relu_before_depthwise_conv": True}),
    ("pool2d", {"X": perm(2, 3, 9, 8)}, {"ksize": [3, 3], "strides": [2, 2],
                                           "paddings": [1, 1], "ceil_mode": True}),
    ("pool2d", {"X": np.round(u(1, 2, 6, 6))}, {"ksize": [3, 3], "strides": [1, 1]}),
    ("batch_norm", {"X": u(3, 2, 7, 9) * 3 + 1, "Scale": u(2), "Bias": u(2),
                     "Mean": u(2), "Variance": u(2) + 2}, {"momentum": 0.7}),
    ("lookup_table_v2", {"W": u(7, 40), "Ids": rng.integers(0, 7, (3, 5))},
     {"padding_idx": 3}),
]
for op, arrays, attrs in EXTRA:
    for dtype in ("float32", "float64"):
        arrs = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in arrays.items()}
        fwd_and_grad(f"extra {op} {attrs} {dtype}", op, arrs, attrs)

# gradient ops with some outputs absent: bind the GPU factory directly
from numba import cuda
from numbaflow.kernels.registry import ConcreteOp, InferContext, VarInfo
def partial_grad(op, arrays, attrs, keep):
    gdef = get_op_def(op)
    full = dict(gdef.attrs, **attrs)
    infos = {k: [VarInfo(a.shape, a.dtype)] for k, a in arrays.items()}
    oinfos = {k: [v] for k, v in gdef.infer(InferContext(op, full, infos)).items()}
    cop = ConcreteOp(op, full, infos, oinfos)
    want = run_op(op, arrays, attrs)
    for slot in oinfos:
        if slot not in keep:
            continue
        d_ins = {k: [cuda.to_device(a)] for k, a in arrays.items()}
        outs = {slot: [cuda.device_array(oinfos[slot][0].shape, oinfos[slot][0].dtype)]}
        gdef.gpu(cop)(d_ins, outs)()
        close(f"{op} only {slot}", outs[slot][0].copy_to_host(), want[slot])
        checked.append(op)
# (the grad ops trust their shapes: the forward's infer checked them)
g = {"Input": u(1, 2, 5, 5), "Filter": u(2, 1, 3, 3), "Output@GRAD": u(1, 2, 3, 3)}
for op in ("conv2d_grad", "depthwise_conv2d_grad"):
    partial_grad(op, g, {"groups": 2}, ("Input@GRAD", "Filter@GRAD"))
bn = run_op("batch_norm", {"X": u(2, 3, 2), "Scale": u(3), "Bias": u(3), "Mean": u(3),
                           "Variance": u(3) + 2})
partial_grad("batch_norm_grad", {"X": u(2, 3, 2), "Scale": u(3), "SavedMean":
             bn["SavedMean"], "SavedVariance": bn["SavedVariance"], "Y@GRAD": u(2, 3, 2)},
             {}, ("X@GRAD", "Scale@GRAD", "Bias@GRAD"))

# dropout in training: the GPU draws the CPU kernel's stream, so one seed gives one
# mask on both; without fix_seed the mask changes from run to run, with it it does not
x = u(6, 7).astype("float32")
for fix in (False, True):
    attrs = {"dropout_prob": 0.4, "seed": 11, "fix_seed": fix,
              "dropout_implementation": "upscale_in_train"}
    masks = {}
    for dev in ("cpu", "gpu"):
        thunk, outs = build_kernel("dropout", {"X": x}, attrs, dev)
        runs = []
        for _ in range(2):
            thunk()
            m, o = outs["Mask"][0], outs["Out"][0]
            runs.append((m.copy() if dev == "cpu" else m.copy_to_host(),
                         o.copy() if dev == "cpu" else o.copy_to_host()))
        masks[dev] = runs
    for k in range(2):
        (mc, oc), (mg, og) = masks["cpu"][k], masks["gpu"][k]
        if not (np.array_equal(mc, mg) and mg.dtype == np.uint8):
            failures.append(f"dropout fix_seed={fix} run {k}: gpu mask != cpu mask")
        close(f"dropout fix_seed={fix} run {k} Out", og, oc)
        if not 0 < mg.sum() < mg.size:
            failures.append(f"dropout fix_seed={fix}: degenerate mask {mg}")
    same = np.array_equal(masks["gpu"][0][0], masks["gpu"][1][0])
    if same != fix:
        failures.append(f"dropout fix_seed={fix}: masks of two runs equal: {same}")
    checked.append("dropout")

print("checked", len(checked), sorted(set(checked)))
print("\n".join(failures))
sys.exit(1 if failures else 0)
