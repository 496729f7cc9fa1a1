"""Fuzz driver for tests/io/test_reader_fuzz.py (issue 30, item 9): mutates valid files of
each reader (Paddle ProgramDesc, Paddle tensor stream, Paddle pickle, numbaflow's arrays
file) for a bounded time under a memory limit, and checks that each mutant loads or raises
FileFormatError naming the file: no other exception, no hang (an alarm per case), no
allocation past the limit (a MemoryError is a failure).

    python reader_fuzz_driver.py SECONDS_PER_READER SEED DIR
"""
import os
import random
import resource
import signal
import sys

resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

import numpy as np  # noqa: E402

import numbaflow as paddle  # noqa: E402
import numbaflow.static as static  # noqa: E402
from numbaflow.formats import paddle_model  # noqa: E402
from numbaflow.graph.serialize import FileFormatError  # noqa: E402
from numbaflow.persistence import arrays, paddle_pickle  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "paddle", "mlp")
INTERESTING = [0, 1, 0x7F, 0x80, 0xFF]


def mutate(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if not data:
            break
        i = rng.randrange(len(data))
        if kind < 0.4:
            data[i] ^= 1 << rng.randrange(8)
        elif kind < 0.7:
            data[i] = rng.choice(INTERESTING)
        elif kind < 0.8:
            del data[i:]
        elif kind < 0.9:
            j = rng.randrange(len(data))
            data[i:i] = data[j:j + rng.randint(1, 64)]
        else:
            data[i:i + 8] = rng.choice([b"\xff" * 8, b"\x00" * 8, b"\x7f" + b"\xff" * 7])
    return bytes(data)


def readers(tmp):
    with open(os.path.join(FIXTURES, "infer.pdmodel"), "rb") as f:
        model = f.read()
    with open(os.path.join(FIXTURES, "infer.pdiparams"), "rb") as f:
        params = f.read()
    with open(os.path.join(FIXTURES, "state.pdparams"), "rb") as f:
        pickled = f.read()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        static.nn.fc(static.data("x", [None, 3], "float32"), 4)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup)
    static.save(main, os.path.join(tmp, "ck"))
    with open(os.path.join(tmp, "ck.pdparams"), "rb") as f:
        npz = f.read()

    def read_npz(data):
        path = os.path.join(tmp, "mutant.pdparams")
        with open(path, "wb") as f:
            f.write(data)
        arrays.read_arrays(path)

    def read_pickle(data):
        paddle_pickle.paddle_state(paddle_pickle.load_pickle(data, "m.pdparams"), "m.pdparams")
    return {
        "pdmodel": (model, lambda d: paddle_model.read_model(d, params, "m.pdmodel",
                                                            "m.pdiparams")),
        "pdiparams": (params, lambda d: paddle_model.read_model(model, d, "m.pdmodel",
                                                               "m.pdiparams")),
        "pickle": (pickled, read_pickle),
        "npz": (npz, read_npz),
    }


def on_alarm(signum, frame):
    raise TimeoutError("a case ran past 20 s")


def main():
    budget, seed, tmp = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    import time
    signal.signal(signal.SIGALRM, on_alarm)
    stats = {}
    for name, (original, read) in readers(tmp).items():
        rng = random.Random(f"{seed}-{name}")
        end, cases, loaded = time.monotonic() + budget, 0, 0
        while time.monotonic() < end:
            data = mutate(original, rng)
            signal.alarm(20)
            try:
                read(data)
                loaded += 1
            except FileFormatError as e:
                if "m.pd" not in str(e) and "mutant" not in str(e):
                    print(f"FAIL {name}: the refusal does not name the file: {e}")
                    return 1
            except BaseException as e:
                import traceback
                traceback.print_exc(limit=-4)
                print(f"FAIL {name} case {cases}: {type(e).__name__}: {e}")
                with open(os.path.join(tmp, f"crash-{name}"), "wb") as f:
                    f.write(data)
                return 1
            finally:
                signal.alarm(0)
            cases += 1
        stats[name] = (cases, loaded)
    print("OK", stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
