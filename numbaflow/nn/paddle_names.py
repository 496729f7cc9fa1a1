"""The public names of Paddle 2.6.2's `paddle.nn` and `paddle.nn.functional` (their
`__all__`, recorded from real Paddle by tests/fixtures/make_paddle_nn_names.py; the test
tests/nn/test_nn_names.py checks these against that record). A name here that numbaflow
lacks gets "Paddle's, not implemented yet" and the closest supported spelling."""

# paddle.nn.__all__
PADDLE_NN = tuple((
    "AdaptiveAvgPool1D AdaptiveAvgPool2D AdaptiveAvgPool3D AdaptiveMaxPool1D AdaptiveMaxPool2D "
    "AdaptiveMaxPool3D AlphaDropout AvgPool1D AvgPool2D AvgPool3D BCELoss BCEWithLogitsLoss "
    "BatchNorm BatchNorm1D BatchNorm2D BatchNorm3D BeamSearchDecoder BiRNN Bilinear CELU CTCLoss "
    "ChannelShuffle ClipGradByGlobalNorm ClipGradByNorm ClipGradByValue Conv1D Conv1DTranspose "
    "Conv2D Conv2DTranspose Conv3D Conv3DTranspose CosineEmbeddingLoss CosineSimilarity "
    "CrossEntropyLoss Dropout Dropout2D Dropout3D ELU Embedding Flatten Fold GELU GLU GRU GRUCell "
    "GaussianNLLLoss GroupNorm HSigmoidLoss Hardshrink Hardsigmoid Hardswish Hardtanh "
    "HingeEmbeddingLoss Identity InstanceNorm1D InstanceNorm2D InstanceNorm3D KLDivLoss L1Loss "
    "LSTM LSTMCell Layer LayerDict LayerList LayerNorm LeakyReLU Linear LocalResponseNorm "
    "LogSigmoid LogSoftmax MSELoss MarginRankingLoss MaxPool1D MaxPool2D MaxPool3D MaxUnPool1D "
    "MaxUnPool2D MaxUnPool3D Maxout Mish MultiHeadAttention MultiLabelSoftMarginLoss "
    "MultiMarginLoss NLLLoss PReLU Pad1D Pad2D Pad3D PairwiseDistance ParameterList PixelShuffle "
    "PixelUnshuffle PoissonNLLLoss RNN RNNCellBase RNNTLoss RReLU ReLU ReLU6 SELU Sequential "
    "Sigmoid Silu SimpleRNN SimpleRNNCell SmoothL1Loss SoftMarginLoss Softmax Softmax2D Softplus "
    "Softshrink Softsign SpectralNorm Swish SyncBatchNorm Tanh Tanhshrink ThresholdedReLU "
    "Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder "
    "TransformerEncoderLayer TripletMarginLoss TripletMarginWithDistanceLoss Unflatten Unfold "
    "Upsample UpsamplingBilinear2D UpsamplingNearest2D ZeroPad2D dynamic_decode").split())

# paddle.nn.functional.__all__
PADDLE_NN_FUNCTIONAL = tuple((
    "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d "
    "adaptive_max_pool2d adaptive_max_pool3d affine_grid alpha_dropout avg_pool1d avg_pool2d "
    "avg_pool3d batch_norm bilinear binary_cross_entropy binary_cross_entropy_with_logits celu "
    "channel_shuffle class_center_sample conv1d conv1d_transpose conv2d conv2d_transpose conv3d "
    "conv3d_transpose cosine_embedding_loss cosine_similarity cross_entropy ctc_loss dice_loss "
    "dropout dropout2d dropout3d elu elu_ embedding fold gather_tree gaussian_nll_loss gelu glu "
    "grid_sample gumbel_softmax hardshrink hardsigmoid hardswish hardtanh hardtanh_ "
    "hinge_embedding_loss hsigmoid_loss instance_norm interpolate kl_div l1_loss label_smooth "
    "layer_norm leaky_relu leaky_relu_ linear local_response_norm log_loss log_sigmoid "
    "log_softmax margin_cross_entropy margin_ranking_loss max_pool1d max_pool2d max_pool3d "
    "max_unpool1d max_unpool2d max_unpool3d maxout mish mse_loss multi_label_soft_margin_loss "
    "multi_margin_loss nll_loss normalize npair_loss one_hot pad pairwise_distance pixel_shuffle "
    "pixel_unshuffle poisson_nll_loss prelu relu relu6 relu_ rnnt_loss rrelu "
    "scaled_dot_product_attention selu sequence_mask sigmoid sigmoid_focal_loss silu "
    "smooth_l1_loss soft_margin_loss softmax softmax_ softmax_with_cross_entropy softplus "
    "softshrink softsign sparse_attention square_error_cost swish tanh tanh_ tanhshrink "
    "temporal_shift thresholded_relu thresholded_relu_ triplet_margin_loss "
    "triplet_margin_with_distance_loss unfold upsample zeropad2d").split())


def missing_name(module, name, supported, paddle_names, what, advice=""):
    """The AttributeError for `module.name` when it is Paddle's but not implemented yet, or
    looks like a supported name (each naming the closest of `supported`); else None."""
    from ..utils.hints import close_names
    close = close_names(name, supported)
    if name in paddle_names:
        return AttributeError(f"{module}.{name} is Paddle 2.6's but not implemented in numbaflow "
                              f"yet" + (f"; the closest supported {what}: {', '.join(close)}"
                                        if close else "") + advice)
    if close:
        return AttributeError(f"module {module!r} has no attribute {name!r}; did you mean "
                              f"{', '.join(close)}?")
    return None
