"""numbaflow.vision: Paddle 2.x's `paddle.vision.models` (LeNet, ResNet, MobileNetV2, VGG)
built in static mode with Paddle's structure and parameter names, so a Paddle `.pdparams`
of the same architecture loads with `model.set_state_dict(paddle.load(path))`; and
`paddle.vision.transforms`' basics for numpy images (Resize, crops, flip, ToTensor,
Normalize, Compose).

>>> model = paddle.vision.models.LeNet()
>>> model(static.data('img', [None, 1, 28, 28])).shape
(-1, 10)
"""
from . import models, transforms  # noqa: F401

__all__ = ["models", "transforms"]
