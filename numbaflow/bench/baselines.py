"""Hand-written baselines: what a careful user would write without a framework.

Each model step starts from the same parameters as the numbaflow program it is
compared with, updates them in place, and returns the loss, so the bench can
check that both compute the same thing before timing them.
"""
import types

import numpy as np
from numba import njit, prange

LOOP_FLAGS = {"fastmath": True, "nogil": True, "cache": True}


def prange_loop(fn):
    """`fn` compiled parallel (what the full bench times) with a `.serial` twin for --quick:
    a prange loop's parallel compile costs several times its serial one (3-6 s of CPU vs
    1-2 s each, measured one after another in one process), and --quick judges nothing. The twin is a copy under its own name, so
    numba's disk cache (whose key does not hold `parallel`) never hands one for the other."""
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial",
                              fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_serial"
    loop = njit(parallel=True, **LOOP_FLAGS)(fn)
    loop.serial = njit(**LOOP_FLAGS)(twin)
    return loop


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


def mlp_forward(p, x, rows, y):
    """Forward pass of the numpy MLP baselines: (layer inputs, pre-activations, softmax
    probabilities (a fresh array the caller may overwrite), mean cross-entropy)."""
    inputs, pre = [x], []
    for i in range(0, len(p), 2):
        z = inputs[-1] @ p[i]
        z += p[i + 1]
        pre.append(z)
        if i + 2 < len(p):
            inputs.append(np.maximum(z, 0))
    prob = pre[-1] - pre[-1].max(axis=1, keepdims=True)
    np.exp(prob, out=prob)
    prob /= prob.sum(axis=1, keepdims=True)
    return inputs, pre, prob, -np.log(prob[rows, y]).mean()


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
        inputs, pre, prob, loss = mlp_forward(p, self.x, rows, y)
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


@prange_loop
def bias_relu_loop(x, b, out):
    """out = max(x + b, 0): the hand-fused loop of PERF_ANCHORS W2 (preallocated output)."""
    n, m = x.shape
    for i in prange(n):
        for j in range(m):
            v = x[i, j] + b[j]
            out[i, j] = v if v > 0 else 0


@njit(parallel=True, **LOOP_FLAGS)
def depthwise3x3_relu_fwd(x, w, out):
    """out = relu(depthwise 3x3 conv of x, stride 1, padding 1): the zero-padded-plane loop
    of PERF_ANCHORS W5. x (N, C, H, W), w (C, 1, 3, 3)."""
    N, C, H, W = x.shape
    for p in prange(N * C):
        n, c = p // C, p % C
        pad = np.zeros((H + 2, W + 2), x.dtype)
        pad[1:H + 1, 1:W + 1] = x[n, c]
        k = w[c, 0]
        for h in range(H):
            for j in range(W):
                v = (k[0, 0] * pad[h, j] + k[0, 1] * pad[h, j + 1] + k[0, 2] * pad[h, j + 2] +
                     k[1, 0] * pad[h + 1, j] + k[1, 1] * pad[h + 1, j + 1] +
                     k[1, 2] * pad[h + 1, j + 2] + k[2, 0] * pad[h + 2, j] +
                     k[2, 1] * pad[h + 2, j + 1] + k[2, 2] * pad[h + 2, j + 2])
                out[n, c, h, j] = v if v > 0 else 0


@njit(parallel=True, **LOOP_FLAGS)
def depthwise3x3_relu_bwd(x, w, out, g, dx, dw):
    """Backward of depthwise3x3_relu_fwd for the cotangent g: dy = g * (out > 0), then
    dx (a 3x3 correlation of the zero-padded dy plane with the flipped kernel) and dw
    (per-channel sums; channels in parallel, so each dw[c] has one writer)."""
    N, C, H, W = x.shape
    for c in prange(C):
        k = w[c, 0]
        xp = np.zeros((H + 2, W + 2), x.dtype)
        dp = np.zeros((H + 2, W + 2), x.dtype)
        s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = x[0, 0, 0, 0] * 0
        for n in range(N):
            xp[1:H + 1, 1:W + 1] = x[n, c]
            for h in range(H):
                for j in range(W):
                    dp[h + 1, j + 1] = g[n, c, h, j] if out[n, c, h, j] > 0 else 0
            for h in range(H):
                for j in range(W):
                    v = dp[h + 1, j + 1]
                    s00 += v * xp[h, j]
                    s01 += v * xp[h, j + 1]
                    s02 += v * xp[h, j + 2]
                    s10 += v * xp[h + 1, j]
                    s11 += v * xp[h + 1, j + 1]
                    s12 += v * xp[h + 1, j + 2]
                    s20 += v * xp[h + 2, j]
                    s21 += v * xp[h + 2, j + 1]
                    s22 += v * xp[h + 2, j + 2]
            for h in range(H):
                for j in range(W):
                    dx[n, c, h, j] = (k[0, 0] * dp[h + 2, j + 2] + k[0, 1] * dp[h + 2, j + 1] +
                                      k[0, 2] * dp[h + 2, j] + k[1, 0] * dp[h + 1, j + 2] +
                                      k[1, 1] * dp[h + 1, j + 1] + k[1, 2] * dp[h + 1, j] +
                                      k[2, 0] * dp[h, j + 2] + k[2, 1] * dp[h, j + 1] +
                                      k[2, 2] * dp[h, j])
        dw[c, 0, 0, 0], dw[c, 0, 0, 1], dw[c, 0, 0, 2] = s00, s01, s02
        dw[c, 0, 1, 0], dw[c, 0, 1, 1], dw[c, 0, 1, 2] = s10, s11, s12
        dw[c, 0, 2, 0], dw[c, 0, 2, 1], dw[c, 0, 2, 2] = s20, s21, s22


