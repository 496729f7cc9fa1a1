"""numbaflow.metric: accuracy."""
from .layer_helper import LayerHelper


def accuracy(input, label, k=1, correct=None, total=None, name=None):
    """Fraction of rows whose label is among the top-k scores of `input` (a 0-D float32).

    >>> acc = paddle.metric.accuracy(paddle.nn.functional.softmax(logits), label)
    """
    from .graph.program import Variable
    for arg, v in (("input", input), ("label", label)):
        if not isinstance(v, Variable):
            raise TypeError(f"accuracy: {arg} must be a Variable, got {type(v).__name__}")
    if label.dtype.kind not in "iu":
        raise TypeError(f"accuracy: label {label.name} must be int64, got {label.dtype}")
    helper = LayerHelper("accuracy", name)
    acc = helper.create_tmp("float32", stop_gradient=True)
    correct = correct or helper.create_tmp("int64", stop_gradient=True)
    total = total or helper.create_tmp("int64", stop_gradient=True)
    helper.append_op("accuracy", {"Out": input, "Label": label},
                     {"Accuracy": acc, "Correct": correct, "Total": total}, {"k": int(k)})
    return acc
