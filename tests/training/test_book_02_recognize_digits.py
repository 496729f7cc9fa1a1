"""PaddlePaddle book chapter 02 (recognize_digits), fluid 1.x spelling, on synthetic 28x28
digits (a per-class template plus noise): the MLP and the conv-pool network
(fluid.nets.simple_img_conv_pool + batch_norm), softmax + cross_entropy + accuracy,
Adam, fed by paddle.batch + fluid.DataFeeder; the loss falls and the saved inference
model reloads. Layer widths are smaller than the book's to keep the test fast."""
import numpy as np
import pytest

import numbaflow.fluid as fluid
from book_util import check_inference_roundtrip, falls, train

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

TEMPLATES = np.random.default_rng(2).uniform(0, 1, (10, 1, 28, 28)).astype("float32")


def mnist_reader(n=160, seed=0):
    def reader():
        rng = np.random.default_rng(seed)
        for _ in range(n):
            label = int(rng.integers(0, 10))
            img = TEMPLATES[label] + rng.normal(0, 0.3, (1, 28, 28)).astype("float32")
            yield img, label
    return reader


def loss_net(hidden, label):
    prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
    loss = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_loss = fluid.layers.mean(loss)
    acc = fluid.layers.accuracy(input=prediction, label=label)
    return prediction, avg_loss, acc


def multilayer_perceptron(img, label):
    hidden = fluid.layers.fc(input=img, size=64, act="tanh")
    hidden = fluid.layers.fc(input=hidden, size=64, act="tanh")
    return loss_net(hidden, label)


def convolutional_neural_network(img, label):
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=5, num_filters=6, pool_size=2, pool_stride=2, act="relu")
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    conv_pool_2 = fluid.nets.simple_img_conv_pool(
        input=conv_pool_1, filter_size=5, num_filters=8, pool_size=2, pool_stride=2, act="relu")
    return loss_net(conv_pool_2, label)


@pytest.mark.parametrize("net", [multilayer_perceptron,
                                 pytest.param(convolutional_neural_network,
                                              marks=pytest.mark.slow)])
def test_recognize_digits(net, tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        prediction, avg_loss, acc = net(img, label)
        test_program = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(avg_loss)
    scope = fluid.Scope()
    losses, exe = train(main, startup, [img, label], mnist_reader(), 16, avg_loss, 20, scope)
    ok, ends = falls(losses, factor=0.7)
    assert ok, ends
    data = list(mnist_reader(32, seed=9)())
    imgs = np.stack([d[0] for d in data])
    labels = np.array([[d[1]] for d in data], "int64")
    with fluid.scope_guard(scope):
        (test_acc,) = exe.run(test_program, feed={"img": imgs, "label": labels},
                              fetch_list=[acc])
    assert test_acc.shape == (1,) and test_acc[0] > 0.3       # chance is 0.1
    probs = check_inference_roundtrip(tmp_path, exe, scope, test_program, {"img": imgs},
                                      prediction)
    np.testing.assert_allclose(np.mean(probs.argmax(1) == labels[:, 0]), test_acc[0],
                               atol=1e-6)
