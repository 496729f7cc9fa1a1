"""Train a small network on scikit-learn's bundled 8x8 digits: the README's main job.

    python -m numbaflow.examples.train_digits                # MLP, about 97% test accuracy
    python -m numbaflow.examples.train_digits --fuse         # through CompiledProgram with fusion
    python -m numbaflow.examples.train_digits --places 2     # data parallel over 2 CPU places
    mpiexec -n 2 python -m numbaflow.examples.train_digits   # data parallel over 2 processes
    python -m numbaflow.examples.train_digits --logdir runs/mlp   # then: tensorboard --logdir runs

The program is written exactly as with Paddle's static API; only the import differs.
The data set ships with scikit-learn (1797 images), so nothing is downloaded.
"""
import argparse
import os
import sys
import time

import numpy as np
from numba.core import event as numba_event

import numbaflow as paddle
import numbaflow.static as static
from numbaflow.examples.rates import StepRates, rate_text
from numbaflow.utils import Progress, ScalarLogger, unique_name

TARGET_ACC = {"mlp": 0.95, "cnn": 0.97}   # test accuracy each model must reach


class NotAvailable(Exception):
    """A requested option needs a part of numbaflow that this build does not have."""


def parse_args(argv=None):
    """Parse the command line (``argv=None`` reads ``sys.argv``)."""
    p = argparse.ArgumentParser(prog="python -m numbaflow.examples.train_digits",
                                description="Train an MLP (or CNN) on the 8x8 digits data set.")
    p.add_argument("--epochs", type=int, default=20, help="epochs (default 20)")
    p.add_argument("--batch-size", type=int, default=64, help="global batch size (default 64)")
    p.add_argument("--seed", type=int, default=0, help="seed for the split, shuffling and init")
    p.add_argument("--lr", type=float, default=5e-3, help="Adam learning rate (default 0.005)")
    p.add_argument("--places", type=int, default=1, help="devices in this process (data parallel)")
    p.add_argument("--cuda", action="store_true", help="train on CUDA places")
    p.add_argument("--fuse", action="store_true",
                   help="run through CompiledProgram with elementwise fusion")
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--logdir", metavar="DIR", default=None,
                   help="write the loss, accuracy and samples/s to a TensorBoard event file "
                        "in DIR (open with: tensorboard --logdir DIR; needs tensorboardX: "
                        "pip install 'numbaflow[tensorboard]')")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="write the loss and accuracy curves to this image (needs matplotlib: "
                        "pip install 'numbaflow[plot]')")
    args = p.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.places < 1:
        p.error("--epochs, --batch-size and --places must be >= 1")
    return args


def load_data(seed):
    """Return standardised (x_train, y_train, x_test, y_test); x float32 [N, 64], y int64 [N, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(x_tr)  # fit on the training split only: the test set stays unseen

    def xs(a):
        return np.ascontiguousarray(scaler.transform(a), dtype=np.float32)

    def ys(a):
        return a.astype(np.int64).reshape(-1, 1)

    return xs(x_tr), ys(y_tr), xs(x_te), ys(y_te)


def _require(obj, names, what):
    for name in names:
        if not hasattr(obj, name):
            raise NotAvailable(f"{what} is not available yet in this build of numbaflow")


def build_logits(x, model):
    """Append the network to the current program; return the [N, 10] logits."""
    if model == "mlp":
        h = static.nn.fc(x, size=128, activation="relu")
        h = static.nn.fc(h, size=64, activation="relu")
        return static.nn.fc(h, size=10)
    F = paddle.nn.functional
    _require(static.nn, ["conv2d"], "--model cnn (static.nn.conv2d)")
    _require(F, ["max_pool2d"], "--model cnn (nn.functional.max_pool2d)")
    _require(paddle, ["reshape"], "--model cnn (reshape)")
    _require(static.nn, ["batch_norm"], "--model cnn (static.nn.batch_norm)")
    img = paddle.reshape(x, [-1, 1, 8, 8])
    h = static.nn.conv2d(img, num_filters=16, filter_size=3, padding=1)
    h = static.nn.batch_norm(h, act="relu")
    h = F.max_pool2d(h, kernel_size=2, stride=2)  # 16 x 4 x 4
    h = static.nn.conv2d(h, num_filters=32, filter_size=3, padding=1)
    h = static.nn.batch_norm(h, act="relu")
    h = F.max_pool2d(h, kernel_size=2, stride=2)  # 32 x 2 x 2
    h = static.nn.fc(h, size=64, activation="relu")  # fc flattens all but the batch axis
    return static.nn.fc(h, size=10)


def build_programs(args):
    """Return (main, startup, test_prog, loss, acc) for the chosen model."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data(name="x", shape=[None, 64], dtype="float32")
        y = static.data(name="y", shape=[None, 1], dtype="int64")
        logits = build_logits(x, args.model)
        loss = paddle.nn.functional.cross_entropy(logits, y)  # mean over the batch
        acc = paddle.metric.accuracy(paddle.nn.functional.softmax(logits), y)
        # Cloned before minimize: the test program has the forward ops only.
        test_prog = main.clone(for_test=True)
        paddle.optimizer.Adam(learning_rate=args.lr).minimize(loss)
    return main, startup, test_prog, loss, acc


