"""Compile MPI C and Fortran programs against the project's build, run them (and Python ones) with
fault injection, read reports.

Fault injection is by named kill points (ompi-ulfm/include/ftslide_killpoint.h):
``kill={2: "after_barrier"}`` makes world rank 2 SIGKILL itself when it reaches
that point. Programs report observations as ``ftcheck rank=R KEY=VALUE`` lines
(tests/mpi/ftcheck.h), collected per rank in ``MpiRun.reports``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pytest

from ftslide.toolchain import mpi

MPI_SOURCES = Path(__file__).parent / "mpi"
# Modules a Fortran program of tests/mpi is compiled with (ftslide_killpoint comes with mpifort's
# compile_program), and where Python programs find ftcheck.py.
FORTRAN_MODULES = (MPI_SOURCES / "fortran" / "ftcheck.f90",)
PYTHON_HELPERS = MPI_SOURCES / "python"
# The ULFM error names the programs report, and the two module sets a conformance test runs under:
# ours (the build's defaults) and upstream's agreement and revoke.
PF = "MPIX_ERR_PROC_FAILED"
REVOKED = "MPIX_ERR_REVOKED"
OK = "MPI_SUCCESS"
MODULES = pytest.mark.parametrize("modules", [(), ("--mca", "coll", "^ftera", "--mca", "mpi_ft_reliable_bcast", "bmg")],
                                  ids=["ours", "upstream"])
_REPORT = re.compile(r"^ftcheck rank=(\d+) ([A-Za-z0-9_]+)=(.*)$")
_KILLED = re.compile(r"ftslide: rank (\d+) killed at (\S+)")


@dataclass
class MpiRun:
    returncode: int
    stdout: str
    stderr: str
    reports: dict[int, dict[str, str]] = field(default_factory=dict)
    killed: dict[int, str] = field(default_factory=dict)

    def value(self, rank: int, key: str) -> str | None:
        return self.reports.get(rank, {}).get(key)

    def values(self, key: str, ranks: Sequence[int]) -> dict[int, str | None]:
        return {rank: self.value(rank, key) for rank in ranks}

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr[-4000:]}"


def parse_run(returncode: int, stdout: str, stderr: str) -> MpiRun:
    run = MpiRun(returncode, stdout, stderr)
    for line in stdout.splitlines():
        match = _REPORT.match(line.strip())
        if match:
            run.reports.setdefault(int(match[1]), {})[match[2]] = match[3]
    for match in _KILLED.finditer(stderr):
        run.killed[int(match[1])] = match[2]
    return run


def run_program(prefix: Path, program: Path, np: int, args: Sequence[str] = (),
                kill: Mapping[int, str] | None = None, timeout: float = 60,
                mpirun_options: Sequence[str] = (), env: Mapping[str, str] | None = None,
                wrap: Callable[[list[str]], list[str]] | None = None) -> MpiRun:
    """Run ``program`` on ``np`` ranks; SIGKILL rank R at point P for each R: P in ``kill``. A run that
    does not end within ``timeout`` fails with its output and the stuck processes' stacks. ``wrap``
    turns the mpirun argv into the one to run (across an emulated cluster: jobmgr.cluster.job_argv)."""
    extra = dict(env or {})
    if kill:
        extra["FTSLIDE_KILL"] = ",".join(f"{rank}@{point}" for rank, point in kill.items())
    try:
        result = mpi.run(prefix, [*mpirun_options, "-np", str(np), str(program), *args],
                         timeout=timeout, env=extra, stacks_on_timeout=True, wrap=wrap)
    except mpi.MpirunTimeout as exc:
        hung = parse_run(-9, exc.stdout, exc.stderr)
        raise AssertionError(f"{exc}\n{hung.describe()}\n{exc.stacks[-6000:]}") from None
    run = parse_run(result.returncode, result.stdout, result.stderr)
    for rank, point in (kill or {}).items():
        assert run.killed.get(rank) == point, f"rank {rank} was not killed at {point}:\n{run.describe()}"
    return run


def run_script(prefix: Path, python: str, script: Path, np: int, args: Sequence[str] = (),
               env: Mapping[str, str] | None = None, **kwargs) -> MpiRun:
    """Run the Python program ``script`` on ``np`` ranks of ``python``, with the kill-point module
    and tests/mpi/python (ftcheck.py) on its path; the rest as run_program."""
    path = [str(mpi.PYTHON_KILLPOINT_DIR), str(PYTHON_HELPERS)]
    extra = {"PYTHONPATH": ":".join(path), "PYTHONUNBUFFERED": "1", **(env or {})}
    return run_program(prefix, Path(python), np, args=[str(script), *args], env=extra, **kwargs)


_RECOVERED = re.compile(r"^survive: recovered at iteration (\d+): (\d+) survivors", re.MULTILINE)
_DONE = re.compile(r"^survive: done: 20 iterations, (\d+) recoveries, (\d+) survivors, checksum (\d+), (.*)$",
                   re.MULTILINE)


def check_survive_output(stdout: str) -> None:
    """Assert what ompi-ulfm/examples/survive.{c,f90,py} print for 20 iterations on np 4 when rank 2
    dies at the start of iteration 5 and rank 1 at the start of 12 (the README's run).

    Each survivor resumes from the earliest iteration any of them failed in. That is 5 (then 12) when
    every survivor notices the death in the victim's next iteration, and 4 (then 11) when one of them
    lost the victim's part of the iteration before, which the victim had finished: ULFM does not report
    a failure to every member in the same call. The checksum, sum over iterations i of (i + 1) times
    the sum of (world rank + 1) over that iteration's members, is checked for the resume points printed.
    """
    resumed = [(int(it), int(size)) for it, size in _RECOVERED.findall(stdout)]
    done = _DONE.search(stdout)
    assert done and len(resumed) == 2, f"no summary or not 2 recoveries:\n{stdout}"
    (first, first_size), (second, second_size) = resumed
    assert first in (4, 5) and second in (11, 12) and (first_size, second_size) == (3, 2), stdout
    members = [10] * first + [1 + 2 + 4] * (second - first) + [1 + 4] * (20 - second)
    checksum = sum(total * (it + 1) for it, total in enumerate(members))
    assert done.groups() == ("2", "2", str(checksum), "all sums correct"), stdout


def assert_all(run: MpiRun, key: str, ranks: Sequence[int], expected: str) -> None:
    """Every one of ``ranks`` reported ``key`` = ``expected``."""
    got = run.values(key, ranks)
    assert got == {rank: expected for rank in ranks}, f"{key}: {got}\n{run.describe()}"


def assert_shrunk_twice(run: MpiRun, survivors: Sequence[int]) -> None:
    """What the shrink programs of tests/mpi/fortran and tests/mpi/python report at np 5 with ranks 1
    and 3 killed: MPIX_Comm_shrink and MPIX_Comm_ishrink both succeed, and each new communicator holds
    the survivors 0, 2, 4 in order and sums their 1s."""
    assert_all(run, "shrink", survivors, OK)
    assert_all(run, "ishrink", survivors, OK)
    assert_all(run, "ishrink_test", survivors, OK)
    for comm in ("shrunk", "ishrunk"):
        assert_all(run, f"{comm}_size", survivors, "3")
        assert_all(run, f"{comm}_order", survivors, "0,2,4")
        assert run.values(f"{comm}_new_rank", survivors) == {0: "0", 2: "1", 4: "2"}, run.describe()
        assert_all(run, f"{comm}_allreduce", survivors, OK)
        assert_all(run, f"{comm}_sum", survivors, "3")
    assert_all(run, "finished", survivors, "1")
