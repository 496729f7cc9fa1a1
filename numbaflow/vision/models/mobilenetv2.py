"""MobileNetV2 as Paddle 2.6's paddle.vision.models.mobilenetv2 (ConvNormActivation
blocks, InvertedResidual with depthwise convolutions, same parameter names)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import nn
from ... import tensor as M
from .lenet import refuse_pretrained

if TYPE_CHECKING:
    from ...graph.program import Variable

__all__ = ["MobileNetV2", "mobilenet_v2"]


def _make_divisible(v, divisor=8, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class _ConvNormActivation(nn.Sequential):
    """paddle.vision.ops.ConvNormActivation: Conv2D (no bias), norm, activation."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1,
                 norm_layer=nn.BatchNorm2D, activation_layer=nn.ReLU6):
        padding = (kernel_size - 1) // 2
        super().__init__(nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding,
                                   groups=groups, bias_attr=False),
                         norm_layer(out_channels), activation_layer())


class _InvertedResidual(nn.Layer):
    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=nn.BatchNorm2D):
        super().__init__()
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(_ConvNormActivation(inp, hidden_dim, kernel_size=1,
                                              norm_layer=norm_layer))
        layers += [_ConvNormActivation(hidden_dim, hidden_dim, stride=stride,
                                       groups=hidden_dim, norm_layer=norm_layer),
                   nn.Conv2D(hidden_dim, oup, 1, 1, 0, bias_attr=False), norm_layer(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


_SETTING = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
            [6, 160, 3, 2], [6, 320, 1, 1]]


class MobileNetV2(nn.Layer):
    """MobileNetV2: `features` (inverted residual blocks), `pool2d_avg`, `classifier`
    (Dropout(0.2), Linear), as Paddle's.

    Args:
        scale (float): the width multiplier.
        num_classes (int): the outputs; <= 0: no classifier.
        with_pool (bool): the final adaptive average pooling.

    Example:
        >>> model = paddle.vision.models.MobileNetV2(scale=0.25, num_classes=10)
        >>> model(static.data('img', [None, 3, 32, 32])).shape
        (-1, 10)
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000,
                 with_pool: bool = True) -> None:
        super().__init__()
        self.num_classes, self.with_pool = num_classes, with_pool
        input_channel = _make_divisible(32 * scale)
        self.last_channel = _make_divisible(1280 * max(1.0, scale))
        features = [_ConvNormActivation(3, input_channel, stride=2)]
        for t, c, n, s in _SETTING:
            output_channel = _make_divisible(c * scale)
            for i in range(n):
                features.append(_InvertedResidual(input_channel, output_channel,
                                                  s if i == 0 else 1, expand_ratio=t))
                input_channel = output_channel
        features.append(_ConvNormActivation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Dropout(0.2),
                                            nn.Linear(self.last_channel, num_classes))

    def forward(self, x: Variable) -> Variable:
        """The logits (or the features).

        Args:
            x (Variable): [N, 3, H, W].

        Returns:
            Variable: [N, num_classes].
        """
        x = self.features(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.classifier(M.flatten(x, 1))
        return x


def mobilenet_v2(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV2:
    """MobileNetV2 with width multiplier `scale`.

    Args:
        pretrained (bool): refused (nothing is downloaded).
        scale (float): the width multiplier.
        **kwargs: MobileNetV2's (num_classes, with_pool).

    Returns:
        MobileNetV2: the model.

    Example:
        >>> paddle.vision.models.mobilenet_v2(num_classes=10).classifier[1].weight.shape
        (1280, 10)
    """
    refuse_pretrained("mobilenet_v2", pretrained)
    return MobileNetV2(scale=scale, **kwargs)
