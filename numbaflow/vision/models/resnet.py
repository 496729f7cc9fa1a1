"""ResNet as Paddle 2.6's paddle.vision.models.resnet (same sublayers, creation order
and therefore parameter names: conv2d_N.w_0, batch_norm2d_N.w_0 ...)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import nn
from ... import tensor as M
from .lenet import refuse_pretrained

if TYPE_CHECKING:
    from ...graph.program import Variable

__all__ = ["BasicBlock", "BottleneckBlock", "ResNet", "resnet18", "resnet34", "resnet50"]

_DEPTHS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
           152: [3, 8, 36, 3]}


class BasicBlock(nn.Layer):
    """Two 3x3 convolutions with batch norm and a residual connection (ResNet-18/34).

    Args:
        inplanes (int): input channels.
        planes (int): output channels.
        stride (int): the first convolution's stride.
        downsample (Layer, optional): maps the input to the output's shape.
        groups (int): 1 only.
        base_width (int): 64 only.
        dilation (int): 1 only.
        norm_layer (type, optional): default nn.BatchNorm2D.

    Example:
        >>> block = paddle.vision.models.BasicBlock(8, 8)
        >>> block(static.data('x', [None, 8, 4, 4])).shape
        (-1, 8, 4, 4)
    """

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Any = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Any = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        if dilation > 1 or groups != 1 or base_width != 64:
            raise NotImplementedError("BasicBlock: dilation > 1, groups != 1 and "
                                      "base_width != 64 are not supported (as in Paddle)")
        self.conv1 = nn.Conv2D(inplanes, planes, 3, padding=1, stride=stride, bias_attr=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2D(planes, planes, 3, padding=1, bias_attr=False)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Variable) -> Variable:
        """relu(bn2(conv2(relu(bn1(conv1(x))))) + identity).

        Args:
            x (Variable): [N, inplanes, H, W].

        Returns:
            Variable: [N, planes, H / stride, W / stride].
        """
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class BottleneckBlock(nn.Layer):
    """1x1, 3x3, 1x1 convolutions with batch norm and a residual connection (ResNet-50+).

    Args:
        inplanes (int): input channels.
        planes (int): the bottleneck width (output: planes * 4).
        stride (int): the 3x3 convolution's stride.
        downsample (Layer, optional): maps the input to the output's shape.
        groups (int): the 3x3 convolution's groups.
        base_width (int): the width per group.
        dilation (int): the 3x3 convolution's dilation.
        norm_layer (type, optional): default nn.BatchNorm2D.

    Example:
        >>> block = paddle.vision.models.BottleneckBlock(16, 4)
        >>> block(static.data('x', [None, 16, 4, 4])).shape
        (-1, 16, 4, 4)
    """

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Any = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Any = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2D(inplanes, width, 1, bias_attr=False)
        self.bn1 = norm_layer(width)
        self.conv2 = nn.Conv2D(width, width, 3, padding=dilation, stride=stride, groups=groups,
                               dilation=dilation, bias_attr=False)
        self.bn2 = norm_layer(width)
        self.conv3 = nn.Conv2D(width, planes * self.expansion, 1, bias_attr=False)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU()
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Variable) -> Variable:
        """The bottleneck plus identity, then relu.

        Args:
            x (Variable): [N, inplanes, H, W].

        Returns:
            Variable: [N, planes * 4, H / stride, W / stride].
        """
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Layer):
    """ResNet: conv1 (7x7, stride 2), bn1, relu, maxpool, layer1..layer4 of `block`,
    avgpool (adaptive to 1x1) and fc, as Paddle's.

    Args:
        block (type): BasicBlock or BottleneckBlock.
        depth (int): 18, 34, 50, 101 or 152.
        width (int): the base width per group (BottleneckBlock).
        num_classes (int): the outputs; <= 0: no fc.
        with_pool (bool): the final adaptive average pooling.
        groups (int): the 3x3 convolutions' groups (BottleneckBlock).

    Example:
        >>> model = paddle.vision.models.ResNet(paddle.vision.models.BasicBlock, 18,
        ...                                     num_classes=10)
        >>> model(static.data('img', [None, 3, 32, 32])).shape
        (-1, 10)
    """

    def __init__(self, block: Any, depth: int = 50, width: int = 64, num_classes: int = 1000,
                 with_pool: bool = True, groups: int = 1) -> None:
        super().__init__()
        if depth not in _DEPTHS:
            raise ValueError(f"ResNet: depth must be one of {sorted(_DEPTHS)}, got {depth!r}")
        layers = _DEPTHS[depth]
        self.groups, self.base_width = groups, width
        self.num_classes, self.with_pool = num_classes, with_pool
        self._norm_layer = nn.BatchNorm2D
        self.inplanes, self.dilation = 64, 1
        self.conv1 = nn.Conv2D(3, self.inplanes, kernel_size=7, stride=2, padding=3,
                               bias_attr=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((1, 1))
        if num_classes > 0:
            self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2D(self.inplanes, planes * block.expansion, 1, stride=stride,
                          bias_attr=False),
                self._norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        self.dilation, self._norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups,
                                base_width=self.base_width, norm_layer=self._norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x: Variable) -> Variable:
        """The logits (or the features without fc / pooling).

        Args:
            x (Variable): [N, 3, H, W].

        Returns:
            Variable: [N, num_classes].
        """
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.fc(M.flatten(x, 1))
        return x


def resnet18(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-18 (BasicBlock, [2, 2, 2, 2]).

    Args:
        pretrained (bool): refused (nothing is downloaded).
        **kwargs: ResNet's (num_classes, with_pool).

    Returns:
        ResNet: the model.

    Example:
        >>> paddle.vision.models.resnet18(num_classes=10).fc.weight.shape
        (512, 10)
    """
    refuse_pretrained("resnet18", pretrained)
    return ResNet(BasicBlock, 18, **kwargs)


def resnet34(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-34 (BasicBlock, [3, 4, 6, 3]).

    Args:
        pretrained (bool): refused (nothing is downloaded).
        **kwargs: ResNet's (num_classes, with_pool).

    Returns:
        ResNet: the model.

    Example:
        >>> len(paddle.vision.models.resnet34().layer3)
        6
    """
    refuse_pretrained("resnet34", pretrained)
    return ResNet(BasicBlock, 34, **kwargs)


def resnet50(pretrained: bool = False, **kwargs: Any) -> ResNet:
    """ResNet-50 (BottleneckBlock, [3, 4, 6, 3]).

    Args:
        pretrained (bool): refused (nothing is downloaded).
        **kwargs: ResNet's (num_classes, with_pool).

    Returns:
        ResNet: the model.

    Example:
        >>> paddle.vision.models.resnet50().fc.weight.shape
        (2048, 1000)
    """
    refuse_pretrained("resnet50", pretrained)
    return ResNet(BottleneckBlock, 50, **kwargs)
