"""PaddlePaddle book chapter 04 (word2vec), fluid 1.x spelling, on a synthetic corpus
(the next word is a fixed function of the four before it): four fluid.embedding lookups
sharing one table by ParamAttr name 'shared_w', concatenated -> fc(sigmoid) ->
fc(softmax), cross_entropy, Adagrad with L2 decay, fed by paddle.batch +
fluid.DataFeeder; the loss falls and the saved inference model reloads."""
import numpy as np
import pytest

import numbaflow.fluid as fluid
from book_util import check_inference_roundtrip, falls, train

pytestmark = pytest.mark.usefixtures("fresh_graph_state")

DICT_SIZE, EMBED_SIZE, HIDDEN_SIZE = 30, 16, 64


def ngram_reader(n=256, seed=0):
    def reader():
        rng = np.random.default_rng(seed)
        for _ in range(n):
            w = rng.integers(0, DICT_SIZE, 4)
            yield (*[np.array([v], "int64") for v in w],
                   np.array([(w[0] + 2 * w[3]) % DICT_SIZE], "int64"))
    return reader


def inference_program(words, is_sparse):
    embeds = [fluid.embedding(input=w, size=[DICT_SIZE, EMBED_SIZE], dtype="float32",
                              is_sparse=is_sparse, param_attr="shared_w") for w in words]
    concat_embed = fluid.layers.concat(input=embeds, axis=1)
    hidden1 = fluid.layers.fc(input=concat_embed, size=HIDDEN_SIZE, act="sigmoid")
    return fluid.layers.fc(input=hidden1, size=DICT_SIZE, act="softmax")


def test_word2vec(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        names = ["firstw", "secondw", "thirdw", "fourthw"]
        words = [fluid.data(name=n, shape=[None, 1], dtype="int64") for n in names]
        next_word = fluid.data(name="nextw", shape=[None, 1], dtype="int64")
        predict_word = inference_program(words, is_sparse=False)
        avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict_word,
                                                                label=next_word))
        test_program = main.clone(for_test=True)
        fluid.optimizer.AdagradOptimizer(
            learning_rate=0.2,
            regularization=fluid.regularizer.L2DecayRegularizer(8e-4)).minimize(avg_cost)
    # the four lookups share one table, so its gradient is the sum of four contributions
    assert [p.name for p in main.all_parameters() if "w" in p.name and "fc" not in p.name] \
        == ["shared_w"]
    lookups = [op for op in main.global_block().ops if op.type == "lookup_table_v2"]
    assert len(lookups) == 4 and {op.input("W")[0] for op in lookups} == {"shared_w"}
    assert predict_word.shape == (-1, DICT_SIZE)
    scope = fluid.Scope()
    losses, exe = train(main, startup, words + [next_word], ngram_reader(), 32, avg_cost, 40,
                        scope)
    ok, ends = falls(losses, factor=0.9)
    assert ok, ends
    data = list(ngram_reader(8, seed=3)())
    feed = {n: np.stack([d[i] for d in data]) for i, n in enumerate(names)}
    probs = check_inference_roundtrip(tmp_path, exe, scope, test_program, feed, predict_word)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
