"""PaddlePaddle book chapter 03 (image_classification), fluid 1.x spelling, on synthetic
32x32x3 images of cifar10's shapes (a per-class template plus noise): the book's
resnet_cifar10 (conv_bn_layer / basicblock / layer_warp, batch norm, an elementwise_add
shortcut) and vgg_bn_drop (fluid.nets.img_conv_group with batch norm and dropout), Adam,
fed by paddle.batch + fluid.DataFeeder; the loss falls and the saved inference model
reloads. Depth and widths are smaller than the book's to keep the test fast."""
import numpy as np
import pytest

import numbaflow.fluid as fluid
from book_util import check_inference_roundtrip, falls, train

pytestmark = [pytest.mark.usefixtures("fresh_graph_state"), pytest.mark.slow]

TEMPLATES = np.random.default_rng(3).uniform(-1, 1, (10, 3, 32, 32)).astype("float32")


def cifar_reader(n=96, seed=0):
    def reader():
        rng = np.random.default_rng(seed)
        for _ in range(n):
            label = int(rng.integers(0, 10))
            yield TEMPLATES[label] + rng.normal(0, 0.5, (3, 32, 32)).astype("float32"), label
    return reader


def conv_bn_layer(input, ch_out, filter_size, stride, padding, act="relu", bias_attr=False):
    tmp = fluid.layers.conv2d(input=input, filter_size=filter_size, num_filters=ch_out,
                              stride=stride, padding=padding, act=None, bias_attr=bias_attr)
    return fluid.layers.batch_norm(input=tmp, act=act)


def shortcut(input, ch_in, ch_out, stride):
    if ch_in != ch_out:
        return conv_bn_layer(input, ch_out, 1, stride, 0, None)
    return input


def basicblock(input, ch_in, ch_out, stride):
    tmp = conv_bn_layer(input, ch_out, 3, stride, 1)
    tmp = conv_bn_layer(tmp, ch_out, 3, 1, 1, act=None, bias_attr=True)
    short = shortcut(input, ch_in, ch_out, stride)
    return fluid.layers.elementwise_add(x=tmp, y=short, act="relu")


def layer_warp(block_func, input, ch_in, ch_out, count, stride):
    tmp = block_func(input, ch_in, ch_out, stride)
    for _ in range(1, count):
        tmp = block_func(tmp, ch_out, ch_out, 1)
    return tmp


def resnet_cifar10(ipt, depth=8, width=4):
    n = (depth - 2) // 6
    conv1 = conv_bn_layer(input=ipt, ch_out=width, filter_size=3, stride=1, padding=1)
    res1 = layer_warp(basicblock, conv1, width, width, n, 1)
    res2 = layer_warp(basicblock, res1, width, 2 * width, n, 2)
    res3 = layer_warp(basicblock, res2, 2 * width, 4 * width, n, 2)
    pool = fluid.layers.pool2d(input=res3, pool_size=8, pool_type="avg", pool_stride=1)
    return fluid.layers.fc(input=pool, size=10, act="softmax")


def vgg_bn_drop(input):
    def conv_block(ipt, num_filter, groups, dropouts):
        return fluid.nets.img_conv_group(
            input=ipt, pool_size=2, pool_stride=2, conv_num_filter=[num_filter] * groups,
            conv_filter_size=3, conv_act="relu", conv_with_batchnorm=True,
            conv_batchnorm_drop_rate=dropouts, pool_type="max")

    # the book's dropout rates (0.3-0.5) stall layers this narrow within 30 steps
    conv1 = conv_block(input, 4, 2, [0.1, 0])
    conv2 = conv_block(conv1, 8, 2, [0.1, 0])
    conv3 = conv_block(conv2, 8, 2, [0.1, 0])
    drop = fluid.layers.dropout(x=conv3, dropout_prob=0.2)
    fc1 = fluid.layers.fc(input=drop, size=32, act=None)
    bn = fluid.layers.batch_norm(input=fc1, act="relu")
    drop2 = fluid.layers.dropout(x=bn, dropout_prob=0.2)
    fc2 = fluid.layers.fc(input=drop2, size=32, act=None)
    return fluid.layers.fc(input=fc2, size=10, act="softmax")


@pytest.mark.parametrize("net", [resnet_cifar10, vgg_bn_drop])
def test_image_classification(net, tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        images = fluid.data(name="pixel", shape=[None, 3, 32, 32], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        predict = net(images)
        cost = fluid.layers.cross_entropy(input=predict, label=label)
        avg_cost = fluid.layers.mean(cost)
        test_program = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(avg_cost)
    assert any(op.type == "batch_norm" for op in main.global_block().ops)
    scope = fluid.Scope()
    losses, exe = train(main, startup, [images, label], cifar_reader(), 16, avg_cost, 30,
                        scope)
    ok, ends = falls(losses, factor=0.8)
    assert ok, ends
    data = list(cifar_reader(16, seed=7)())
    imgs = np.stack([d[0] for d in data])
    check_inference_roundtrip(tmp_path, exe, scope, test_program, {"pixel": imgs}, predict)
    # the test program runs batch norm on its running statistics and no dropout
    types = {op.type: op for op in test_program.global_block().ops}
    assert types["batch_norm"].attr("is_test")
    assert "dropout" not in types or types["dropout"].attr("is_test")
