"""The CUDA kernels of the ops added for Paddle 2 models (issue 28: adaptive pool2d,
conv2d_transpose, ...): each op-table row whose id starts with one of ROWS, forward and
gradient, equals the CPU kernel. Run by tests/gpu/test_gpu_sim_model_ops.py."""
from op_compare import OpComparison

ROWS = ("pool2d-adaptive", "conv2d_transpose-", "depthwise_conv2d_transpose-",
        "nearest_interp_v2-", "bilinear_interp_v2-", "group_norm-", "instance_norm-", "pad3d-",
        "one_hot_v2-", "hard_swish", "hard_sigmoid", "swish", "brelu", "max_pool2d_with_index",
        "elu", "celu", "selu", "softplus", "softsign", "mish", "logsigmoid", "tanh_shrink",
        "softshrink", "hard_shrink", "thresholded_relu", "sigmoid_ce-pos_weight",
        "sigmoid_ce_grad-pos_weight", "huber_loss", "bce_loss", "kldiv_loss", "prelu-", "unfold-",
        "nll_loss-")

if __name__ == "__main__":
    check = OpComparison(f64_tol=1e-11)
    check.rows(lambda case: case.id.startswith(ROWS))
    check.finish(at_least=2 * len(ROWS))
