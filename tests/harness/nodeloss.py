"""Run an MPI job across an emulated cluster and take nodes away while it runs (tests, bench).

The job is ``ftslide run --cluster NAME [options] -np N PROGRAM ARGS``. Once ``trigger_count``
lines starting with ``trigger`` appeared on its stdout, and ``delay`` seconds later, the nodes in
``nodes`` are taken away in one of two ways:

- ``"kill"``: every process of those nodes is SIGKILLed at once (netcluster.kill_nodes), as in a
  power loss; PRRTE sees its daemons' connections close.
- ``"notify"``: every process of those nodes is SIGSTOPped (a hung node: its connections stay open
  and nothing is noticed), then ``ftslide notify --node K`` declares each node dead; once the job
  ended the stopped processes are killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ftslide.jobmgr import cluster as netcluster
from ftslide.errors import FtslideError
from ftslide.toolchain.mpi import kill_processes
from ftslide.toolchain.native import REPO
from ftslide.jobmgr.notify import notify


@dataclass
class NodeLossRun:
    returncode: int | None  # None: the job hung and was killed after the timeout
    stdout: str
    stderr: str
    taken_at: float  # wall-clock time (time.time()) just before the nodes were taken away


def stop_nodes(cluster: str, nodes: list[int]) -> list[int]:
    """SIGSTOP every process of ``nodes``; return their pids."""
    loaded = netcluster.load(cluster)
    pids = [pid for node in nodes for pid in netcluster.namespace_pids(loaded.namespace(node))]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass
    return pids


def run(cluster: str, program: Path, np: int, args: list[str], nodes: list[int], *, how: str = "kill",
        trigger: str = "ftcheck rank=0 loop=running", trigger_count: int = 1, delay: float = 0.0,
        mpirun_options: tuple[str, ...] = (), timeout: float = 60) -> NodeLossRun:
    if how not in ("kill", "notify"):
        raise FtslideError(f"unknown way to take nodes away: {how!r} (kill or notify)")
    marker = uuid.uuid4().hex
    job = subprocess.Popen(
        [sys.executable, "-m", "ftslide", "run", "--cluster", cluster, *mpirun_options, "-np", str(np),
         str(program), *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "FTSLIDE_RUN_ID": marker}, cwd=REPO, start_new_session=True)
    out: list[str] = []
    err: list[str] = []
    triggered = threading.Event()

    def read_stdout() -> None:
        seen = 0
        for line in job.stdout:
            out.append(line)
            if line.startswith(trigger):
                seen += 1
                if seen >= trigger_count:
                    triggered.set()

    readers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=lambda: err.extend(job.stderr), daemon=True)]
    for reader in readers:
        reader.start()
    stopped: list[int] = []
    returncode = None
    try:
        if not triggered.wait(timeout):
            raise FtslideError(f"the job never printed {trigger!r}:\n{''.join(out)}{''.join(err)[-2000:]}")
        time.sleep(delay)
        taken_at = time.time()
        if how == "kill":
            netcluster.kill_nodes(cluster, nodes)
        else:
            stopped = stop_nodes(cluster, nodes)
            for node in nodes:
                notify(node=str(node), cluster_name=cluster)
        try:
            returncode = job.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    finally:
        kill_processes(job.pid, f"FTSLIDE_RUN_ID={marker}")
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        job.wait()
        for reader in readers:
            reader.join(10)
    return NodeLossRun(returncode, "".join(out), "".join(err), taken_at)
