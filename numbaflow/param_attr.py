"""ParamAttr: how a layer creates its parameter (name, initializer, lr scale, trainable)."""


class ParamAttr:
    """>>> w = paddle.ParamAttr(name='fc_w', initializer=paddle.nn.initializer.Constant(0.5))"""

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, do_model_average=False, need_clip=True):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ParamAttr.name must be a str, got {type(name).__name__}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.need_clip = need_clip

    @staticmethod
    def _to_attr(arg):
        if arg is None or arg is True:
            return ParamAttr()
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if hasattr(arg, "__call__") and hasattr(arg, "_init_op"):
            return ParamAttr(initializer=arg)
        raise TypeError(f"expected a ParamAttr, a name, an initializer or None, got "
                        f"{type(arg).__name__}")
