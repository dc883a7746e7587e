"""A real Slurm test cluster on one machine: munged, slurmctld and one slurmd per network namespace.

Each node ``<prefix>-nK`` is a network namespace with address 198.19.0.K+1/24 on ``eth0``,
one end of a veth pair whose other end is a port of the bridge ``br0`` in ``<prefix>-hub``
(as in netcluster, but in 198.19.0.0/24 and with a prefix, ``slurm-<hex>``, that no
netcluster name can produce: those have no hyphen). Node 0 is also the head node: slurmctld
runs there. Every daemon runs in a UTS namespace of its own whose host name is the node's
name, so slurmctld recognizes itself as ``SlurmctldHost`` and PRRTE sees distinct hosts.
munged runs in the host's network namespace (it only serves a Unix socket in the cluster's
directory). Client commands (sbatch, scontrol, sinfo) run in node 0's namespace.

Nothing outside the cluster's private directory (a fresh temporary directory) and its own
namespaces is written: ``slurm.conf`` and ``cgroup.conf`` come from templates in
``jobmgr-adapters/slurm/``, the munge key is random, spool, state, pid and log files are
per cluster. ``SlurmCluster.stop()`` kills every process in the namespaces and every
daemon, deletes the namespaces and the directory; it is safe to call more than once and
after a failed start.

Usage::

    with SlurmCluster.start(nodes=3, cpus=2) as cluster:
        job = cluster.sbatch(script)
        state = cluster.wait(job, timeout=60)   # scontrol show job fields
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ftslide.errors import FtslideError
from ftslide.toolchain.mpi import processes_with
from ftslide.toolchain.native import REPO
from ftslide.jobmgr.cluster import kill_namespace, remove_session_dirs

TEMPLATES = REPO / "jobmgr-adapters" / "slurm"
PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged")
SUBNET = "198.19.0.0/24"
# Job states after which a job no longer runs (scontrol's JobState).
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


def address(node: int) -> str:
    return f"198.19.0.{node + 1}"


def installed() -> bool:
    return all(os.access(path, os.X_OK) for path in DAEMONS)


def ensure_installed() -> None:
    """Install slurm-wlm and munge with apt-get when a daemon is missing (needs root)."""
    if installed():
        return
    if os.geteuid() != 0:
        raise FtslideError(f"Slurm is not installed: apt-get install {' '.join(PACKAGES)} (as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]):
        result = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise FtslideError(f"installing {' '.join(PACKAGES)} failed ({' '.join(cmd)}): {last}")
    if not installed():
        raise FtslideError(f"{' '.join(PACKAGES)} installed, but {', '.join(DAEMONS)} are not all there")


def _run(cmd: Sequence[str], timeout: float = 30, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=env,
                                stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FtslideError(f"{' '.join(cmd)} did not finish within {timeout:.0f} s") from None
    if check and result.returncode != 0:
        message = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise FtslideError(f"{' '.join(cmd)} failed: {message[-1] if message else 'exit ' + str(result.returncode)}")
    return result


@dataclass
class SlurmCluster:
    """A running test cluster; see the module docstring."""

    prefix: str
    nodes: int
    cpus: int
    directory: Path
    namespaces: list[str] = field(default_factory=list)
    daemons: list[subprocess.Popen] = field(default_factory=list)
    marker: str = ""
    # slurmd of each node, and daemons that were killed on purpose (kill_node)
    slurmd: dict[int, subprocess.Popen] = field(default_factory=dict)
    killed: set[int] = field(default_factory=set)

    # ---- set-up ------------------------------------------------------------------

    @classmethod
    def start(cls, nodes: int = 3, cpus: int = 2, slurmd_timeout: int = 10,
              ready_timeout: float = 60) -> "SlurmCluster":
        """Start munged, slurmctld and ``nodes`` slurmd; return once sinfo shows every node idle."""
        if os.geteuid() != 0:
            raise FtslideError("a Slurm test cluster needs root (network namespaces, daemons as root)")
        if not 1 <= nodes <= 200 or not 1 <= cpus <= 256:
            raise FtslideError("a Slurm test cluster has 1-200 nodes of 1-256 CPUs")
        ensure_installed()
        token = uuid.uuid4().hex[:6]
        directory = Path(tempfile.mkdtemp(prefix=f"ftslide-slurm-{token}-"))
        cluster = cls(prefix=f"slurm-{token}", nodes=nodes, cpus=cpus, directory=directory,
                      marker=f"FTSLIDE_SLURM_CLUSTER={token}")
        try:
            cluster._write_files(slurmd_timeout)
            cluster._make_network()
            cluster._start_daemons()
            cluster.wait_idle(ready_timeout)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def __enter__(self) -> "SlurmCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def node_name(self, node: int) -> str:
        return f"{self.prefix}-n{node}"

    @property
    def hub(self) -> str:
        return f"{self.prefix}-hub"

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.directory / "munge-socket" / "munge.sock"

    def _write_files(self, slurmd_timeout: int) -> None:
        d = self.directory
        # munged insists that every directory above its socket is executable by all.
        d.chmod(0o755)
        for sub in ("state", "spool", "run", "log", "munge-socket"):
            (d / sub).mkdir(mode=0o755)
        (d / "munge").mkdir(mode=0o700)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        node_lines = "\n".join(f"NodeName={self.node_name(k)} NodeAddr={address(k)} CPUs={self.cpus} State=UNKNOWN"
                               for k in range(self.nodes))
        text = (TEMPLATES / "testcluster.conf.in").read_text()
        for name, value in {"@NAME@": self.prefix.replace("-", ""), "@HEAD@": self.node_name(0),
                            "@HEAD_ADDR@": address(0), "@DIR@": str(d), "@CPUS@": str(self.cpus),
                            "@SLURMD_TIMEOUT@": str(slurmd_timeout), "@NODES@": node_lines,
                            "@PARTITION@": "test"}.items():
            text = text.replace(name, value)
        self.conf.write_text(text)
        shutil.copyfile(TEMPLATES / "testcluster-cgroup.conf", d / "cgroup.conf")

    def _make_network(self) -> None:
        existing = set(_run(["ip", "netns", "list"]).stdout.split())
        wanted = [self.hub, *(self.node_name(k) for k in range(self.nodes))]
        clash = [ns for ns in wanted if ns in existing]
        if clash:
            raise FtslideError(f"network namespace {clash[0]} already exists")
        self.namespaces.append(self.hub)  # recorded first, so stop() removes a half-made one
        _run(["ip", "netns", "add", self.hub])
        _run(["ip", "-n", self.hub, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", self.hub, "link", "set", "br0", "up"])
        for k in range(self.nodes):
            netns = self.node_name(k)
            self.namespaces.append(netns)
            _run(["ip", "netns", "add", netns])
            _run(["ip", "link", "add", "eth0", "netns", netns, "type", "veth", "peer", "name", f"n{k}",
                  "netns", self.hub])
            _run(["ip", "-n", self.hub, "link", "set", f"n{k}", "master", "br0", "up"])
            _run(["ip", "-n", netns, "addr", "add", f"{address(k)}/24", "dev", "eth0"])
            _run(["ip", "-n", netns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", netns, "link", "set", "lo", "up"])

    def environment(self) -> dict[str, str]:
        """Environment for Slurm commands and daemons of this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf), self.marker.split("=")[0]: self.marker.split("=")[1]}

    def _spawn(self, argv: list[str], log: str) -> subprocess.Popen:
        with open(self.directory / "log" / log, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    env=self.environment(), start_new_session=True)
        self.daemons.append(proc)
        return proc

    def _start_slurmd(self, node: int) -> None:
        self.slurmd[node] = self._spawn(
            self._in_node(node, ["/usr/sbin/slurmd", "-D", "-N", self.node_name(node), "-f", str(self.conf)]),
            f"slurmd-{node}.out")

    def _in_node(self, node: int, argv: list[str]) -> list[str]:
        """argv run in node ``node``'s network namespace, in a UTS namespace named after the node."""
        name = self.node_name(node)
        return ["ip", "netns", "exec", name, "unshare", "--uts", "sh", "-c",
                'hostname "$0" && exec "$@"', name, *argv]

    def _start_daemons(self) -> None:
        d = self.directory
        self._spawn(["/usr/sbin/munged", "--foreground", f"--socket={self.munge_socket}",
                     f"--key-file={d / 'munge' / 'munge.key'}", f"--pid-file={d / 'munge' / 'munged.pid'}",
                     f"--log-file={d / 'munge' / 'munged.log'}", f"--seed-file={d / 'munge' / 'seed'}"],
                    "munged.out")
        self._wait_for(lambda: self.munge_socket.is_socket(), 10, "munged did not create its socket")
        self._spawn(self._in_node(0, ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)]), "slurmctld.out")
        for k in range(self.nodes):
            self._start_slurmd(k)

    def _wait_for(self, ready, timeout: float, message: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p for p in self.daemons if p.pid not in self.killed and p.poll() is not None]
            if dead:
                raise FtslideError(f"{message}: {' '.join(map(str, dead[0].args[-6:]))} exited with "
                                   f"{dead[0].returncode} (logs in {self.directory / 'log'})")
            if time.monotonic() > deadline:
                raise FtslideError(f"{message} within {timeout:.0f} s (logs in {self.directory / 'log'})")
            time.sleep(0.2)

    def node_states(self) -> dict[str, str]:
        """Node name -> sinfo state (idle, alloc, down*, ...); empty while slurmctld does not answer."""
        result = self.command(["sinfo", "-h", "-N", "-o", "%N %t"], check=False, timeout=10)
        if result.returncode != 0:
            return {}
        return dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)

    def wait_idle(self, timeout: float = 60) -> None:
        names = {self.node_name(k) for k in range(self.nodes)}
        self._wait_for(lambda: (s := self.node_states()) and all(s.get(n) == "idle" for n in names), timeout,
                       "the Slurm nodes did not all become idle")

    # ---- jobs --------------------------------------------------------------------

    def command(self, argv: list[str], check: bool = True, timeout: float = 30,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command in node 0 (the head node)."""
        return _run(["ip", "netns", "exec", self.node_name(0), *argv], timeout=timeout,
                    env={**self.environment(), **(env or {})}, check=check)

    def sbatch(self, script: Path, env: dict[str, str] | None = None, args: Sequence[str] = ()) -> int:
        """Submit ``script`` (the job inherits this process's environment plus ``env``); return the job id."""
        out = self.command(["sbatch", "--parsable", *args, str(script)], env=env).stdout.strip()
        return int(out.split(";")[0])

    def job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job`` as a dict (JobState, ExitCode, NodeList, StdOut, ...)."""
        out = self.command(["scontrol", "show", "job", "-o", str(job_id)]).stdout
        fields = {}
        for item in out.split():
            if "=" in item:
                key, value = item.split("=", 1)
                fields.setdefault(key, value)
        return fields

    def wait(self, job_id: int, timeout: float = 60) -> dict[str, str]:
        """Wait until the job has ended; return its scontrol fields. Cancels it on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            fields = self.job(job_id)
            if fields.get("JobState") in FINAL_STATES:
                return fields
            if time.monotonic() > deadline:
                self.command(["scancel", str(job_id)], check=False)
                raise FtslideError(f"job {job_id} did not end within {timeout:.0f} s "
                                   f"(state {fields.get('JobState')}); cancelled")
            time.sleep(0.3)

    def kill_node(self, node: int) -> int:
        """A whole-node failure: SIGKILL everything in node ``node`` (slurmd, steps, daemons, ranks)."""
        if node in self.slurmd:
            self.killed.add(self.slurmd[node].pid)
        return kill_namespace(self.node_name(node))

    def restart_node(self, node: int, timeout: float = 60) -> None:
        """Start node ``node``'s slurmd again after kill_node and wait until every node is idle."""
        self.kill_node(node)  # nothing of the old node may linger
        self._start_slurmd(node)
        # ReturnToService=2 puts a DOWN node back in service once its slurmd registers; a node
        # that went down while it was still allocated may need an explicit resume.
        deadline = time.monotonic() + timeout
        while self.node_states().get(self.node_name(node)) != "idle" and time.monotonic() < deadline:
            if self.node_states().get(self.node_name(node), "").startswith(("down", "drain", "fail")):
                self.command(["scontrol", "update", f"nodename={self.node_name(node)}", "state=resume"],
                             check=False)
            time.sleep(0.5)
        self.wait_idle(max(1.0, deadline - time.monotonic()))

    def mpirun_options(self) -> list[str]:
        """mpirun options for jobs on this cluster: PRRTE and MPI traffic on the cluster network only."""
        return ["--prtemca", "oob_tcp_if_include", SUBNET,
                "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", SUBNET]

    # ---- tear-down ---------------------------------------------------------------

    def stop(self) -> None:
        """Kill every process of the cluster, delete its namespaces and its directory."""
        for netns in reversed(self.namespaces):
            kill_namespace(netns)
        for proc in self.daemons:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
        for _ in range(20):  # anything else the daemons started (munged's helpers, ...)
            pids = processes_with(self.marker)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for netns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
        remove_session_dirs([self.node_name(node) for node in range(self.nodes)])
        self.namespaces.clear()
        self.daemons.clear()
        shutil.rmtree(self.directory, ignore_errors=True)
