"""rnn (Paddle's cuDNN-style recurrent op: LSTM, GRU, RNN_TANH, RNN_RELU) and its gradient.

Input is time-major (T, B, input_size) (the layers transpose batch-major input). For each
layer and direction the input projection is one GEMM over all time steps,
XW = X @ W_ih^T + b_ih of shape (T, B, G*H), and the recurrence runs in one compiled loop
(`_recurrence`), one (B, H) @ (H, G*H) product per step. Paddle's formulas (its
`LSTMCell` / `GRUCell` / `SimpleRNNCell`, which the op matches):

* LSTM, gates i, f, g (c~), o: i, f, o = sigmoid, g = tanh; c = f*c' + i*g; h = o*tanh(c).
* GRU, gates r, z, c: r, z = sigmoid(XW + HW) per gate; c = tanh(XW_c + r*(W_hc h' + b_hc));
  h = (h' - c)*z + c (the reset gate applies after the recurrent product).
* RNN_TANH / RNN_RELU: h = act(XW + h' W_hh^T + b_hh).

WeightList is Paddle's flattened layout: first every weight, (W_ih, W_hh) per layer and
direction, then every bias, (b_ih, b_hh) in the same order. PreState / State are [h] or
[h, c], each (num_layers * D, B, H), D = 2 when `is_bidirec`. With SequenceLength (B,) a
sequence stops at its length: its state is frozen there and Out is zero past it; the
reverse direction starts at each sequence's own last step. Dropout (upscale_in_train)
applies between layers in training.

On a GPU both ops run these CPU kernels on host copies (`host_staged`): a CUDA
recurrence is still to be written.

Reserve keeps what the backward needs (in the input's dtype, not Paddle's opaque bytes):
per layer and direction the states before each step and the gate activations; per layer
above the first its (dropped-out) input and dropout scale.
"""
import functools

import numba
import numpy as np
from numba import njit

from ..fastmath import sigmoid, tanh
from ..gpu.host_staged import host_staged
from ..math.gemm_cpu import batched_call, blas_scalars, gemm, gemm_call, gemm_threads
from ..registry import NO_GRAD, RANDOM, OpDef, Slot, VarInfo, register_op
from ..workshare import parallel_threads, run_workers

MODES = {"LSTM": 0, "GRU": 1, "RNN_TANH": 2, "RNN_RELU": 3}
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
# Saved activations per step and unit: LSTM i, f, g, o; GRU r, z, c and W_hc h' + b_hc.
SAVED = {"LSTM": 4, "GRU": 4, "RNN_TANH": 1, "RNN_RELU": 1}

# error_model="numpy": the gate loops divide (sigmoid, tanh) and must still vectorize
_JIT = dict(nogil=True, cache=True, error_model="numpy")


@njit(**_JIT)
def _cell_forward(mode, x, hw, bias, b_ih, b_hh, h, c, a):
    """One step of one batch row: x (G*H,) = its X W_ih^T, hw (G*H,) = h' W_hh^T, bias =
    b_ih + b_hh. Updates h and c (H,) in place and writes the gate activations a (S*H,).
    One plain loop per gate kind over slices, so that each vectorizes (fastmath's float32
    sigmoid and tanh are arithmetic): the LSTM gates took 44 ms per layer through libm's
    scalar calls, 9 ms as one loop, less as these."""
    H = h.shape[0]
    if mode == 0:
        for k in range(2 * H):
            a[k] = sigmoid(x[k] + hw[k] + bias[k])
        for k in range(2 * H, 3 * H):
            a[k] = tanh(x[k] + hw[k] + bias[k])
        for k in range(3 * H, 4 * H):
            a[k] = sigmoid(x[k] + hw[k] + bias[k])
        i, f, g, o = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:4 * H]
        for j in range(H):
            c[j] = f[j] * c[j] + i[j] * g[j]
        for j in range(H):
            h[j] = o[j] * tanh(c[j])
    elif mode == 1:
        for k in range(2 * H):
            a[k] = sigmoid(x[k] + hw[k] + bias[k])
        r, z, cc, hc = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:4 * H]
        xc, hwc, bic, bhc = x[2 * H:], hw[2 * H:], b_ih[2 * H:], b_hh[2 * H:]
        for j in range(H):
            hc[j] = hwc[j] + bhc[j]
            cc[j] = tanh(xc[j] + bic[j] + r[j] * hc[j])
        for j in range(H):
            h[j] = (h[j] - cc[j]) * z[j] + cc[j]
    else:
        for j in range(H):
            v = x[j] + hw[j] + bias[j]
            h[j] = tanh(v) if mode == 2 else max(v, 0.0)
            a[j] = h[j]