def make_place(args):
    """CPUPlace, or CUDAPlace(0) with --cuda (NotAvailable when there is no usable GPU)."""
    if not args.cuda:
        return paddle.CPUPlace()
    _require(paddle, ["CUDAPlace"], "--cuda (CUDAPlace)")
    try:
        return paddle.CUDAPlace(0)
    except RuntimeError as e:  # no GPU: CUDAPlace says why and how to use the simulator
        raise NotAvailable(f"--cuda: {e}") from None


def mpi_world():
    """(rank, size) when launched by mpiexec, else (0, 1). MPI is only touched under mpiexec."""
    if paddle.config.launcher_rank_size()[1] == 1:
        return 0, 1
    try:
        import numbaflow.distributed as dist
    except ImportError:
        raise NotAvailable("training under mpiexec (numbaflow.distributed) is not available yet "
                           "in this build of numbaflow") from None
    return dist.get_rank(), dist.get_world_size()


def training_program(main, loss, args, world_size):
    """The plain program, or a CompiledProgram for --fuse / --places / mpiexec."""
    data_parallel = args.places > 1 or world_size > 1
    if not (args.fuse or data_parallel):
        return main
    bs = static.BuildStrategy()
    if args.fuse:
        bs.fuse_elewise_add_act_ops = True
        bs.enable_auto_fusion = True
    prog = static.CompiledProgram(main, build_strategy=bs)
    if data_parallel:
        _require(prog, ["with_data_parallel"], "data-parallel training (--places > 1 or mpiexec)")
        places = (static.cuda_places(list(range(args.places))) if args.cuda
                  else static.cpu_places(args.places))
        prog = prog.with_data_parallel(loss_name=loss.name, places=places)
    return prog


class CompileClock(numba_event.Listener):
    """Seconds numba spends compiling or loading compiled code from its disk cache (while it
    holds its compiler lock; nested holds count once), shown beside samples/s: the first
    step builds the plan, and a plan's 8th run compiles its segments on a background
    thread (cold cache: seconds; warm: milliseconds)."""

    def __init__(self):
        self._depth = 0
        self._t0 = 0.0
        self.seconds = 0.0

    def on_start(self, event):
        if self._depth == 0:
            self._t0 = time.perf_counter()
        self._depth += 1

    def on_end(self, event):
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._t0

    def __enter__(self):
        numba_event.register("numba:compiler_lock", self)
        return self

    def __exit__(self, *exc):
        numba_event.unregister("numba:compiler_lock", self)


