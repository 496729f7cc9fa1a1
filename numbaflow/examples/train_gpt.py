"""Train a small character-level GPT on text that ships with Python, then write a sample:
the README's second main job.

    python -m numbaflow.examples.train_gpt                 # about 2 min on 2 cores
    python -m numbaflow.examples.train_gpt --places 2      # data parallel over 2 CPU places
    mpiexec -n 2 python -m numbaflow.examples.train_gpt    # data parallel over 2 processes
    python -m numbaflow.examples.train_gpt --plot gpt.png  # the loss curve

The corpus is the source of a few pure-Python standard-library modules (read from this
interpreter's own files: nothing is downloaded). The model is written as with Paddle 2.6's
static API (static.nn.fc, paddle.matmul(transpose_y=True), a paddle.triu causal mask,
F.softmax, F.layer_norm, F.gelu, AdamW with LinearWarmup); generation runs a test clone
of the forward, in one static.nn.while_loop over the whole sample (--per-token: one
program run per character), that samples the next character with paddle.multinomial
(temperature) or takes paddle.topk (temperature 0).
"""
import argparse
import importlib
import inspect
import os
import sys
import time

import numpy as np

import numbaflow as paddle
import numbaflow.nn.functional as F
import numbaflow.static as static
from numbaflow.examples.train_digits import (CompileClock, NotAvailable, make_place, mpi_world,
                                             train_and_plot, training_program)
from numbaflow.examples.rates import StepRates, rate_text
from numbaflow.utils import Progress, ScalarLogger, unique_name

CORPUS_MODULES = ("textwrap", "string", "shlex", "fnmatch", "glob", "bisect", "heapq",
                  "colorsys", "calendar", "difflib")
TARGET_LOSS = 1.9      # mean training loss (nats per character) of the last step group


def parse_args(argv=None):
    """Parse the command line (``argv=None`` reads ``sys.argv``)."""
    p = argparse.ArgumentParser(prog="python -m numbaflow.examples.train_gpt",
                                description="Train a char-level GPT on Python's own sources.")
    p.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    p.add_argument("--batch-size", type=int, default=32, help="global batch (default 32)")
    p.add_argument("--context", type=int, default=32, help="characters per sequence")
    p.add_argument("--width", type=int, default=64, help="embedding width (default 64)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--layers", type=int, default=2, help="transformer blocks (default 2)")
    p.add_argument("--lr", type=float, default=3e-3, help="peak AdamW learning rate")
    p.add_argument("--log-every", type=int, default=50, help="steps per printed group")
    p.add_argument("--seed", type=int, default=0, help="seed for init, batches and sampling")
    p.add_argument("--places", type=int, default=1, help="devices in this process")
    p.add_argument("--cuda", action="store_true", help="train on CUDA places")
    p.add_argument("--sample", type=int, default=200, help="characters to generate")
    p.add_argument("--per-token", action="store_true",
                   help="sample with one program run per character (default: one run of a "
                        "while_loop for the whole sample)")
    p.add_argument("--temperature", type=float, default=0.8,
                   help="sampling temperature; 0 takes the likeliest character")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="write the loss curve to this image (needs matplotlib)")
    p.add_argument("--logdir", metavar="DIR", default=None,
                   help="write TensorBoard event files (train/loss per step) in DIR "
                        "(needs tensorboardX: pip install 'numbaflow[tensorboard]')")
    args = p.parse_args(argv)
    if min(args.steps, args.batch_size, args.context, args.places, args.log_every) < 1:
        p.error("--steps, --batch-size, --context, --places and --log-every must be >= 1")
    if args.width % args.heads:
        p.error("--width must be a multiple of --heads")
    args.fuse = False       # training_program's option (train_digits)
    return args


def _say(line):
    """Print a line (above the progress bar, when tqdm draws one)."""
    try:
        from tqdm import tqdm
    except ImportError:
        print(line, flush=True)
    else:
        tqdm.write(line)


def load_corpus():
    """(text, chars): the sources of CORPUS_MODULES, and the sorted character set."""
    text = "\n".join(inspect.getsource(importlib.import_module(m)) for m in CORPUS_MODULES)
    return text, sorted(set(text))


def _named(name):
    # every parameter named, so the sampling loop's copy of the forward reads the trained ones
    return paddle.ParamAttr(name="gpt." + name)