@njit(**_JIT)
def _step(t, lo, hi, xw, hw, bias, b_ih, b_hh, h, c, lens, mode, y, states, act):
    """Step t of batch rows lo:hi, given their recurrent product hw = h[lo:hi] W_hh^T: keeps
    the states before the step in states (2, T, B, H), then runs the gates (xw (T, B, G*H)
    holds X W_ih^T; a row past its length keeps its state and outputs zeros)."""
    states[0, t, lo:hi] = h[lo:hi]
    states[1, t, lo:hi] = c[lo:hi]
    for b in range(lo, hi):
        if t >= lens[b]:
            y[t, b] = 0.0
            act[t, b] = 0.0
            continue
        _cell_forward(mode, xw[t, b], hw[b - lo], bias, b_ih, b_hh, h[b], c[b], act[t, b])
        y[t, b] = h[b]


@njit(**_JIT)
def _recurrence(xw, b_ih, w_hh, b_hh, h, c, lens, reverse, mode, y, states, act, ab, lo, hi):
    """One layer, one direction, batch rows lo:hi (rows are independent through the whole
    sequence, so threads taking blocks of rows never wait for each other). h, c (B, H)
    enter as the initial state and leave as the final one; writes y (T, B, H), the states
    and the gate activations act (T, B, S*H). Each step is one (rows x H) @ (H x G*H)
    product (numpy's BLAS, gemm_cpu.gemm), then the gates; compiled whole, so a thread runs
    its rows' whole sequence without the GIL."""
    T = xw.shape[0]
    hw = np.empty((hi - lo, xw.shape[2]), xw.dtype)
    rows, bias = h[lo:hi], b_ih + b_hh
    for s in range(T):
        t = T - 1 - s if reverse else s
        gemm(rows, w_hh, hw, False, True, ab)
        _step(t, lo, hi, xw, hw, bias, b_ih, b_hh, h, c, lens, mode, y, states, act)


@njit(**_JIT)
def _cell_backward(mode, one, a, h0, c0, dh, dy, dc, dxw, dhw, direct):
    """The gradient through one step of one batch row: dh + dy is the gradient of its h,
    dc of its c (updated in place to the previous c's). Writes dxw (G*H,), the gradient of
    X W_ih^T + b_ih; dhw, that of h' W_hh^T + b_hh (GRU only: the other modes' is dxw);
    direct, the previous h's gradient not through W_hh. `one` is 1 in the arrays' dtype
    (a literal 1.0 would make the float32 loops float64); short loops over slices
    vectorize where one loop writing every gate did not (8.8 -> 3.3 ms per LSTM layer)."""
    H = dh.shape[0]
    if mode == 0:
        i, f, g, o = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:4 * H]
        di, df, dg, do = dxw[:H], dxw[H:2 * H], dxw[2 * H:3 * H], dxw[3 * H:4 * H]
        for j in range(H):
            direct[j] = tanh(f[j] * c0[j] + i[j] * g[j])        # tanh(c), for now
        for j in range(H):
            d, tc = dh[j] + dy[j], direct[j]
            do[j] = d * tc * o[j] * (one - o[j])
            dc[j] = dc[j] + d * o[j] * (one - tc * tc)
        for j in range(H):
            dct = dc[j]
            di[j] = dct * g[j] * i[j] * (one - i[j])
            df[j] = dct * c0[j] * f[j] * (one - f[j])
            dg[j] = dct * i[j] * (one - g[j] * g[j])
            dc[j] = dct * f[j]
            direct[j] = 0.0
    elif mode == 1:
        r, z, cc, hc = a[:H], a[H:2 * H], a[2 * H:3 * H], a[3 * H:4 * H]
        for j in range(H):
            d = dh[j] + dy[j]
            dac = d * (one - z[j]) * (one - cc[j] * cc[j])
            dar = dac * hc[j] * r[j] * (one - r[j])
            daz = d * (h0[j] - cc[j]) * z[j] * (one - z[j])
            dxw[j], dxw[H + j], dxw[2 * H + j] = dar, daz, dac
            dhw[j], dhw[H + j], dhw[2 * H + j] = dar, daz, dac * r[j]
            direct[j] = d * z[j]
    else:
        for j in range(H):
            d = dh[j] + dy[j]
            hn = a[j]
            dxw[j] = d * (one - hn * hn) if mode == 2 else (d if hn > 0.0 else 0.0)
            direct[j] = 0.0


