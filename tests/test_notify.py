"""ftslide notify: a job manager declares a rank dead (docs/nodeloss.md).

On one machine, np 4 of tests/mpi/nodeloss.c. Once rank 0 reports ``loop=running``, world rank 2
is frozen with SIGSTOP (a hung process: nothing closes, ULFM notices nothing), and
``ftslide notify --rank 2`` declares it dead. The three others must then see the failure, shrink to
{0, 1, 3}, run 20 more allreduces and finalize; after that the test kills the frozen rank (as the job
manager would fence it) and mpirun must exit 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ftslide.toolchain.mpi import kill_processes, processes_with
from ftslide.jobmgr.notify import running_jobs
from mpiharness import parse_run
from test_build import assert_one_line_error, ftslide

REPO = Path(__file__).resolve().parent.parent


def wait_for(path: Path, text: str, count: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.read_text(errors="replace").count(text) >= count:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.mpi
@pytest.mark.timeout(120)
def test_rank_declared_dead_reaches_ulfm(mpi_program, tmp_path):
    program = mpi_program("nodeloss.c")
    marker = f"FTSLIDE_RUN_ID={uuid.uuid4().hex}"
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        job = subprocess.Popen([sys.executable, "-m", "ftslide", "run", "-np", "4", str(program), "20"],
                               stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=REPO,
                               env={**os.environ, "FTSLIDE_RUN_ID": marker.split("=", 1)[1]},
                               start_new_session=True)
    frozen = None
    try:
        assert wait_for(out, "loop=running", 1, 60), out.read_text() + err.read_text()
        ranks = processes_with(marker, "OMPI_COMM_WORLD_RANK=2")
        assert len(ranks) == 1, ranks
        frozen = ranks[0]
        os.kill(frozen, signal.SIGSTOP)
        mpirun = [pid for pid in running_jobs() if pid in processes_with(marker)]
        assert len(mpirun) == 1, mpirun
        result = ftslide("notify", "--rank", "2", "--pid", str(mpirun[0]))
        assert result.returncode == 0 and "rank 2 declared dead" in result.stdout, result.stderr
        assert wait_for(out, "finalized=1", 3, 60), out.read_text() + err.read_text()
        os.kill(frozen, signal.SIGKILL)
        returncode = job.wait(timeout=30)
    finally:
        if frozen is not None:
            try:
                os.kill(frozen, signal.SIGKILL)
            except ProcessLookupError:
                pass
        kill_processes(job.pid, marker)
        job.wait()
    run = parse_run(returncode, out.read_text(), err.read_text())
    survivors = [0, 1, 3]
    assert set(run.values("error", survivors).values()) <= {"MPIX_ERR_PROC_FAILED", "MPIX_ERR_REVOKED"}, run.describe()
    assert set(run.values("left_out", survivors).values()) == {"2"}, run.describe()
    assert set(run.values("finalized", survivors).values()) == {"1"}, run.describe()
    assert run.value(2, "finalized") is None and returncode == 0, run.describe()


def test_notify_bad_inputs():
    if running_jobs():
        pytest.skip("another mpirun is running on this machine")
    assert_one_line_error(ftslide("notify", "--rank", "1"), "no running job")
    assert_one_line_error(ftslide("notify", "--rank", "-1"), "--rank must be >= 0")
    assert_one_line_error(ftslide("notify", "--rank", "1", "--pid", "1"), "no running job with pid 1")
    assert_one_line_error(ftslide("notify", "--rank", "1", "--cluster", "nosuchcluster"), "nosuchcluster")
    assert ftslide("notify").returncode == 2
