"""paddle.vision.models in static mode: calling a model appends its ops to the current
program. `pretrained=True` is refused (nothing is downloaded): load a `.pdparams` of the
same architecture with `set_state_dict(paddle.load(path))`.

>>> model = paddle.vision.models.resnet18(num_classes=10)
>>> model(static.data('img', [None, 3, 32, 32])).shape
(-1, 10)
"""
from .lenet import LeNet
from .mobilenetv2 import MobileNetV2, mobilenet_v2
from .resnet import BasicBlock, BottleneckBlock, ResNet, resnet18, resnet34, resnet50
from .vgg import VGG, vgg11, vgg16

__all__ = ["LeNet", "ResNet", "BasicBlock", "BottleneckBlock", "resnet18", "resnet34",
           "resnet50", "MobileNetV2", "mobilenet_v2", "VGG", "vgg11", "vgg16"]
