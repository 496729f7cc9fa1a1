"""A checkpoint writer for tests/io/test_checkpoint_interrupts.py (its `Case`, found through
TESTS_DIR): in directory argv[1] it saves 2, stopping itself (SIGSTOP, as a job scheduler
suspends a job) just before or just after the save's commit (argv[2] `before-commit`,
`after-commit`), or saves 2, 3, 4, ... until killed (`loop`)."""
import os, signal, sys
import numpy as np
sys.path[:0] = os.environ["TESTS_DIR"].split(os.pathsep)
import test_checkpoint_interrupts as t
case = t.Case("checkpoint", sys.argv[1])
real, where = os.replace, sys.argv[2]

def replace(src, dst, **kw):       # stop (as a job scheduler suspends a job) mid-save
    if where == "before-commit" and str(dst).endswith(".commit"):
        os.kill(os.getpid(), signal.SIGSTOP)
    real(src, dst, **kw)
    if where == "after-commit" and str(dst).endswith(".commit"):
        os.kill(os.getpid(), signal.SIGSTOP)
os.replace = replace
if where == "loop":                # save 2, 3, 4, ... until killed
    os.replace = real
    k = 2
    while True:
        case.save(k)
        k += 1
case.save(2)
