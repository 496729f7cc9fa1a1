"""LeNet as Paddle 2.6's paddle.vision.models.LeNet."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import nn
from ... import tensor as M

if TYPE_CHECKING:
    from ...graph.program import Variable

__all__ = ["LeNet", "refuse_pretrained"]


def refuse_pretrained(arch: str, pretrained: bool) -> None:
    """Raise for pretrained=True: numbaflow downloads nothing.

    Args:
        arch (str): the model's name, for the message.
        pretrained (bool): what the user asked.

    Example:
        >>> refuse_pretrained('resnet18', False)
    """
    if pretrained:
        raise ValueError(
            f"{arch}(pretrained=True): numbaflow downloads no weights. Build {arch}() and "
            f"load a Paddle checkpoint of the same architecture after running the startup "
            f"program: model.set_state_dict(paddle.load('{arch}.pdparams')) (e.g. saved in "
            f"Paddle by paddle.save(model.state_dict(), '{arch}.pdparams'))")


class LeNet(nn.Layer):
    """LeNet-5 for 1x28x28 images: `features` (two Conv2D + ReLU + MaxPool2D) and `fc`
    (three Linear), as Paddle's.

    Args:
        num_classes (int): the outputs; <= 0: no `fc`, the features are returned.

    Example:
        >>> model = paddle.vision.models.LeNet(num_classes=10)
        >>> model(static.data('img', [None, 1, 28, 28])).shape
        (-1, 10)
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1), nn.ReLU(), nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0), nn.ReLU(), nn.MaxPool2D(2, 2))
        if num_classes > 0:
            self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84),
                                    nn.Linear(84, num_classes))

    def forward(self, inputs: Variable) -> Variable:
        """The logits (or the features with num_classes <= 0).

        Args:
            inputs (Variable): [N, 1, 28, 28].

        Returns:
            Variable: [N, num_classes].
        """
        x = self.features(inputs)
        if self.num_classes > 0:
            x = self.fc(M.flatten(x, 1))
        return x
