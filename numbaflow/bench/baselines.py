"""Hand-written baselines: what a careful user would write without a framework.

Each model step starts from the same parameters as the numbaflow program it is
compared with, updates them in place, and returns the loss, so the bench can
check that both compute the same thing before timing them.
"""
import numpy as np
from numba import njit, prange


class NumpySeedStep:
    """The seed model (x [B,1] -> fc 10 -> mean -> SGD) in about ten numpy calls."""

    def __init__(self, w, b, x, lr):
        self.w, self.b, self.x = w.copy(), b.copy(), x
        self.lr = np.float32(lr)

    def __call__(self):
        h = self.x @ self.w
        h += self.b
        loss = h.mean()
        g = np.full_like(h, 1.0 / h.size)  # d mean / d h
        self.w -= self.lr * (self.x.T @ g)
        self.b -= self.lr * g.sum(axis=0)
        return loss


class NumpyMLPStep:
    """Dense layers with relu between them, softmax cross-entropy (int labels), SGD.

    Like every peer in PERF_ANCHORS W4, it skips the input gradient of the first layer.
    """

    def __init__(self, params, x, y, lr):
        self.params = [p.copy() for p in params]  # [w0, b0, w1, b1, ...]
        self.x, self.y = x, y.reshape(-1)
        self.rows = np.arange(len(x))
        self.lr = np.float32(lr)

    def __call__(self):
        p, rows, y = self.params, self.rows, self.y
        inputs, pre = [self.x], []
        for i in range(0, len(p), 2):
            z = inputs[-1] @ p[i]
            z += p[i + 1]
            pre.append(z)
            if i + 2 < len(p):
                inputs.append(np.maximum(z, 0))
        prob = pre[-1] - pre[-1].max(axis=1, keepdims=True)
        np.exp(prob, out=prob)
        prob /= prob.sum(axis=1, keepdims=True)
        loss = -np.log(prob[rows, y]).mean()
        grad = prob  # d loss / d logits = (softmax - onehot) / batch
        grad[rows, y] -= 1
        grad /= len(y)
        for layer in range(len(pre) - 1, -1, -1):
            gw = inputs[layer].T @ grad
            gb = grad.sum(axis=0)
            if layer:  # propagate before the weight is updated
                w = p[2 * layer]
                grad = grad @ w.T
                grad *= pre[layer - 1] > 0
            p[2 * layer] -= self.lr * gw
            p[2 * layer + 1] -= self.lr * gb
        return loss


@njit(parallel=True, fastmath=True, nogil=True, cache=True)
def bias_relu_loop(x, b, out):
    """out = max(x + b, 0): the hand-fused loop of PERF_ANCHORS W2 (preallocated output)."""
    n, m = x.shape
    for i in prange(n):
        for j in range(m):
            v = x[i, j] + b[j]
            out[i, j] = v if v > 0 else 0