@njit(**_JIT)
def _step_grad(t, lo, hi, first, one, states, act, lens, mode, dy, dh, dc, dxw, dhw, back,
               direct):
    """The gradient through step t of batch rows lo:hi: dh[lo:hi] first becomes the
    previous step's back + direct (unless `first`), then the gates' backward."""
    if not first:
        dh[lo:hi] = back + direct
    for b in range(lo, hi):
        if t >= lens[b]:              # frozen state: its gradient passes unchanged
            dxw[t, b] = 0.0
            dhw[t, b] = 0.0
            direct[b - lo] = dh[b]
            continue
        _cell_backward(mode, one, act[t, b], states[0, t, b], states[1, t, b], dh[b],
                       dy[t, b], dc[b], dxw[t, b], dhw[t, b], direct[b - lo])


@njit(**_JIT)
def _recurrence_grad(w_hh, states, act, lens, reverse, mode, dy, dh, dc, dxw, dhw, ab, lo, hi):
    """Backpropagation through time for one layer and direction, batch rows lo:hi: walks
    the steps in the reverse of the forward's order. dh, dc (B, H) enter as the final
    state's gradient and leave as the initial state's. Writes dxw (T, B, G*H), the gradient
    of X W_ih^T + b_ih, and dhw, that of h' W_hh^T + b_hh (dxw itself but for GRU); the
    weight gradients are products over all steps at once, after this (`_RnnGradRun`)."""
    T = dxw.shape[0]
    back = np.empty((hi - lo, dh.shape[1]), dh.dtype)     # dh' through W_hh
    direct = np.empty_like(back)                           # dh' not through W_hh
    one = ab[0]
    for s in range(T):
        t = s if reverse else T - 1 - s
        _step_grad(t, lo, hi, s == 0, one, states, act, lens, mode, dy, dh, dc, dxw, dhw,
                   back, direct)
        gemm(dhw[t, lo:hi], w_hh, back, False, False, ab)
    if T:
        dh[lo:hi] = back + direct


def _over_steps(a, b, out, ab):
    """out = sum over steps t of a[t]^T @ b[t] (a (T, B, M), b (T, B, N)): a weight's
    gradient. Over T threads, each thread sums the products of its own share of the steps
    (one BLAS call over T*B/threads rows) and the partial sums are added: a split of the
    output re-packed the long operands once per block (1.2-1.3x slower at 2 threads)."""
    T, n = a.shape[0], max(1, gemm_threads(*out.shape, a.shape[0] * a.shape[1], 1,
                                          numba.get_num_threads()))
    while T % n:
        n -= 1
    if n == 1:
        gemm_call(a.reshape(-1, a.shape[2]), b.reshape(-1, b.shape[2]), out, True, False, ab)()
        return
    parts = np.empty((n,) + out.shape, out.dtype)
    idx = np.arange(n)
    batched_call(a.reshape(n, -1, a.shape[2]), b.reshape(n, -1, b.shape[2]), parts, idx, idx,
                 True, False, ab)()
    np.sum(parts, axis=0, out=out)


