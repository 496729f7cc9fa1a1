"""supervisor.wait_forwarded with a reader of this process's stderr pipe that reads after
1 s (prints the wait and whether the report was read), then with no reader (prints the
wait, bounded at 0.5 s). Run by tests/faults/test_fault_mpi.py."""
import os, sys, threading, time
from numbaflow.distributed import supervisor
r, w = os.pipe()
os.dup2(w, 2)
os.write(2, b'[rank 1/2] the report\n')
got = []
threading.Thread(target=lambda: (time.sleep(1.0), got.append(os.read(r, 100)))).start()
t = time.monotonic()
supervisor.wait_forwarded(bound=30)
waited = time.monotonic() - t
print(round(waited, 2), got == [b'[rank 1/2] the report\n'])
os.write(2, b'unread')
t = time.monotonic()
supervisor.wait_forwarded(bound=0.5)
print(round(time.monotonic() - t, 2))
