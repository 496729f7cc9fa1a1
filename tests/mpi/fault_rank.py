"""Run under `mpiexec -n 2 python tests/mpi/fault_rank.py MODE [PLACES]`: both ranks train a
small MLP data-parallel (CompiledProgram over the 2 ranks x PLACES local places, default 1:
with more, the MPI calls run on the group's communication thread) for far more steps
than the test waits, and rank 1 fails as MODE says once it has taken 3 steps:

  raise    - an unhandled exception           exit0 / exit3 - sys.exit(0) / sys.exit(3)
  abort_stuck - an unhandled exception, and the rank's MPI_Abort never returns
  fewer    - stops taking steps; its script ends normally
  hang     - stops taking steps and blocks forever (run with NUMBAFLOW_COLLECTIVE_TIMEOUT)
  os_exit0 / os_exit1 - os._exit(0) / os._exit(1), from a thread, during a step
  sigkill / sigterm   - SIGKILL / SIGTERM to itself, from a thread, during a step
  sigterm_parent / sigkill_parent - SIGTERM / SIGKILL to the process mpiexec started for it
  sigterm_exit - SIGTERM, during a step, to a rank whose own handler calls sys.exit(1)
  caught   - a step fails (a label out of range) and rank 1 catches the error and goes on
  sleep    - sleeps (run with NUMBAFLOW_COLLECTIVE_TIMEOUT set)
  none     - no fault: both ranks take 6 steps; rank 1 ends first (its exit notice must
             not abort rank 0, which has no collective left to run)

Every rank prints `PID <rank> <pid>` first and `STEPS <rank> <n>` when it ends normally;
rank 1 prints `FAULT <time.time()>` just before its fault (the tests time the job's end
from there, not from a start-up that takes long on a loaded machine); the job must never
end with status 0 after a fault."""
import os
import signal
import sys
import threading
import time

import numpy as np

import numbaflow as paddle
import numbaflow.distributed as dist
import numbaflow.static as static
from numbaflow.utils import unique_name


def say(line):
    """One stdout line in one write: with PYTHONUNBUFFERED, print() writes the text and
    its newline separately, and the launcher then interleaved the other rank's line
    between them ('PID 0 11429PID 1 11430')."""
    os.write(1, f"{line}\n".encode())


mode = sys.argv[1]
say(f"PID {os.environ.get('PMI_RANK')} {os.getpid()}")
places = int(sys.argv[2]) if len(sys.argv) > 2 else 1
rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2, size
paddle.seed(1)
main, startup = static.Program(), static.Program()
with static.program_guard(main, startup), unique_name.guard():
    x = static.data("x", [None, 16], "float32")
    y = static.data("y", [None, 1], "int64")
    h = static.nn.fc(x, 32, activation="relu")
    loss = paddle.nn.functional.cross_entropy(static.nn.fc(h, 4), y)
    paddle.optimizer.SGD(0.01).minimize(loss)
exe = static.Executor(paddle.CPUPlace())
exe.run(startup)
c = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                    places=[paddle.CPUPlace()] * places)
rng = np.random.default_rng(rank)
feed = {"x": rng.standard_normal((8, 16)).astype(np.float32),
        "y": rng.integers(0, 4, (8, 1)).astype(np.int64)}


def fault_now():
    say(f"FAULT {time.time()}")


def fault_in_a_thread():
    """os._exit / signals land while the main thread is inside a training step."""
    time.sleep(0.2)
    fault_now()
    if mode.startswith("os_exit"):
        os._exit(int(mode[-1]))
    pid = os.getppid() if mode.endswith("_parent") else os.getpid()
    with open(f"/proc/{pid}/cmdline", "rb") as f, open("/proc/self/cmdline", "rb") as me:
        # the parent must be this rank's supervisor (a fork of it), never mpiexec's proxy
        assert f.read() == me.read(), "no supervisor (NUMBAFLOW_SUPERVISE=0?)"
    os.kill(pid, signal.SIGKILL if mode.startswith("sigkill") else signal.SIGTERM)


if mode == "sigterm_exit":
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
steps = 6 if mode == "none" else 10 ** 6
bad = dict(feed, y=np.full((8, 1), 9, np.int64))
for step in range(steps):
    if (mode, rank, step) == ("caught", 1, 3):
        fault_now()
    try:
        exe.run(c, feed=bad if (mode, rank, step) == ("caught", 1, 3) else feed,
                fetch_list=[loss])
    except ValueError as e:
        say(f"CAUGHT {rank}: {str(e)[:80]}")
    if rank != 1 or step != 2:
        continue
    if mode in ("raise", "abort_stuck", "exit0", "exit3", "fewer", "hang", "sleep"):
        fault_now()
    if mode == "abort_stuck":
        from mpi4py import MPI

        class StuckWorld:
            """MPI_Abort blocked in native code (holding the GIL: no thread can help)."""
            def Abort(self, code):
                signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
                while True:
                    time.sleep(1)
        MPI.COMM_WORLD = StuckWorld()
    if mode in ("raise", "abort_stuck"):
        raise RuntimeError("rank 1 failed at step 3")
    if mode in ("exit0", "exit3"):
        sys.exit(int(mode[-1]))
    if mode == "fewer":
        break
    if mode == "hang":
        threading.Event().wait()
    if mode == "sleep":
        time.sleep(600)
    if mode in ("os_exit0", "os_exit1", "sigkill", "sigterm", "sigterm_parent",
                "sigkill_parent", "sigterm_exit"):
        threading.Thread(target=fault_in_a_thread, daemon=True).start()
if mode == "none" and rank == 0:
    time.sleep(1.0)
say(f"STEPS {rank} {step + 1}")
