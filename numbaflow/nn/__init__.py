"""numbaflow.nn: Paddle 2.x's layers in static mode (`nn.Layer`, `nn.Linear`, `nn.Conv2D`,
... in numbaflow/nn/layer/: calling one appends ops to the current program), functional
ops (`nn.functional`), initializers (`nn.initializer`) and gradient clipping.

>>> clip = paddle.nn.ClipGradByGlobalNorm(clip_norm=1.0)
>>> init = paddle.nn.initializer.Normal(std=0.01)
>>> paddle.nn.Linear(4, 2)(static.data('x', [None, 4])).shape
(-1, 2)
"""
from . import functional, initializer, layer  # noqa: F401
from .clip import ClipGradByGlobalNorm, ClipGradByNorm  # noqa: F401
from .layer import *  # noqa: F401,F403
from .layer import __all__ as _layers

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "functional", "initializer"] + _layers

# paddle.nn.__all__ of Paddle 2.6.2 (recorded from it), for the message of a name
# numbaflow lacks
PADDLE_NN = (
    "BatchNorm CELU GroupNorm LayerNorm SpectralNorm BatchNorm1D BatchNorm2D BatchNorm3D "
    "InstanceNorm1D InstanceNorm2D InstanceNorm3D SyncBatchNorm LocalResponseNorm Embedding "
    "Linear Upsample UpsamplingNearest2D UpsamplingBilinear2D Pad1D Pad2D Pad3D "
    "CosineSimilarity Dropout Dropout2D Dropout3D Bilinear AlphaDropout Unfold Fold "
    "RNNCellBase SimpleRNNCell LSTMCell GRUCell RNN BiRNN SimpleRNN LSTM GRU dynamic_decode "
    "MultiHeadAttention Maxout Softsign Transformer MSELoss LogSigmoid BeamSearchDecoder "
    "ClipGradByNorm ReLU PairwiseDistance BCEWithLogitsLoss SmoothL1Loss MaxPool3D "
    "AdaptiveMaxPool2D Hardshrink Softplus KLDivLoss AvgPool2D L1Loss LeakyReLU AvgPool1D "
    "AdaptiveAvgPool3D AdaptiveMaxPool3D NLLLoss PoissonNLLLoss Conv1D Sequential Hardswish "
    "Conv1DTranspose AdaptiveMaxPool1D TransformerEncoder Softmax Softmax2D ParameterList "
    "Conv2D Softshrink Hardtanh TransformerDecoderLayer CrossEntropyLoss GELU GLU SELU Silu "
    "Conv2DTranspose CTCLoss RNNTLoss ThresholdedReLU AdaptiveAvgPool2D MaxPool1D Layer "
    "TransformerDecoder Conv3D Tanh Conv3DTranspose Flatten AdaptiveAvgPool1D Tanhshrink "
    "HSigmoidLoss PReLU TransformerEncoderLayer AvgPool3D MaxPool2D MarginRankingLoss "
    "LayerList ClipGradByValue BCELoss Hardsigmoid ClipGradByGlobalNorm LogSoftmax Sigmoid "
    "Swish Mish PixelShuffle PixelUnshuffle ChannelShuffle ELU ReLU6 LayerDict ZeroPad2D "
    "MaxUnPool1D MaxUnPool2D MaxUnPool3D MultiLabelSoftMarginLoss HingeEmbeddingLoss "
    "Identity CosineEmbeddingLoss RReLU MultiMarginLoss TripletMarginWithDistanceLoss "
    "TripletMarginLoss SoftMarginLoss GaussianNLLLoss Unflatten").split()


def __getattr__(name):
    # a Paddle 2.6 layer numbaflow lacks, or a misspelling: name the closest supported one
    from ..utils.hints import close_names, dygraph_attribute
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    close = close_names(name, [n for n in __all__ if n[0].isupper()])
    if name in PADDLE_NN:
        raise AttributeError(
            f"numbaflow.nn.{name} is Paddle 2.6's but not implemented in numbaflow yet"
            + (f"; the closest supported layer: {', '.join(close)}" if close else "")
            + "; or write it as a paddle.nn.Layer subclass whose forward calls "
              "paddle.nn.functional / paddle ops")
    if close:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; did you mean "
                             f"{', '.join(close)}?")
    raise dygraph_attribute(__name__, name)
