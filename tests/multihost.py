"""Two hosts on one machine, for tests/distributed/test_multihost.py: two network namespaces joined by
a veth pair (10.99.0.1 and 10.99.0.2 by default), and the venv's Hydra `mpiexec` run in
the first with one rank per host, so that the ranks talk TCP across the pair.

How the ranks get there: mpiexec runs inside host 1's namespace with a hosts file naming
both addresses and `-launcher ssh -launcher-exec <our script>`; Hydra starts its proxy for
host 1 itself and calls the script as `script -x 10.99.0.2 "<proxy command>"` for host 2;
the script runs that command under `ip netns exec <host 2's namespace>`. MPICH's UCX
netmod is held to TCP over the veth (UCX_TLS=tcp, UCX_NET_DEVICES=the veth), so no shared
memory path joins the ranks: taking the veth down cuts them apart.

Disks: each host's launch mounts a private tmpfs on `Hosts.local_dir` (inside the mount
namespace `ip netns exec` makes), so a file written there on one host is absent on the
other, as on two machines without a shared file system; the rest of the file system
(the checkout, the venv) is shared, as a cluster's home directory would be.

Needs root (namespaces, links, mounts); `Hosts.create` raises `Unavailable` with the
reason otherwise, which the tests turn into a skip. Everything made is removed by
`Hosts.close` (the fixture's finalizer), ranks included.
"""
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from mpirun import MPIEXEC, ROOT, mpi_env

LAUNCHER = """#!/bin/sh
# Hydra's ssh launcher, without ssh: run the proxy command in the named host's namespace,
# with that host's private disk mounted.
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac
done
host="$1"; shift
case "$host" in
{cases}
  *) echo "launcher: unknown host $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" sh -c "mount -t tmpfs nf-local {local} && exec $*"
"""


class Unavailable(RuntimeError):
    """Two namespaces cannot be made here (not root, no `ip`, no netns support)."""


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20,
                          check=check)


class Hosts:
    """Two namespace 'hosts'; `addresses[i]` is host i's IP. Use `create()`."""

    def __init__(self, tag, subnet="10.99.0"):
        self.names = [f"nfmh{tag}a", f"nfmh{tag}b"]
        self.addresses = [f"{subnet}.1", f"{subnet}.2"]
        self.iface = "nfv"
        self.dir = Path(tempfile.mkdtemp(prefix="numbaflow-multihost-"))
        self.local_dir = self.dir / "local"      # each host's private disk (a tmpfs)
        self.local_dir.mkdir()
        self.made = []
        self.procs = []

    @classmethod
    def create(cls):
        if os.geteuid() != 0:
            raise Unavailable("network namespaces need root (CI runs these tests as root)")
        if shutil.which("ip") is None:
            raise Unavailable("no `ip` command (iproute2)")
        if not MPIEXEC.exists():
            raise Unavailable(f"no mpiexec at {MPIEXEC} (pip install mpich)")
        hosts = cls(os.getpid() % 100000)
        try:
            hosts._setup()
        except (subprocess.CalledProcessError, OSError) as e:
            err = getattr(e, "stderr", "") or str(e)
            hosts.close()
            raise Unavailable(f"could not make the namespaces: {err.strip()}") from None
        return hosts

    def _setup(self):
        a, b = self.names
        for ns in self.names:
            _ip("netns", "add", ns)
            self.made.append(ns)
        _ip("link", "add", a + "x", "type", "veth", "peer", "name", b + "x")
        for ns, end, addr in zip(self.names, (a + "x", b + "x"), self.addresses):
            _ip("link", "set", end, "netns", ns)
            _ip("-n", ns, "link", "set", end, "name", self.iface)
            _ip("-n", ns, "addr", "add", addr + "/24", "dev", self.iface)
            _ip("-n", ns, "link", "set", self.iface, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        cases = "\n".join(f"  {addr}) ns={ns} ;;" for addr, ns in zip(self.addresses,
                                                                      self.names))
        self.launcher = self.dir / "launcher"
        self.launcher.write_text(LAUNCHER.format(cases=cases, local=self.local_dir))
        self.launcher.chmod(0o755)
        self.hostfile = self.dir / "hosts"
        self.hostfile.write_text("".join(f"{addr}:1\n" for addr in self.addresses))

    def link(self, host, up):
        """Take host `host`'s network (its end of the pair) down or up."""
        _ip("-n", self.names[host], "link", "set", self.iface, "up" if up else "down")

    def env(self, **extra):
        env = mpi_env()
        env.update(UCX_TLS="tcp", UCX_NET_DEVICES=self.iface, FI_PROVIDER="tcp",
                   FI_TCP_IFACE=self.iface, HYDRA_IFACE=self.iface)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def start(self, args, env=None):
        """`mpiexec` (in host 0's namespace) of `python args...`, one rank per host;
        returns the Popen (text stdout/stderr pipes, own process group)."""
        cmd = ["ip", "netns", "exec", self.names[0], str(MPIEXEC), "-launcher", "ssh",
               "-launcher-exec", str(self.launcher), "-f", str(self.hostfile),
               "-iface", self.iface, "-n", "2", os.environ.get("PYTHON", _python()), *args]
        p = subprocess.Popen(cmd, cwd=ROOT, env=env or self.env(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def run(self, args, timeout, env=None):
        """start + wait: (returncode, stdout, stderr, seconds); past `timeout` the job is
        killed and (None, stdout, stderr, seconds) returned."""
        t = time.perf_counter()
        p = self.start(args, env)
        try:
            out, err = p.communicate(timeout=timeout)
            return p.returncode, out, err, time.perf_counter() - t
        except subprocess.TimeoutExpired:
            self._kill(p)
            out, err = p.communicate()
            return None, out, err, time.perf_counter() - t

    def _kill(self, p):
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass

    def close(self):
        """Kill what we started (every process left in our namespaces too), delete the
        namespaces (the veth pair goes with them) and the files."""
        for p in self.procs:
            if p.poll() is None:
                self._kill(p)
                p.wait(timeout=10)
        for ns in self.made:
            pids = _ip("netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            _ip("netns", "delete", ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def _python():
    import sys
    return sys.executable
