"""The models of models.py written for PyTorch (eager, or torch.compile) and JAX (jit).

Imported only by worker.py inside the peer's own venv. Each `*Step(model, index, d)` reads
numbaflow's initial weights and batch from the array files `index` / `d` (worker.py's
format: raw bytes, so a torch venv without numpy works) and does one training step per
call, returning the loss as a float (which waits for an asynchronous framework).

The math follows Paddle's ops exactly: fc weights are [in, out]; batch_norm in training
normalises with the biased batch variance (eps 1e-5); layer_norm eps 1e-5; F.gelu is the
erf form; Momentum is v = mu v + g, p -= lr v; AdamW decays p by lr * coeff before the Adam
update; LinearWarmup gives step k (from 0) the rate lr * k / warmup.
"""
import os

try:
    from . import models
except ImportError:     # imported by worker.py run as a script, beside models.py
    import models

SPECS = {"cnn": models.CNN, "gpt": models.GPT, "mlp": models.MLP, "conv": models.CNN}


def gpt_lr(k):
    """LinearWarmup(0 -> lr over `warmup` steps) at step k."""
    g = models.GPT
    return g["lr"] * min(k, g["warmup"]) / g["warmup"]


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
        s = SPECS[model]
        if model in ("cnn", "conv"):
            self.opt = torch.optim.SGD(train, lr=s["lr"], momentum=s["momentum"])
        elif model == "gpt":
            self.opt = torch.optim.AdamW(train, lr=0.0, betas=(0.9, 0.999), eps=1e-8,
                                         weight_decay=s["weight_decay"])
        else:
            self.opt = torch.optim.SGD(train, lr=s["lr"])
        fwd = getattr(self, "_" + model)
        self.fwd = torch.compile(fwd) if compile else fwd

    def _cnn(self, p, image, label):
        F = self.torch.nn.functional
        h = image
        for i, pad in ((0, 2), (1, 0)):
            h = F.conv2d(h, p[f"conv{i}.w"], p[f"conv{i}.b"], padding=pad)
            # fresh copies of the running statistics: the loss needs only the batch's
            h = F.batch_norm(h, p[f"bn{i}.mean"].clone(), p[f"bn{i}.var"].clone(),
                             p[f"bn{i}.w"], p[f"bn{i}.b"], training=True, eps=1e-5)
            h = F.max_pool2d(F.relu(h), 2, 2)
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

    def _gpt(self, p, tokens, target):
        torch, F, g = self.torch, self.torch.nn.functional, models.GPT
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

    def _mlp(self, p, x, y):
        F = self.torch.nn.functional
        names = mlp_names()
        h = x
        for i in range(0, len(names), 2):
            h = (F.relu(h) if i else h) @ p[names[i]] + p[names[i + 1]]
        return F.cross_entropy(h, y.view(-1))

    def step(self):
        if self.model == "gpt":
            for group in self.opt.param_groups:
                group["lr"] = gpt_lr(self.k)
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
        arrays = {name: np.fromfile(os.path.join(d, e["file"]), dtype=e["dtype"])
                  .reshape(e["shape"]) for name, e in index.items()}
        self.p = {k[6:]: jnp.asarray(v) for k, v in arrays.items()
                  if k.startswith("param:") and not k.endswith((".mean", ".var"))}
        self.feed = {k[5:]: jnp.asarray(v) for k, v in arrays.items() if k.startswith("feed:")}
        self.state = jax.tree_util.tree_map(jnp.zeros_like, self.p)
        if model == "gpt":
            self.state = (self.state, jax.tree_util.tree_map(jnp.zeros_like, self.p))
        loss_fn = getattr(self, "_" + model)
        update = getattr(self, "_update_" + ("adamw" if model == "gpt" else "momentum"))

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

    def _cnn(self, p, image, label):
        jax, jnp = self.jax, self.jnp
        h = image
        for i, pad in ((0, 2), (1, 0)):
            h = jax.lax.conv_general_dilated(h, p[f"conv{i}.w"], (1, 1), [(pad, pad)] * 2,
                                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
            h = h + p[f"conv{i}.b"][None, :, None, None]
            mean = h.mean(axis=(0, 2, 3), keepdims=True)
            var = ((h - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
            h = (h - mean) / jnp.sqrt(var + 1e-5) * p[f"bn{i}.w"][None, :, None, None] \
                + p[f"bn{i}.b"][None, :, None, None]
            h = jax.lax.reduce_window(jax.nn.relu(h), -jnp.inf, jax.lax.max, (1, 1, 2, 2),
                                      (1, 1, 2, 2), "VALID")
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
            h = jax.lax.conv_general_dilated(h, p[f"conv{i}.w"], (1, 1), [(pad, pad)] * 2,
                                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
            h = h + p[f"conv{i}.b"][None, :, None, None]
        return (h * h).mean()

    def _gpt(self, p, tokens, target):
        jax, jnp, g = self.jax, self.jnp, models.GPT
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

    def _update_momentum(self, p, grads, vel, k):
        s = SPECS[self.model]
        mu = s.get("momentum", 0.0)
        tm = self.jax.tree_util.tree_map
        vel = tm(lambda v, g: mu * v + g, vel, grads)
        return tm(lambda w, v: w - s["lr"] * v, p, vel), vel

    def _update_adamw(self, p, grads, state, k):
        jnp, tm, g = self.jnp, self.jax.tree_util.tree_map, models.GPT
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
