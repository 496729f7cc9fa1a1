"""VGG as Paddle 2.6's paddle.vision.models.vgg (features, avgpool to 7x7, classifier)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import nn
from ... import tensor as M
from .lenet import refuse_pretrained

if TYPE_CHECKING:
    from ...graph.program import Variable

__all__ = ["VGG", "vgg11", "vgg16"]

_CFGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512,
          "M"],
}


def _make_layers(cfg, batch_norm):
    layers, in_channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2D(kernel_size=2, stride=2))
        else:
            layers.append(nn.Conv2D(in_channels, v, kernel_size=3, padding=1))
            layers += [nn.BatchNorm2D(v), nn.ReLU()] if batch_norm else [nn.ReLU()]
            in_channels = v
    return nn.Sequential(*layers)


class VGG(nn.Layer):
    """VGG: `features` (a Sequential of Conv2D / BatchNorm2D / ReLU / MaxPool2D),
    `avgpool` (adaptive to 7x7) and `classifier` (three Linear with ReLU and Dropout).

    Args:
        features (Layer): the convolutional part.
        num_classes (int): the outputs; <= 0: no classifier.
        with_pool (bool): the adaptive average pooling to 7x7.

    Example:
        >>> model = paddle.vision.models.vgg11(num_classes=0, with_pool=False)
        >>> model(static.data('img', [None, 3, 32, 32])).shape
        (-1, 512, 1, 1)
    """

    def __init__(self, features: nn.Layer, num_classes: int = 1000,
                 with_pool: bool = True) -> None:
        super().__init__()
        self.features, self.num_classes, self.with_pool = features, num_classes, with_pool
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((7, 7))
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(),
                nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, num_classes))

    def forward(self, x: Variable) -> Variable:
        """The logits (or the features).

        Args:
            x (Variable): [N, 3, 224, 224] (or any size without pooling / classifier).

        Returns:
            Variable: [N, num_classes].
        """
        x = self.features(x)
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.classifier(M.flatten(x, 1))
        return x


def vgg11(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-11 (configuration A), with BatchNorm2D after each convolution if batch_norm.

    Args:
        pretrained (bool): refused (nothing is downloaded).
        batch_norm (bool): add batch norm.
        **kwargs: VGG's (num_classes, with_pool).

    Returns:
        VGG: the model.

    Example:
        >>> len(paddle.vision.models.vgg11(num_classes=0).features)
        21
    """
    refuse_pretrained("vgg11", pretrained)
    return VGG(_make_layers(_CFGS["A"], batch_norm), **kwargs)


def vgg16(pretrained: bool = False, batch_norm: bool = False, **kwargs: Any) -> VGG:
    """VGG-16 (configuration D), with BatchNorm2D after each convolution if batch_norm.

    Args:
        pretrained (bool): refused (nothing is downloaded).
        batch_norm (bool): add batch norm.
        **kwargs: VGG's (num_classes, with_pool).

    Returns:
        VGG: the model.

    Example:
        >>> len(paddle.vision.models.vgg16(batch_norm=True, num_classes=0).features)
        44
    """
    refuse_pretrained("vgg16", pretrained)
    return VGG(_make_layers(_CFGS["D"], batch_norm), **kwargs)
