"""Every reader of files from outside under a bounded fuzz (issue 30, item 9): mutated
valid files (bit flips, interesting bytes, truncations, splices) of the Paddle ProgramDesc,
tensor stream and pickle readers and of numbaflow's arrays file load or raise
FileFormatError naming the file, in a child with a 3 GiB address-space limit and an alarm
per case (tests/reader_fuzz_driver.py). NUMBAFLOW_FUZZ_SECONDS sets the time per reader."""
import os
import subprocess
import sys

import pytest
from locations import ROOT, TESTS

DRIVER = os.path.join(str(TESTS), "reader_fuzz_driver.py")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_readers_survive_mutated_files(tmp_path):
    seconds = os.environ.get("NUMBAFLOW_FUZZ_SECONDS", "8")
    seed = os.environ.get("NUMBAFLOW_FUZZ_SEED", "30")
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, DRIVER, seconds, seed, str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=500)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
