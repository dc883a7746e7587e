"""Tell a running job that the job manager declared one of its nodes or processes dead.

``ftslide notify`` is what a job manager's health hook calls: it finds the job's
mpirun/prterun, reads its PMIx rendezvous file for the server URI, and runs
``ftslide-notify`` (jobmgr-adapters/prrte/notify.c, a PMIx tool built with the project's
Open MPI). For a node, the tool asks mpirun (PMIx_Job_control, handled by our PRRTE patch prrte/08)
to treat the node's daemon as lost; for a rank, it raises the event PRRTE itself sends when a
process dies, so ULFM marks that rank failed at once (docs/nodeloss.md).

Errors and cost: FtslideError (one line) when there is no such job, rank or node, or the tool
cannot be built or fails. ``notify`` costs a compile of the tool the first time (seconds) and one
process per call; the rest read ``/proc`` (O(processes)).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from . import cluster as netcluster
from ..errors import FtslideError
from ..toolchain.mpi import compile_program
from ..toolchain.native import REPO
from ..toolchain.ompi import require_prefix

__all__ = ["running_jobs", "server_uri", "choose_job", "node_names", "notify"]

TOOL_SOURCE = REPO / "jobmgr-adapters" / "prrte" / "notify.c"


def running_jobs() -> list[int]:
    """Pids of the prterun processes (mpirun execs prterun) of this machine."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() == "prterun":
                pids.append(int(proc.name))
        except OSError:
            continue
    return sorted(pids)


def server_uri(pid: int) -> str:
    """The PMIx server URI of prterun ``pid``, from its rendezvous file pmix.<host>.tool.<pid>."""
    bases = {Path(os.environ.get("TMPDIR", "/tmp")), Path("/tmp")}
    try:  # the session directory base the job was launched with (ftslide run sets one per launch)
        job_env = dict(entry.split(b"=", 1) for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                       if b"=" in entry)
    except OSError:
        job_env = {}
    for variable in (b"PRTE_MCA_prte_tmpdir_base", b"TMPDIR"):
        if variable in job_env:
            bases.add(Path(job_env[variable].decode(errors="replace")))
    for base in bases:
        for path in base.glob(f"prterun.*.{pid}.*/pmix.*.tool.{pid}"):
            try:
                uri = path.read_text().splitlines()[0].strip()
            except (OSError, IndexError):
                continue
            if uri:
                return uri
    raise FtslideError(f"job {pid} has no PMIx rendezvous file (pmix.*.tool.{pid}) under "
                       f"{', '.join(sorted(map(str, bases)))}: is it an mpirun of this machine's user?")


def choose_job(pid: int | None, cluster: netcluster.Cluster | None) -> int:
    """The prterun pid to notify: ``pid`` if it is a running job (in ``cluster``'s node 0 when
    given), else the only running one. FtslideError when there is none, or several and no ``pid``."""
    jobs = running_jobs()
    if cluster is not None:
        inside = set(netcluster.namespace_pids(cluster.namespace(0)))
        jobs = [job for job in jobs if job in inside]
    if pid is not None:
        if pid not in jobs:
            where = f" in cluster {cluster.name!r}" if cluster else ""
            raise FtslideError(f"no running job with pid {pid}{where} (running: "
                               f"{', '.join(map(str, jobs)) or 'none'})")
        return pid
    if not jobs:
        where = f" in cluster {cluster.name!r}" if cluster else ""
        raise FtslideError(f"no running job{where} (no prterun process)")
    if len(jobs) > 1:
        raise FtslideError(f"several jobs are running (pids {', '.join(map(str, jobs))}): choose one with --pid")
    return jobs[0]


def node_names(node: str, cluster: netcluster.Cluster | None) -> str:
    """The names mpirun may know node ``node`` by, comma-separated."""
    if cluster is None:
        return node
    try:
        number = int(node)
    except ValueError:
        raise FtslideError(f"--node must be a node number 0..{cluster.nodes - 1} with --cluster, "
                           f"not {node!r}") from None
    if not 0 <= number < cluster.nodes:
        raise FtslideError(f"cluster {cluster.name!r} has no node {number}: nodes are 0..{cluster.nodes - 1}")
    if number == 0:
        raise FtslideError("node 0 runs mpirun: its loss ends the job")
    return f"{cluster.namespace(number)},{netcluster.address(number)}"


def notify(*, rank: int | None = None, node: str | None = None, pid: int | None = None,
           cluster_name: str | None = None, timeout: float = 30) -> tuple[int, str]:
    """Declare ``rank`` or ``node`` of a running job dead; return (job pid, what the tool printed:
    the job namespace for a rank, the node's names for a node)."""
    if (rank is None) == (node is None):
        raise FtslideError("give exactly one of --rank and --node")
    if rank is not None and rank < 0:
        raise FtslideError(f"--rank must be >= 0, not {rank}")
    cluster = netcluster.load(cluster_name) if cluster_name else None
    names = node_names(node, cluster) if node is not None else None
    job = choose_job(pid, cluster)
    uri = server_uri(job)
    tool = compile_program(require_prefix(), [TOOL_SOURCE], name="ftslide-notify",
                           flags=("-O2", "-Wall", "-Werror"), link=("-lpmix",))
    argv = [str(tool), uri, *(("node", names) if names is not None else ("rank", str(rank)))]
    if cluster is not None:  # the server listens on node 0's cluster address
        argv = ["ip", "netns", "exec", cluster.namespace(0), *argv]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FtslideError(f"ftslide-notify got no answer from job {job} within {timeout:.0f} s") from None
    if result.returncode != 0:
        message = (result.stderr.strip().splitlines() or ["failed"])[-1].removeprefix("ftslide-notify: ")
        raise FtslideError(f"job {job}: {message}")
    return job, result.stdout.strip()