@njit(parallel=True, **LOOP_FLAGS)
def relu_depthwise3x3_fwd(x, w, out):
    """out = depthwise 3x3 conv of relu(x), stride 1, padding 1: the relu is applied while
    filling the zero-padded plane (what fuse_relu_depthwise_conv computes)."""
    N, C, H, W = x.shape
    for p in prange(N * C):
        n, c = p // C, p % C
        pad = np.zeros((H + 2, W + 2), x.dtype)
        for h in range(H):
            for j in range(W):
                v = x[n, c, h, j]
                pad[h + 1, j + 1] = v if v > 0 else 0
        k = w[c, 0]
        for h in range(H):
            for j in range(W):
                out[n, c, h, j] = (k[0, 0] * pad[h, j] + k[0, 1] * pad[h, j + 1] +
                                   k[0, 2] * pad[h, j + 2] + k[1, 0] * pad[h + 1, j] +
                                   k[1, 1] * pad[h + 1, j + 1] + k[1, 2] * pad[h + 1, j + 2] +
                                   k[2, 0] * pad[h + 2, j] + k[2, 1] * pad[h + 2, j + 1] +
                                   k[2, 2] * pad[h + 2, j + 2])


@njit(parallel=True, **LOOP_FLAGS)
def relu_depthwise3x3_bwd(x, w, g, dx, dw):
    """Backward of relu_depthwise3x3_fwd for the cotangent g: dw from relu(x) and g, dx
    the flipped-kernel correlation of the zero-padded g plane masked by x > 0."""
    N, C, H, W = x.shape
    for c in prange(C):
        k = w[c, 0]
        xp = np.zeros((H + 2, W + 2), x.dtype)
        dp = np.zeros((H + 2, W + 2), x.dtype)
        s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = x[0, 0, 0, 0] * 0
        for n in range(N):
            for h in range(H):
                for j in range(W):
                    v = x[n, c, h, j]
                    xp[h + 1, j + 1] = v if v > 0 else 0
            dp[1:H + 1, 1:W + 1] = g[n, c]
            for h in range(H):
                for j in range(W):
                    v = dp[h + 1, j + 1]
                    s00 += v * xp[h, j]
                    s01 += v * xp[h, j + 1]
                    s02 += v * xp[h, j + 2]
                    s10 += v * xp[h + 1, j]
                    s11 += v * xp[h + 1, j + 1]
                    s12 += v * xp[h + 1, j + 2]
                    s20 += v * xp[h + 2, j]
                    s21 += v * xp[h + 2, j + 1]
                    s22 += v * xp[h + 2, j + 2]
            for h in range(H):
                for j in range(W):
                    v = (k[0, 0] * dp[h + 2, j + 2] + k[0, 1] * dp[h + 2, j + 1] +
                         k[0, 2] * dp[h + 2, j] + k[1, 0] * dp[h + 1, j + 2] +
                         k[1, 1] * dp[h + 1, j + 1] + k[1, 2] * dp[h + 1, j] +
                         k[2, 0] * dp[h, j + 2] + k[2, 1] * dp[h, j + 1] + k[2, 2] * dp[h, j])
                    dx[n, c, h, j] = v if x[n, c, h, j] > 0 else 0
        dw[c, 0, 0, 0], dw[c, 0, 0, 1], dw[c, 0, 0, 2] = s00, s01, s02
        dw[c, 0, 1, 0], dw[c, 0, 1, 1], dw[c, 0, 1, 2] = s10, s11, s12
        dw[c, 0, 2, 0], dw[c, 0, 2, 1], dw[c, 0, 2, 2] = s20, s21, s22


def relu_depthwise_step(x, w, g, out, dx, dw):
    """Forward then backward of depthwise3x3(relu(x), w) into preallocated out, dx, dw."""
    relu_depthwise3x3_fwd(x, w, out)
    relu_depthwise3x3_bwd(x, w, g, dx, dw)


def depthwise_relu_step(x, w, g, out, dx, dw):
    """Forward then backward of relu(depthwise3x3(x, w)) into preallocated out, dx, dw."""
    depthwise3x3_relu_fwd(x, w, out)
    depthwise3x3_relu_bwd(x, w, out, g, dx, dw)


def numpy_depthwise_step(x, w, g, out, dx, dw, relu_first):
    """The two steps above in numpy (--quick: no loop to compile, ~10 s of CPU cold): the 3x3
    taps as 9 shifted views of the zero-padded planes. relu_first: depthwise3x3(relu(x)),
    else relu(depthwise3x3(x))."""
    H, W = x.shape[2:]
    taps = [(a, b) for a in range(3) for b in range(3)]
    k = w[:, 0, :, :, None, None]
    xin = np.maximum(x, 0) if relu_first else x
    xp = np.pad(xin, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out[...] = sum(k[:, a, b] * xp[:, :, a:a + H, b:b + W] for a, b in taps)
    d = g if relu_first else g * (out > 0)
    if not relu_first:
        np.maximum(out, 0, out=out)
    dp = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for a, b in taps:
        dw[:, 0, a, b] = np.einsum("nchw,nchw->c", d, xp[:, :, a:a + H, b:b + W])
    dx[...] = sum(k[:, a, b] * dp[:, :, 2 - a:2 - a + H, 2 - b:2 - b + W] for a, b in taps)
    if relu_first:
        dx *= x > 0


def numpy_conv2d_im2col(x, w, pad):
    """conv2d (stride 1) the numpy way: a sliding-window view of the padded input copied
    into columns, then one matmul per sample."""
    n, c = x.shape[:2]
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    oh, ow = win.shape[2], win.shape[3]
    cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, oh * ow)
    return np.matmul(w.reshape(m, -1), cols).reshape(n, m, oh, ow)