def _over_rows(recurrence, args, B, work):
    """Run `recurrence(*args, lo, hi)` over blocks of batch rows, one block per thread of
    the budget (a product of fewer rows runs no faster per row); all B rows on this
    thread when the `work` (multiply-adds) is small."""
    block = max(1, -(-B // parallel_threads(work, B)))
    calls = [functools.partial(recurrence, *args, lo, min(B, lo + block))
             for lo in range(0, B, block)]
    if calls:       # (the counter is run_workers' own: each call knows its rows)
        run_workers(np.zeros(1, np.int64), calls)


# ---------------------------------------------------------------- layout
class Layout:
    """The static sizes of one rnn op and where its pieces live in WeightList / Reserve."""

    def __init__(self, attrs, T, B):
        self.mode = str(attrs["mode"])
        self.H, self.L = int(attrs["hidden_size"]), int(attrs["num_layers"])
        self.D = 2 if attrs["is_bidirec"] else 1
        self.G, self.S = GATES[self.mode], SAVED[self.mode]
        self.T, self.B = T, B

    def per_step(self):
        """Reserve elements per (time step, batch row)."""
        H, D = self.H, self.D
        return self.L * D * (2 + self.S) * H + (self.L - 1) * 2 * D * H

    def weights(self, wl, l, d):
        k, n = 2 * (l * self.D + d), 2 * self.L * self.D
        return wl[k], wl[k + 1], wl[n + k], wl[n + k + 1]

    def reserve(self, flat):
        """[(dirs, xin, scale)] per layer: dirs[d] = (states (2,T,B,H), act (T,B,S*H));
        xin, scale (T, B, D*H) for layers above the first (None for the first)."""
        T, B, H, D = self.T, self.B, self.H, self.D
        off, layers = 0, []

        def take(shape):
            nonlocal off
            n = int(np.prod(shape))
            v = flat[off:off + n].reshape(shape)
            off += n
            return v
        for l in range(self.L):
            dirs = [(take((2, T, B, H)), take((T, B, self.S * H))) for _ in range(D)]
            extra = (take((T, B, D * H)), take((T, B, D * H))) if l else (None, None)
            layers.append((dirs,) + extra)
        return layers


def _lengths(ins, T, B):
    if ins.get("SequenceLength"):
        lens = ins["SequenceLength"][0].reshape(-1).astype(np.int64)
        if lens.shape[0] != B or (lens < 0).any() or (lens > T).any():
            raise ValueError(f"rnn: SequenceLength must hold {B} lengths in [0, {T}]; "
                             f"got {lens.tolist()}")
        return lens
    return np.full(B, T, np.int64)


class _RnnRun:
    """The bound forward: layer by layer, direction by direction."""

    def __init__(self, cop, ins, outs, rng):
        self.ins, self.outs, self.attrs, self.rng = ins, outs, cop.attrs, rng
        T, B, _ = cop.input("Input").shape
        self.lay = Layout(cop.attrs, T, B)

    def __call__(self):
        lay, ins, outs = self.lay, self.ins, self.outs
        x, wl, pre = ins["Input"][0], ins["WeightList"], ins["PreState"]
        T, B, H, D = lay.T, lay.B, lay.H, lay.D
        lens = _lengths(ins, T, B)
        reserve = lay.reserve(outs["Reserve"][0])
        p = float(self.attrs["dropout_prob"])
        train_drop = p > 0.0 and not self.attrs["is_test"]
        out, state = outs["Out"][0], outs["State"]
        ab = blas_scalars(x.dtype)
        for a in outs.get("DropoutState") or ():
            a[...] = 0      # Paddle's cuDNN dropout descriptor: nothing to keep on a CPU
        for l, (dirs, xin, scale) in enumerate(reserve):
            if l:
                scale[...] = 1.0
                if train_drop:
                    keep = self.rng.random(scale.shape) >= p
                    scale[...] = np.where(keep, 1.0 / (1.0 - p), 0.0)
                np.multiply(y, scale, out=xin)
                x = xin
            y = out if l == lay.L - 1 else np.empty((T, B, D * H), x.dtype)
            x2 = x.reshape(T * B, -1)
            for d, (states, act) in enumerate(dirs):
                w_ih, w_hh, b_ih, b_hh = lay.weights(wl, l, d)
                xw = np.empty((T, B, lay.G * H), x.dtype)
                gemm_call(x2, w_ih, xw.reshape(T * B, -1), False, True, ab)()
                k = l * D + d
                h = pre[0][k].copy()
                c = pre[1][k].copy() if lay.mode == "LSTM" else np.zeros_like(h)
                yd = y if D == 1 else np.empty((T, B, H), x.dtype)
                _over_rows(_recurrence, (xw, b_ih, w_hh, b_hh, h, c, lens, d == 1,
                                         MODES[lay.mode], yd, states, act, ab),
                           B, T * B * H * lay.G * H)
                if D > 1:
                    y[:, :, d * H:(d + 1) * H] = yd
                state[0][k] = h
                if lay.mode == "LSTM":
                    state[1][k] = c


class _RnnGradRun:
    """The bound backward: layers top-down, each direction's BPTT, then the input GEMMs."""

    def __init__(self, cop, ins, outs):
        self.ins, self.outs = ins, outs
        T, B, _ = cop.input("Input").shape
        self.lay = Layout(cop.attrs, T, B)

    def __call__(self):
        lay, ins, outs = self.lay, self.ins, self.outs
        T, B, H, D = lay.T, lay.B, lay.H, lay.D
        x0, wl = ins["Input"][0], ins["WeightList"]
        lens = _lengths(ins, T, B)
        reserve = lay.reserve(ins["Reserve"][0])
        dstate = ins["State@GRAD"]
        dwl = outs.get("WeightList@GRAD") or [np.empty_like(w) for w in wl]
        dpre = outs.get("PreState@GRAD") or [np.empty_like(s) for s in ins["PreState"]]
        dy = ins["Out@GRAD"][0]
        ab = blas_scalars(x0.dtype)
        for l in range(lay.L - 1, -1, -1):
            dirs, xin, scale = reserve[l]
            x = x0 if l == 0 else xin
            x2 = x.reshape(T * B, -1)
            dx = np.empty((T * B, x2.shape[1]), x.dtype)
            for d, (states, act) in enumerate(dirs):
                w_ih, w_hh, _, _ = lay.weights(wl, l, d)
                dw_ih, dw_hh, db_ih, db_hh = lay.weights(dwl, l, d)
                k = l * D + d
                dh = dstate[0][k].copy()
                dc = dstate[1][k].copy() if lay.mode == "LSTM" else np.zeros_like(dh)
                dxw = np.empty((T, B, lay.G * H), x.dtype)
                dhw = np.empty_like(dxw) if lay.mode == "GRU" else dxw
                _over_rows(_recurrence_grad,
                           (w_hh, states, act, lens, d == 1, MODES[lay.mode],
                            np.ascontiguousarray(dy[:, :, d * H:(d + 1) * H]), dh, dc, dxw,
                            dhw, ab), B, T * B * H * lay.G * H)
                # the weight gradients: one product over every step and row each
                dxw2, dhw2 = dxw.reshape(T * B, -1), dhw.reshape(T * B, -1)
                _over_steps(dhw, states[0], dw_hh, ab)
                db_hh[...] = dhw2.sum(axis=0)
                _over_steps(dxw, x, dw_ih, ab)
                db_ih[...] = dxw2.sum(axis=0)
                dxd = dx if d == 0 else np.empty_like(dx)
                gemm_call(dxw2, w_ih, dxd, False, False, ab)()
                if d:
                    dx += dxd
                dpre[0][k] = dh
                if lay.mode == "LSTM":
                    dpre[1][k] = dc
            dx = dx.reshape(x.shape)
            dy = dx * scale if l else dx
        if outs.get("Input@GRAD"):
            outs["Input@GRAD"][0][...] = dy


# ---------------------------------------------------------------- shapes
def _rnn_infer(ctx):
    a = ctx.attrs
    mode = str(a["mode"])
    if mode not in MODES:
        raise ctx.error(f"mode must be one of {sorted(MODES)}; got {mode!r}")
    x = ctx.input("Input")
    if len(x.shape) != 3:
        raise ctx.error(f"Input {ctx.name('Input')} must be time-major (T, B, input_size); "
                        f"got shape {tuple(x.shape)}")
    T, B, In = x.shape
    H, L, D = int(a["hidden_size"]), int(a["num_layers"]), 2 if a["is_bidirec"] else 1
    if In != -1 and In != int(a["input_size"]):
        raise ctx.error(f"Input has {In} features but input_size is {a['input_size']}")
    ws = ctx.inputs("WeightList")
    if len(ws) != 4 * L * D:
        raise ctx.error(f"WeightList must hold 4 * num_layers * directions = {4 * L * D} "
                        f"tensors (weights, then biases); got {len(ws)}")
    lay = Layout(a, T, B)
    for i, w in enumerate(ws):
        if np.dtype(w.dtype) != np.dtype(x.dtype):
            raise ctx.error(f"WeightList[{i}] {ctx.name('WeightList', i)} is {np.dtype(w.dtype)} "
                            f"but Input is {np.dtype(x.dtype)}; create the parameters in the "
                            f"input's dtype (or cast the input)")
    for l in range(L):
        for d in range(D):
            w_ih, w_hh, b_ih, b_hh = lay.weights(ws, l, d)
            want = ((lay.G * H, In if l == 0 else D * H), (lay.G * H, H), (lay.G * H,),
                    (lay.G * H,))
            for got, shape, what in zip((w_ih, w_hh, b_ih, b_hh), want, "ih hh bih bhh".split()):
                if tuple(got.shape) != shape and -1 not in shape:
                    raise ctx.error(f"{mode} weight {what} of layer {l} direction {d} must "
                                    f"have shape {shape}; got {tuple(got.shape)}")
    n_states = 2 if mode == "LSTM" else 1
    pre = ctx.inputs("PreState")
    if len(pre) != n_states:
        raise ctx.error(f"{mode} takes {n_states} initial state tensor(s) in PreState; "
                        f"got {len(pre)}")
    state = VarInfo((L * D, B, H), x.dtype)
    rows = -1 if -1 in (T, B) else T * B * lay.per_step()
    return {"Out": VarInfo((T, B, D * H), x.dtype), "State": [state] * n_states,
            "Reserve": VarInfo((rows,), x.dtype), "DropoutState": VarInfo((1,), np.uint8)}


def _rnn_cpu(cop):
    rng = np.random.default_rng(int(cop.attrs["seed"]) or None)

    def bind(ins, outs):
        return _RnnRun(cop, ins, outs, rng)
    return bind


def _rnn_grad_rule(g):
    dpre = g.dx_list("PreState")
    dws = g.dx_list("WeightList")
    dx = g.dx("Input")
    if dx is None and all(v is None for v in dpre + dws):
        return
    # A duplicable output list cannot hold gaps: scratch variables that nothing reads.
    dpre = [v if v is not None else g.tmp(s) for s, v in zip(g.fwd_list("PreState"), dpre)]
    dws = [v if v is not None else g.tmp(w) for w, v in zip(g.fwd_list("WeightList"), dws)]
    dstate = [g.dout_or_zeros("State", i) for i in range(len(g.fwd_list("State")))]
    ins = {"Input": g.fwd("Input"), "PreState": g.fwd_list("PreState"),
           "WeightList": g.fwd_list("WeightList"), "Reserve": g.fwd("Reserve"),
           "Out@GRAD": g.dout_or_zeros("Out"), "State@GRAD": dstate}
    if g.fwd("SequenceLength") is not None:
        ins["SequenceLength"] = g.fwd("SequenceLength")
    g.append("rnn_grad", ins, {"Input@GRAD": dx, "PreState@GRAD": dpre,
                               "WeightList@GRAD": dws}, dict(g.attrs))


def _rnn_grad_cpu(cop):
    return lambda ins, outs: _RnnGradRun(cop, ins, outs)


def _rnn_grad_infer(ctx):
    return {"Input@GRAD": ctx.input("Input"), "PreState@GRAD": ctx.inputs("PreState"),
            "WeightList@GRAD": ctx.inputs("WeightList")}


ATTRS = {"dropout_prob": 0.0, "is_bidirec": False, "input_size": 10, "hidden_size": 100,
         "num_layers": 1, "mode": "LSTM", "seed": 0, "is_test": False}

register_op(OpDef(
    "rnn", (Slot("Input"), Slot("PreState", duplicable=True),
            Slot("WeightList", duplicable=True), Slot("SequenceLength", optional=True,
                                                      no_grad=True)),
    (Slot("Out"), Slot("State", duplicable=True), Slot("Reserve"),
     Slot("DropoutState", optional=True)),
    _rnn_infer, _rnn_cpu, gpu=lambda cop: functools.partial(host_staged, _rnn_cpu(cop)),
    attrs=dict(ATTRS), grad=_rnn_grad_rule,
    traits=frozenset((RANDOM,)),
    doc="multi-layer (bi)directional LSTM / GRU / RNN_TANH / RNN_RELU over time-major Input, "
        "Paddle's gate order and flattened WeightList; SequenceLength masks padded steps"))
register_op(OpDef(
    "rnn_grad", (Slot("Input"), Slot("PreState", duplicable=True),
                 Slot("WeightList", duplicable=True), Slot("SequenceLength", optional=True),
                 Slot("Reserve"), Slot("Out@GRAD"), Slot("State@GRAD", duplicable=True)),
    (Slot("Input@GRAD", optional=True), Slot("PreState@GRAD", duplicable=True, optional=True),
     Slot("WeightList@GRAD", duplicable=True, optional=True)),
    _rnn_grad_infer, _rnn_grad_cpu,
    gpu=lambda cop: functools.partial(host_staged, _rnn_grad_cpu(cop)), attrs=dict(ATTRS),
    traits=frozenset((NO_GRAD,)),
    doc="backpropagation through time of rnn (the forward's Reserve holds its steps)"))
