"""The models of models.py written for PyTorch (eager, or torch.compile) and JAX (jit), and
onnxruntime running numbaflow's ONNX export of an inference model (OnnxStep).

Imported only by worker.py inside the peer's own venv. Each `*Step(model, index, d)` reads
numbaflow's initial weights and batch from the array files `index` / `d` (worker.py's
format: raw bytes, so a torch venv without numpy works) and does one training step per
call, returning the loss as a float (which waits for an asynchronous framework).

The math follows Paddle's ops exactly: fc weights are [in, out]; batch_norm in training
normalises with the biased batch variance (eps 1e-5); layer_norm eps 1e-5; F.gelu is the
erf form; Momentum is v = mu v + g, p -= lr v (L2Decay adds coeff * p to g first); AdamW
decays p by lr * coeff before the Adam update; LinearWarmup gives step k (from 0) the rate
lr * k / warmup.
"""
import os

try:
    from . import models
except ImportError:     # imported by worker.py run as a script, beside models.py
    import models

SPECS = {"cnn": models.CNN, "gpt": models.GPT, "mlp": models.MLP, "conv": models.CNN,
         "resnet20": models.RESNET20, "gpt_medium": models.GPT_MEDIUM, "lstm": models.LSTM}
# the forward each model runs (`_<name>` of TorchStep / JaxStep): a size, not a new model
FORWARD = {"gpt_medium": "gpt"}


def gpt_lr(k, g=models.GPT):
    """LinearWarmup(0 -> lr over `warmup` steps) at step k."""
    return g["lr"] * min(k, g["warmup"]) / g["warmup"]


def resnet20_blocks():
    """(name, stride) of ResNet-20's basic blocks in order, as models.resnet20_program."""
    r = models.RESNET20
    return [(f"s{si}b{b}", 2 if si and not b else 1)
            for si in range(len(r["widths"])) for b in range(r["blocks"])]


LSTM_WEIGHTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def mlp_names():
    return [f"fc_{i}.{k}_0" for i in range(len(models.MLP["sizes"]) - 1) for k in ("w", "b")]