def plot_history(history, path):
    """Write loss and accuracy per epoch (train and test) to the image `path`."""
    try:
        import matplotlib
    except ImportError:
        raise NotAvailable("--plot needs matplotlib: pip install 'numbaflow[plot]'") from None
    matplotlib.use("Agg")   # files only: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    epochs = [r["epoch"] for r in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(8, 3), dpi=100)
    ax_loss.plot(epochs, [r["loss"] for r in history], marker="o", ms=3, label="train loss")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss", yscale="log")
    ax_acc.plot(epochs, [r["train_acc"] for r in history], marker="o", ms=3, label="train")
    ax_acc.plot(epochs, [r["test_acc"] for r in history], marker="s", ms=3, label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def epoch_line(row, epochs):
    """The line printed after an epoch. samples/s is '-' when the epoch had no timed step
    (its only step was the first); numba's compile time in the epoch is shown beside it."""
    note = (f"  (numba compiled for {row['compile_s']:.1f} s meanwhile)"
            if row["compile_s"] >= 0.05 else "")
    return (f"epoch {row['epoch']:3d}/{epochs}  loss {row['loss']:.4f}  "
            f"train acc {row['train_acc']:.4f}  test acc {row['test_acc']:.4f}  "
            f"{rate_text(row, 'samples_per_s', 'samples/s')}{note}")


def train(args):
    """Train and evaluate; return {"test_acc", "history", "rank", "seconds", "compile_seconds"}.

    Each history row has epoch, loss, train_acc, test_acc, samples_per_s (the training
    steps' wall time, without the first step, which builds the plan; None when the epoch
    had no other step), samples_per_s_p25 / _p75 (the spread of the steps' rates), load
    (the highest 1-minute load average seen; above the cores, the line says the machine
    was busy) and compile_s (seconds numba compiled during the epoch's steps, in
    the foreground or on the background thread: shown beside samples/s, not subtracted)."""
    rank, world_size = mpi_world()
    verbose = rank == 0
    x_tr, y_tr, x_te, y_te = load_data(args.seed)
    rng = np.random.default_rng(args.seed)  # the same on every rank: all ranks agree on batches

    paddle.enable_static()
    paddle.seed(args.seed)
    place = make_place(args)
    # TensorBoard scalars (rank 0 only): per step train/*, per epoch the history row
    logger = None
    if args.logdir and verbose:
        try:
            logger = ScalarLogger(args.logdir)
        except ImportError as e:
            raise NotAvailable(f"--logdir: {e}") from None
    n_batches = -(-len(x_tr) // args.batch_size)
    # Fresh names and a fresh scope: calling train() twice in one process gives the same program.
    with unique_name.guard(), static.scope_guard(static.Scope()), CompileClock() as clock:
        main, startup, test_prog, loss, acc = build_programs(args)
        exe = static.Executor(place)
        exe.run(startup)
        prog = training_program(main, loss, args, world_size)

        history, first_step = [], None
        t_start = time.perf_counter()
        for epoch in range(1, args.epochs + 1):
            perm = rng.permutation(len(x_tr))
            sum_loss = sum_acc = 0.0
            seen, compile_s, rates = 0, 0.0, StepRates()
            # a bar per epoch on a terminal (gone before the epoch line); global steps
            progress = Progress(total=n_batches, desc=f"epoch {epoch}", bar=None if verbose
                                else False, callbacks=[logger] if logger else [],
                                start=(epoch - 1) * n_batches)
            for start in range(0, len(perm), args.batch_size):
                batch = perm[start:start + args.batch_size]
                local = np.array_split(batch, world_size)[rank]  # this rank's share
                t0, c0 = time.perf_counter(), clock.seconds
                loss_v, acc_v = exe.run(prog, feed={"x": x_tr[local], "y": y_tr[local]},
                                        fetch_list=[loss, acc])
                dt, dc = time.perf_counter() - t0, clock.seconds - c0
                if first_step is None:
                    first_step = dt  # builds and compiles the program: kept out of samples/s
                else:
                    # wall time as the user waits for it: numba's compile time is shown
                    # beside, never subtracted (segments compile on a background thread,
                    # so it overlaps the steps and subtracting it gave nan or < 0)
                    rates.add(len(batch), dt)
                    compile_s += dc
                # Data parallel fetches one value per device: average them.
                sum_loss += float(np.mean(loss_v)) * len(local)
                sum_acc += float(np.mean(acc_v)) * len(local)
                seen += len(local)
                progress.step(**{"train/loss": float(np.mean(loss_v)),
                                 "train/batch_acc": float(np.mean(acc_v))})
            progress.close()
            (test_acc,) = exe.run(test_prog, feed={"x": x_te, "y": y_te}, fetch_list=[acc])
            row = {"epoch": epoch, "loss": sum_loss / seen, "train_acc": sum_acc / seen,
                   "test_acc": float(np.mean(test_acc)),
                   **rates.row("samples_per_s"), "compile_s": compile_s}
            history.append(row)
            if logger:
                logger.add_scalars({f"epoch/{k}": v for k, v in row.items()
                                    if k != "epoch" and v is not None}, step=epoch)
            if verbose:
                print(epoch_line(row, args.epochs), flush=True)
        seconds = time.perf_counter() - t_start
    if logger:
        logger.close()
    return {"test_acc": history[-1]["test_acc"], "history": history, "rank": rank,
            "seconds": seconds, "compile_seconds": first_step}


def train_and_plot(prog, args, train, plot):
    """`train(args)`, its curves drawn by `plot(history, path)` on rank 0 with --plot; None
    after saying on stderr why it cannot run (no matplotlib for --plot, an option this
    build cannot run yet): the caller then exits 2. Shared by the example programs."""
    if args.plot:
        try:
            import matplotlib  # noqa: F401  (fail before training, not after)
        except ImportError:
            print(f"{prog}: --plot needs matplotlib: pip install 'numbaflow[plot]'",
                  file=sys.stderr)
            return None
    try:
        result = train(args)
        if args.plot and result["rank"] == 0:
            plot(result["history"], args.plot)
    except (NotAvailable, NotImplementedError) as e:  # the core says so for unfinished features
        print(f"{prog}: {e}", file=sys.stderr)
        return None
    return result


def main(argv=None):
    """Command-line entry point: 0 when the test accuracy reaches the model's TARGET_ACC,
    else non-zero."""
    args = parse_args(argv)
    result = train_and_plot("train_digits", args, train, plot_history)
    if result is None:
        return 2
    target = TARGET_ACC[args.model]
    ok = result["test_acc"] >= target
    if result["rank"] == 0:
        print(f"final test accuracy {result['test_acc']:.4f} (target {target}) "
              f"{'reached' if ok else 'NOT reached'}; {result['seconds']:.1f} s training, "
              f"first step (compile) {result['compile_seconds']:.2f} s")
        if args.plot:
            print(f"loss and accuracy curves written to {args.plot}")
    return 0 if ok else 1


if __name__ == "__main__":
    # As a program, show numbaflow's INFO notices too (such as the background compiles),
    # unless NUMBAFLOW_LOG_LEVEL says otherwise.
    paddle.utils.log.configure_from_env(default="INFO")
    sys.exit(main())
