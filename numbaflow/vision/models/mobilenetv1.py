"""MobileNetV1 as Paddle 2.6's paddle.vision.models.mobilenetv1 (conv1, then the
depthwise-separable blocks conv2_1 .. conv6 registered by name, pool2d_avg, fc)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import nn
from ... import tensor as M
from .lenet import refuse_pretrained
from .mobilenetv2 import ConvNormActivation

if TYPE_CHECKING:
    from ...graph.program import Variable

__all__ = ["MobileNetV1", "mobilenet_v1"]

# (name, in_channels, out_channels1, out_channels2, num_groups, stride), Paddle's table
_BLOCKS = ([("conv2_1", 32, 32, 64, 32, 1), ("conv2_2", 64, 64, 128, 64, 2),
            ("conv3_1", 128, 128, 128, 128, 1), ("conv3_2", 128, 128, 256, 128, 2),
            ("conv4_1", 256, 256, 256, 256, 1), ("conv4_2", 256, 256, 512, 256, 2)]
           + [(f"conv5_{i}", 512, 512, 512, 512, 1) for i in range(1, 6)]
           + [("conv5_6", 512, 512, 1024, 512, 2), ("conv6", 1024, 1024, 1024, 1024, 1)])


class _DepthwiseSeparable(nn.Layer):
    def __init__(self, in_channels, out_channels1, out_channels2, num_groups, stride, scale):
        super().__init__()
        self._depthwise_conv = ConvNormActivation(
            in_channels, int(out_channels1 * scale), 3, stride,
            groups=int(num_groups * scale), activation_layer=nn.ReLU)
        self._pointwise_conv = ConvNormActivation(
            int(out_channels1 * scale), int(out_channels2 * scale), 1, 1,
            activation_layer=nn.ReLU)

    def forward(self, x):
        return self._pointwise_conv(self._depthwise_conv(x))


class MobileNetV1(nn.Layer):
    """MobileNetV1: conv1, 13 depthwise-separable blocks, pool2d_avg, fc, as Paddle's.

    Args:
        scale (float): the width multiplier.
        num_classes (int): the outputs; <= 0: no fc.
        with_pool (bool): the final adaptive average pooling.

    Example:
        >>> model = paddle.vision.models.MobileNetV1(scale=0.25, num_classes=10)
        >>> model(static.data('img', [None, 3, 32, 32])).shape
        (-1, 10)
    """

    def __init__(self, scale: float = 1.0, num_classes: int = 1000,
                 with_pool: bool = True) -> None:
        super().__init__()
        self.scale, self.num_classes, self.with_pool = scale, num_classes, with_pool
        self.conv1 = ConvNormActivation(3, int(32 * scale), 3, 2, activation_layer=nn.ReLU)
        self.dwsl = [self.add_sublayer(name, _DepthwiseSeparable(int(cin * scale), c1, c2, g,
                                                                 s, scale))
                     for name, cin, c1, c2, g, s in _BLOCKS]
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x: Variable) -> Variable:
        """The logits (or the features).

        Args:
            x (Variable): [N, 3, H, W].

        Returns:
            Variable: [N, num_classes].
        """
        x = self.conv1(x)
        for block in self.dwsl:
            x = block(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.fc(M.flatten(x, 1))
        return x


def mobilenet_v1(pretrained: bool = False, scale: float = 1.0, **kwargs: Any) -> MobileNetV1:
    """MobileNetV1 with width multiplier `scale`.

    Args:
        pretrained (bool): refused (nothing is downloaded).
        scale (float): the width multiplier.
        **kwargs: MobileNetV1's (num_classes, with_pool).

    Returns:
        MobileNetV1: the model.

    Example:
        >>> paddle.vision.models.mobilenet_v1(num_classes=10).fc.weight.shape
        (1024, 10)
    """
    refuse_pretrained("mobilenet_v1", pretrained)
    return MobileNetV1(scale=scale, **kwargs)