# ------------------------------------------------------------------ PyTorch
class TorchStep:
    """Functional torch forward (explicit parameter tensors) + torch.optim; `compile` wraps
    the forward and loss in torch.compile."""

    def __init__(self, model, index, d, compile=False):
        import torch
        self.torch, self.model, self.k = torch, model, 0
        arrays = {}
        for name, e in index.items():
            with open(os.path.join(d, e["file"]), "rb") as f:
                raw = bytearray(f.read())
            dtype = {"float32": torch.float32, "int64": torch.int64}[e["dtype"]]
            arrays[name] = torch.frombuffer(raw, dtype=dtype).reshape(e["shape"])
        self.p = {k[6:]: v.clone().requires_grad_(not k.endswith((".mean", ".var")))
                  for k, v in arrays.items() if k.startswith("param:")}
        self.feed = {k[5:]: v for k, v in arrays.items() if k.startswith("feed:")}
        train = [v for v in self.p.values() if v.requires_grad]
        self.spec = s = SPECS[model]
        if "warmup" in s:       # the GPTs: AdamW under LinearWarmup
            self.opt = torch.optim.AdamW(train, lr=0.0, betas=(0.9, 0.999), eps=1e-8,
                                         weight_decay=s["weight_decay"])
        else:                   # Momentum (+ L2Decay: the gradient gets coeff * p) or SGD
            self.opt = torch.optim.SGD(train, lr=s["lr"], momentum=s.get("momentum", 0.0),
                                       weight_decay=s.get("weight_decay", 0.0))
        fwd = getattr(self, "_" + FORWARD.get(model, model))
        self.fwd = torch.compile(fwd) if compile else fwd

    def _bn(self, p, h, name):
        """Training batch_norm of parameters `name`.w/.b/.mean/.var (eps 1e-5)."""
        # fresh copies of the running statistics: the loss needs only the batch's
        return self.torch.nn.functional.batch_norm(
            h, p[name + ".mean"].clone(), p[name + ".var"].clone(), p[name + ".w"],
            p[name + ".b"], training=True, eps=1e-5)

    def _cnn(self, p, image, label):
        F = self.torch.nn.functional
        h = image
        for i, pad in ((0, 2), (1, 0)):
            h = F.conv2d(h, p[f"conv{i}.w"], p[f"conv{i}.b"], padding=pad)
            h = F.max_pool2d(F.relu(self._bn(p, h, f"bn{i}")), 2, 2)
        h = h.flatten(1)
        for i in range(3):
            h = h @ p[f"fc{i}.w"] + p[f"fc{i}.b"]
            if i < 2:
                h = F.relu(h)
        return F.cross_entropy(h, label.view(-1))

    def _conv(self, p, image):
        F = self.torch.nn.functional
        h = F.conv2d(image, p["conv0.w"], p["conv0.b"], padding=2)
        h = F.conv2d(F.max_pool2d(h, 2, 2), p["conv1.w"], p["conv1.b"])
        return (h * h).mean()

    def _resnet20(self, p, image, label):
        F = self.torch.nn.functional

        def conv_bn(h, name, stride, relu=True):
            w = p[name + ".w"]
            h = self._bn(p, F.conv2d(h, w, stride=stride, padding=w.shape[-1] // 2),
                         name + ".bn")
            return F.relu(h) if relu else h

        h = conv_bn(image, "stem", 1)
        for name, stride in resnet20_blocks():
            y = conv_bn(conv_bn(h, name + ".c1", stride), name + ".c2", 1, relu=False)
            if name + ".proj.w" in p:
                h = conv_bn(h, name + ".proj", stride, relu=False)
            h = F.relu(y + h)
        return F.cross_entropy(h.mean((2, 3)) @ p["fc.w"] + p["fc.b"], label.view(-1))

    def _gpt(self, p, tokens, target):
        torch, F, g = self.torch, self.torch.nn.functional, self.spec
        d, nh, t = g["d_model"], g["heads"], g["ctx"]
        mask = torch.triu(torch.full((t, t), models.MASK_VALUE), 1)
        h = p["tok_emb"][tokens] + p["pos_emb"][:t]
        for i in range(g["layers"]):
            a = F.layer_norm(h, (d,), p[f"h{i}.ln1.w"], p[f"h{i}.ln1.b"], 1e-5)
            q, k, v = ((a @ p[f"h{i}.{n}.w"] + p[f"h{i}.{n}.b"]).view(-1, t, nh, d // nh)
                       .transpose(1, 2) for n in "qkv")
            s = (q @ k.transpose(-1, -2)) * (d // nh) ** -0.5 + mask
            y = (s.softmax(-1) @ v).transpose(1, 2).reshape(-1, t, d)
            h = h + y @ p[f"h{i}.proj.w"] + p[f"h{i}.proj.b"]
            m = F.layer_norm(h, (d,), p[f"h{i}.ln2.w"], p[f"h{i}.ln2.b"], 1e-5)
            m = F.gelu(m @ p[f"h{i}.fc.w"] + p[f"h{i}.fc.b"])
            h = h + m @ p[f"h{i}.out.w"] + p[f"h{i}.out.b"]
        h = F.layer_norm(h, (d,), p["ln_f.w"], p["ln_f.b"], 1e-5)
        logits = h @ p["head.w"] + p["head.b"]
        return F.cross_entropy(logits.reshape(-1, g["vocab"]), target.reshape(-1))

    def _lstm(self, p, tokens, target):
        # torch.nn.LSTM's own kernel (what nn.LSTM calls) on the explicit parameters;
        # Paddle's gate order i, f, g, o and weight layout [4H, in] are torch's
        torch, g = self.torch, self.spec
        x = p["emb"][tokens]
        zeros = torch.zeros(1, x.shape[0], g["hidden"])
        for i in range(g["layers"]):
            x = torch._VF.lstm(x, (zeros, zeros), [p[f"l{i}.{k}"] for k in LSTM_WEIGHTS],
                               True, 1, 0.0, True, False, True)[0]
        logits = x @ p["head.w"] + p["head.b"]
        return self.torch.nn.functional.cross_entropy(logits.reshape(-1, g["vocab"]),
                                                      target.reshape(-1))

    def _mlp(self, p, x, y):
        F = self.torch.nn.functional
        names = mlp_names()
        h = x
        for i in range(0, len(names), 2):
            h = (F.relu(h) if i else h) @ p[names[i]] + p[names[i + 1]]
        return F.cross_entropy(h, y.view(-1))

    def step(self):
        if "warmup" in self.spec:
            for group in self.opt.param_groups:
                group["lr"] = gpt_lr(self.k, self.spec)
        self.k += 1
        loss = self.fwd(self.p, **self.feed)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.item()

    def settle(self):
        pass


# ------------------------------------------------------------------ JAX
class JaxStep:
    """jax.jit of the whole step (forward, grad, optimizer update), parameters as a dict."""

    def __init__(self, model, index, d):
        import jax
        import jax.numpy as jnp
        import numpy as np
        self.jax, self.jnp, self.model, self.k = jax, jnp, model, 0
        self.spec = SPECS[model]
        arrays = {name: np.fromfile(os.path.join(d, e["file"]), dtype=e["dtype"])
                  .reshape(e["shape"]) for name, e in index.items()}
        self.p = {k[6:]: jnp.asarray(v) for k, v in arrays.items()
                  if k.startswith("param:") and not k.endswith((".mean", ".var"))}
        self.feed = {k[5:]: jnp.asarray(v) for k, v in arrays.items() if k.startswith("feed:")}
        self.state = jax.tree_util.tree_map(jnp.zeros_like, self.p)
        adamw = "warmup" in self.spec
        if adamw:
            self.state = (self.state, jax.tree_util.tree_map(jnp.zeros_like, self.p))
        loss_fn = getattr(self, "_" + FORWARD.get(model, model))
        update = self._update_adamw if adamw else self._update_momentum

        def train(p, state, k, feed):
            loss, grads = jax.value_and_grad(loss_fn)(p, **feed)
            p, state = update(p, grads, state, k)
            return p, state, loss

        self.train = jax.jit(train)

    @staticmethod
    def _xent(logits, label):
        import jax
        import jax.numpy as jnp
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, label.reshape(-1, 1), axis=1).mean()

    def _conv2d(self, h, w, stride=1, pad=None):
        """NCHW x OIHW cross-correlation, symmetric padding (default k // 2)."""
        pad = w.shape[-1] // 2 if pad is None else pad
        return self.jax.lax.conv_general_dilated(h, w, (stride, stride), [(pad, pad)] * 2,
                                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def _bn(self, p, h, name):
        """Training batch_norm: the batch's mean and biased variance (eps 1e-5)."""
        mean = h.mean(axis=(0, 2, 3), keepdims=True)
        var = ((h - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        return (h - mean) / self.jnp.sqrt(var + 1e-5) * p[name + ".w"][None, :, None, None] \
            + p[name + ".b"][None, :, None, None]

    def _cnn(self, p, image, label):
        jax, jnp = self.jax, self.jnp
        h = image
        for i, pad in ((0, 2), (1, 0)):
            h = self._conv2d(h, p[f"conv{i}.w"], pad=pad) + p[f"conv{i}.b"][None, :, None, None]
            h = jax.lax.reduce_window(jax.nn.relu(self._bn(p, h, f"bn{i}")), -jnp.inf,
                                      jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = h.reshape(h.shape[0], -1)
        for i in range(3):
            h = h @ p[f"fc{i}.w"] + p[f"fc{i}.b"]
            if i < 2:
                h = jax.nn.relu(h)
        return self._xent(h, label)

    def _conv(self, p, image):
        jax, jnp = self.jax, self.jnp
        h = image
        for i, pad in ((0, 2), (1, 0)):
            if i:
                h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2),
                                          (1, 1, 2, 2), "VALID")
            h = self._conv2d(h, p[f"conv{i}.w"], pad=pad) + p[f"conv{i}.b"][None, :, None, None]
        return (h * h).mean()

    def _resnet20(self, p, image, label):
        relu = self.jax.nn.relu

        def conv_bn(h, name, stride, relu_after=True):
            h = self._bn(p, self._conv2d(h, p[name + ".w"], stride), name + ".bn")
            return relu(h) if relu_after else h

        h = conv_bn(image, "stem", 1)
        for name, stride in resnet20_blocks():
            y = conv_bn(conv_bn(h, name + ".c1", stride), name + ".c2", 1, False)
            if name + ".proj.w" in p:
                h = conv_bn(h, name + ".proj", stride, False)
            h = relu(y + h)
        return self._xent(h.mean((2, 3)) @ p["fc.w"] + p["fc.b"], label)

    def _gpt(self, p, tokens, target):
        jax, jnp, g = self.jax, self.jnp, self.spec
        d, nh, t = g["d_model"], g["heads"], g["ctx"]
        mask = jnp.triu(jnp.full((t, t), models.MASK_VALUE, jnp.float32), 1)

        def ln(x, name):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) / jnp.sqrt(var + 1e-5) * p[name + ".w"] + p[name + ".b"]

        h = p["tok_emb"][tokens] + p["pos_emb"][:t]
        for i in range(g["layers"]):
            a = ln(h, f"h{i}.ln1")
            q, k, v = ((a @ p[f"h{i}.{n}.w"] + p[f"h{i}.{n}.b"]).reshape(-1, t, nh, d // nh)
                       .transpose(0, 2, 1, 3) for n in "qkv")
            s = (q @ k.transpose(0, 1, 3, 2)) * (d // nh) ** -0.5 + mask
            y = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(-1, t, d)
            h = h + y @ p[f"h{i}.proj.w"] + p[f"h{i}.proj.b"]
            m = jax.nn.gelu(ln(h, f"h{i}.ln2") @ p[f"h{i}.fc.w"] + p[f"h{i}.fc.b"],
                            approximate=False)
            h = h + m @ p[f"h{i}.out.w"] + p[f"h{i}.out.b"]
        logits = ln(h, "ln_f") @ p["head.w"] + p["head.b"]
        return self._xent(logits.reshape(-1, g["vocab"]), target)

    def _mlp(self, p, x, y):
        jax, names = self.jax, mlp_names()
        h = x
        for i in range(0, len(names), 2):
            h = (jax.nn.relu(h) if i else h) @ p[names[i]] + p[names[i + 1]]
        return self._xent(h, y)

    def _lstm(self, p, tokens, target):
        """lax.scan over time of the LSTM cell (gates i, f, g, o, as Paddle's)."""
        jax, jnp, g = self.jax, self.jnp, self.spec
        x = jnp.swapaxes(p["emb"][tokens], 0, 1)             # [time, batch, hidden]
        for i in range(g["layers"]):
            w_ih, w_hh, b_ih, b_hh = (p[f"l{i}.{k}"] for k in LSTM_WEIGHTS)
            xs = x @ w_ih.T + b_ih + b_hh                    # the input projection, one GEMM

            def cell(state, xw, w_hh=w_hh):
                h, c = state
                gi, gf, gg, go = jnp.split(xw + h @ w_hh.T, 4, axis=-1)
                c = jax.nn.sigmoid(gf) * c + jax.nn.sigmoid(gi) * jnp.tanh(gg)
                h = jax.nn.sigmoid(go) * jnp.tanh(c)
                return (h, c), h
            zeros = jnp.zeros((x.shape[1], g["hidden"]), x.dtype)
            _, x = jax.lax.scan(cell, (zeros, zeros), xs)
        logits = jnp.swapaxes(x, 0, 1) @ p["head.w"] + p["head.b"]
        return self._xent(logits.reshape(-1, g["vocab"]), target)

    def _update_momentum(self, p, grads, vel, k):
        s = self.spec
        mu, wd = s.get("momentum", 0.0), s.get("weight_decay", 0.0)
        tm = self.jax.tree_util.tree_map
        # L2Decay as Paddle's Momentum fuses it: the gradient gets wd * p before the velocity
        vel = tm(lambda v, g, w: mu * v + g + wd * w, vel, grads, p)
        return tm(lambda w, v: w - s["lr"] * v, p, vel), vel

    def _update_adamw(self, p, grads, state, k):
        jnp, tm, g = self.jnp, self.jax.tree_util.tree_map, self.spec
        m, v = state
        lr = g["lr"] * jnp.minimum(k, g["warmup"]) / g["warmup"]
        t = k + 1
        m = tm(lambda a, gr: 0.9 * a + 0.1 * gr, m, grads)
        v = tm(lambda a, gr: 0.999 * a + 0.001 * gr * gr, v, grads)
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t

        def upd(w, a, b):
            w = w * (1 - lr * g["weight_decay"])
            return w - lr * (a / c1) / (jnp.sqrt(b / c2) + 1e-8)
        return tm(upd, p, m, v), (m, v)

    def step(self):
        self.p, self.state, loss = self.train(self.p, self.state, self.jnp.float32(self.k),
                                              self.feed)
        self.k += 1
        return float(loss)

    def settle(self):
        pass


# ------------------------------------------------------------------ onnxruntime
class OnnxStep:
    """onnxruntime (at its default threads, as its users get it) running numbaflow's own
    ONNX export of an inference program; `feed` is worker.read_numpy's dict."""

    def __init__(self, path, arrays):
        import onnxruntime
        self.session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        self.feed = {k[5:]: v for k, v in arrays.items() if k.startswith("feed:")}

    def step(self):
        return self.session.run(None, self.feed)[0]

    def settle(self):
        pass
