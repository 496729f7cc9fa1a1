"""fluid.nets: Paddle 1.x's composite layers (conv + pool blocks), built from fluid.layers.

>>> conv_pool = fluid.nets.simple_img_conv_pool(input=img, num_filters=20, filter_size=5,
...                                             pool_size=2, pool_stride=2, act="relu")
"""
from . import layers


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride,
                         pool_padding=0, pool_type="max", global_pooling=False, conv_stride=1,
                         conv_padding=0, conv_dilation=1, conv_groups=1, param_attr=None,
                         bias_attr=None, act=None, use_cudnn=True):
    """conv2d (with `act`) followed by pool2d, as Paddle 1.8's nets.simple_img_conv_pool."""
    conv_out = layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size,
                             stride=conv_stride, padding=conv_padding, dilation=conv_dilation,
                             groups=conv_groups, param_attr=param_attr, bias_attr=bias_attr,
                             act=act, use_cudnn=use_cudnn)
    return layers.pool2d(input=conv_out, pool_size=pool_size, pool_type=pool_type,
                         pool_stride=pool_stride, pool_padding=pool_padding,
                         global_pooling=global_pooling, use_cudnn=use_cudnn)


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3,
                   conv_act=None, param_attr=None, conv_with_batchnorm=False,
                   conv_batchnorm_drop_rate=0.0, pool_stride=1, pool_type="max",
                   use_cudnn=True):
    """A VGG block: len(conv_num_filter) convs (each optionally followed by batch_norm with
    `conv_act` and dropout), then one pool2d. Per-conv arguments take a scalar or a list of
    len(conv_num_filter)."""
    if not isinstance(conv_num_filter, (list, tuple)):
        raise TypeError(f"img_conv_group: conv_num_filter must be a list or tuple of filter "
                        f"counts, got {type(conv_num_filter).__name__}")
    n = len(conv_num_filter)

    def per_conv(obj, what):
        if not hasattr(obj, "__len__"):
            return [obj] * n
        if len(obj) != n:
            raise ValueError(f"img_conv_group: {what} has {len(obj)} entries but "
                             f"conv_num_filter has {n}")
        return list(obj)

    paddings = per_conv(conv_padding, "conv_padding")
    sizes = per_conv(conv_filter_size, "conv_filter_size")
    attrs = per_conv(param_attr, "param_attr")
    with_bn = per_conv(conv_with_batchnorm, "conv_with_batchnorm")
    drops = per_conv(conv_batchnorm_drop_rate, "conv_batchnorm_drop_rate")
    tmp = input
    for i in range(n):
        tmp = layers.conv2d(input=tmp, num_filters=conv_num_filter[i], filter_size=sizes[i],
                            padding=paddings[i], param_attr=attrs[i],
                            act=None if with_bn[i] else conv_act, use_cudnn=use_cudnn)
        if with_bn[i]:
            tmp = layers.batch_norm(input=tmp, act=conv_act)
            if abs(drops[i]) > 1e-5:
                tmp = layers.dropout(x=tmp, dropout_prob=drops[i])
    return layers.pool2d(input=tmp, pool_size=pool_size, pool_type=pool_type,
                         pool_stride=pool_stride, use_cudnn=use_cudnn)
