"""Fixtures shared by the test suites: the Open MPI build, MPI program compilation and runs."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

import pytest

from ftslide.errors import FtslideError
from ftslide.mpi import compile_program
from ftslide.ompi_build import require_prefix

from mpiharness import MPI_SOURCES, MpiRun, run_program


@pytest.fixture(scope="session")
def mpi_prefix() -> Path:
    """The project's Open MPI build; fails (never skips) when it is missing."""
    try:
        return require_prefix()
    except FtslideError as exc:
        pytest.fail(f"{exc} (./bootstrap test builds it)")


@pytest.fixture(scope="session")
def mpi_program(mpi_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Compile tests/mpi/<relative path> with the build's mpicc (once per source and flags)."""
    out_dir = tmp_path_factory.mktemp("mpi-programs")

    def build(relative: str, flags: tuple[str, ...] = ()) -> Path:
        return compile_program(mpi_prefix, [MPI_SOURCES / relative], flags=("-O2", "-Wall", *flags),
                               out_dir=out_dir)

    return build


@pytest.fixture
def run_mpi(mpi_prefix: Path) -> Callable[..., MpiRun]:
    """Run an MPI program with a timeout and named kills; see mpiharness.run_program."""

    def run(program: Path, np: int, **kwargs) -> MpiRun:
        return run_program(mpi_prefix, program, np, **kwargs)

    return run


@pytest.fixture(scope="session", autouse=True)
def no_leftover_mpi_processes():
    """After the session, no prterun/prted/rank of ours may be left running."""
    yield
    left = subprocess.run(["pgrep", "-a", "-f", "prterun|prted|ftslide/programs|mpi-programs"],
                          capture_output=True, text=True).stdout.strip()
    assert not left, f"MPI processes left running after the tests:\n{left}"
