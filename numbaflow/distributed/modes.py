"""How data-parallel gradients are combined (BuildStrategy.reduce_strategy and
gradient_scale_strategy): defined here, where the runner and the feed split use them."""
import enum


class ReduceStrategy(enum.Enum):
    AllReduce = 0
    Reduce = 1


class GradientScaleStrategy(enum.Enum):
    CoeffNumDevice = 0
    One = 1
    Customized = 2