def gpt_logits(tokens, args, vocab):
    """The GPT's logits [batch, context, vocab] of `tokens` [batch, context]."""
    T, C, H = args.context, args.width, args.heads

    def norm(h, name):
        return static.nn.layer_norm(h, begin_norm_axis=2, param_attr=_named(name + ".w"),
                                    bias_attr=_named(name + ".b"))

    def fc(h, size, name):
        return static.nn.fc(h, size, num_flatten_dims=2, weight_attr=_named(name + ".w"),
                            bias_attr=_named(name + ".b"))
    x = static.nn.embedding(tokens, size=[vocab, C], param_attr=_named("tok_emb"))
    x = x + static.create_parameter([T, C], "float32", name="gpt.pos_emb",
                                    default_initializer=paddle.nn.initializer.Normal(0, 0.02))
    mask = paddle.triu(paddle.full([T, T], -1e9, "float32"), diagonal=1)
    for i in range(args.layers):
        q, k, v = paddle.split(fc(norm(x, f"h{i}.ln1"), 3 * C, f"h{i}.qkv"), 3, axis=-1)
        q, k, v = (paddle.transpose(paddle.reshape(t, [0, 0, H, C // H]), [0, 2, 1, 3])
                   for t in (q, k, v))
        att = paddle.matmul(q, k, transpose_y=True) * (1.0 / np.sqrt(C // H))
        att = F.softmax(att + mask, axis=-1)
        y = paddle.reshape(paddle.transpose(paddle.matmul(att, v), [0, 2, 1, 3]), [0, 0, C])
        x = x + fc(y, C, f"h{i}.proj")
        h = F.gelu(fc(norm(x, f"h{i}.ln2"), 4 * C, f"h{i}.fc"))
        x = x + fc(h, C, f"h{i}.out")
    return fc(norm(x, "ln_f"), vocab, "head")


def _next_token(logits, temperature):
    """[batch, 1] int64: the next character from the last position's logits."""
    last = logits[:, -1, :]
    if temperature > 0:
        return paddle.multinomial(F.softmax(last * (1.0 / temperature), axis=-1), num_samples=1)
    return paddle.topk(last, k=1)[1]


def build_programs(args, vocab):
    """(main, startup, sample_prog, loss, sample, scheduler)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        tokens = static.data("tokens", [None, args.context], "int64")
        labels = static.data("labels", [None, args.context], "int64")
        logits = gpt_logits(tokens, args, vocab)
        loss = F.cross_entropy(paddle.reshape(logits, [-1, vocab]),
                               paddle.reshape(labels, [-1, 1]))
        last = logits[:, -1, :]        # the next character's logits
        # the sampling program: the forward ops only (cloned before minimize)
        sample_prog = main.clone(for_test=True)
        sched = paddle.optimizer.lr.LinearWarmup(
            paddle.optimizer.lr.CosineAnnealingDecay(args.lr, args.steps), 50, 0.0, args.lr)
        paddle.optimizer.AdamW(learning_rate=sched, weight_decay=0.01,
                               grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0)).minimize(loss)
    with static.program_guard(sample_prog, startup):
        sample = _next_token(sample_prog.global_block().var(logits.name), args.temperature)
    return main, startup, sample_prog, loss, sample, sched


def sampling_loop(args, vocab, n):
    """(program, tokens): one program that extends the fed `prompt` [1, context] by n
    characters in a static.nn.while_loop (the window slides by one each step); tokens is
    a tensor array of the n ids. Its forward reads the trained parameters by name."""
    program = static.Program()
    with static.program_guard(program, static.Program()):
        prompt = static.data("prompt", [1, args.context], "int64")
        out = paddle.tensor.create_array("int64")

        def step(i, window):
            nxt = _next_token(gpt_logits(window, args, vocab), args.temperature)
            paddle.tensor.array_write(paddle.reshape(nxt, [1]), i, out)
            return [i + 1, paddle.concat([window[:, 1:], nxt], axis=1)]
        stop = paddle.full([1], n, "int64")
        static.nn.while_loop(lambda i, w: i < stop, step, [paddle.full([1], 0, "int64"), prompt])
    return program, out


def generate(exe, sample_prog, sample, prompt, n, chars):
    """Extend `prompt` (ids, at least the context long) by n sampled characters, one
    program run per character (the reference the sampling loop is tested against)."""
    ids = list(prompt)
    T = len(prompt)
    for _ in range(n):
        window = np.array([ids[-T:]], np.int64)
        (nxt,) = exe.run(sample_prog, feed={"tokens": window, "labels": window},
                         fetch_list=[sample])
        ids.append(int(np.asarray(nxt).reshape(-1)[0]))
    return "".join(chars[i] for i in ids[T:])


def generate_in_loop(exe, args, prompt, n, chars):
    """Extend `prompt` (context ids) by n characters in one run of sampling_loop."""
    program, out = sampling_loop(args, len(chars), n)
    (ids,) = exe.run(program, feed={"prompt": np.array([prompt], np.int64)}, fetch_list=[out])
    return "".join(chars[int(np.asarray(i).reshape(-1)[0])] for i in ids)


def plot_losses(history, path):
    """Write the per-group mean loss to the image `path`."""
    try:
        import matplotlib
    except ImportError:
        raise NotAvailable("--plot needs matplotlib: pip install 'numbaflow[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3), dpi=100)
    ax.plot([r["step"] for r in history], [r["loss"] for r in history], marker="o", ms=3)
    ax.axhline(TARGET_LOSS, color="gray", ls="--", lw=1, label=f"target {TARGET_LOSS}")
    ax.set(xlabel="step", ylabel="cross-entropy (nats / char)", title="char-level GPT")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def train(args):
    """Train, then sample; returns {"loss", "history", "sample", "rank", "seconds"}.

    Each history row: step (the group's last), loss (the group's mean), tokens_per_s
    (wall time of the group's steps, the first step of the run left out) and compile_s
    (numba's compile seconds during them: shown beside, never subtracted)."""
    rank, world_size = mpi_world()
    verbose = rank == 0
    text, chars = load_corpus()
    data = np.array([chars.index(c) for c in text], np.int64)
    T, B = args.context, args.batch_size
    rng = np.random.default_rng(args.seed)     # the same on every rank: one batch order
    paddle.enable_static()
    paddle.seed(args.seed)
    place = make_place(args)
    logger = None
    if args.logdir and verbose:
        try:
            logger = ScalarLogger(args.logdir)
        except ImportError as e:
            raise NotAvailable(f"--logdir: {e}") from None
    with unique_name.guard(), static.scope_guard(static.Scope()), CompileClock() as clock:
        main, startup, sample_prog, loss, sample, sched = build_programs(args, len(chars))
        exe = static.Executor(place)
        exe.run(startup)
        prog = training_program(main, loss, args, world_size)
        history, group, rates, compile_s, first = [], [], StepRates(), 0.0, True
        t_start = time.perf_counter()
        progress = Progress(total=args.steps, desc="train", bar=None if verbose else False,
                            callbacks=[logger] if logger else [])
        for step in range(1, args.steps + 1):
            starts = rng.integers(0, len(data) - T - 1, B)
            seq = data[starts[:, None] + np.arange(T + 1)]
            local = np.array_split(np.arange(B), world_size)[rank]
            t0, c0 = time.perf_counter(), clock.seconds
            (lv,) = exe.run(prog, feed={"tokens": seq[local, :-1], "labels": seq[local, 1:]},
                            fetch_list=[loss])
            # wall time as the user waits for it; numba's compile time is reported beside
            dt, dc = time.perf_counter() - t0, clock.seconds - c0
            sched.step()
            group.append(float(np.mean(lv)))
            progress.step(**{"train/loss": group[-1]})
            if not first:
                rates.add(B * T, dt)
                compile_s += dc
            first = False
            if step % args.log_every == 0 or step == args.steps:
                row = {"step": step, "loss": float(np.mean(group)),
                       **rates.row("tokens_per_s"), "compile_s": compile_s}
                history.append(row)
                group, rates, compile_s = [], StepRates(), 0.0
                if verbose:
                    rate = rate_text(row, "tokens_per_s", "tokens/s", 8)
                    extra = f" (+{row['compile_s']:.1f} s compiling)" if row["compile_s"] >= 0.05 \
                        else ""
                    _say(f"step {step:5d}/{args.steps}  loss {row['loss']:.3f}  {rate}{extra}")
        progress.close()
        if logger:
            logger.close()
        seconds = time.perf_counter() - t_start
        prompt = data[:T]
        sample_text = "" if args.sample <= 0 else \
            generate(exe, sample_prog, sample, prompt, args.sample, chars) if args.per_token \
            else generate_in_loop(exe, args, prompt, args.sample, chars)
    return {"loss": history[-1]["loss"], "history": history, "rank": rank,
            "seconds": seconds, "prompt": "".join(chars[i] for i in prompt),
            "sample": sample_text}


def main(argv=None):
    """Command-line entry point: 0 when the last group's loss reaches TARGET_LOSS."""
    args = parse_args(argv)
    result = train_and_plot("train_gpt", args, train, plot_losses)
    if result is None:
        return 2
    ok = result["loss"] <= TARGET_LOSS
    if result["rank"] == 0:
        print(f"final loss {result['loss']:.3f} (target {TARGET_LOSS}) "
              f"{'reached' if ok else 'NOT reached'}; {result['seconds']:.1f} s training")
        if result["sample"]:
            print(f"--- prompt ---\n{result['prompt']}\n--- sample (temperature "
                  f"{args.temperature}) ---\n{result['sample']}")
        if args.plot:
            print(f"loss curve written to {args.plot}")
    return 0 if ok else 1


if __name__ == "__main__":
    # as a program, show numbaflow's INFO notices too, unless NUMBAFLOW_LOG_LEVEL says otherwise
    paddle.utils.log.configure_from_env(default="INFO")
    sys.exit(main())
