"""ftslide doctor: check every dependency and say how to install what is missing."""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
from dataclasses import dataclass

from ..errors import FtslideError
from ..toolchain import pympi
from ..toolchain.ompi import ft_support, require_prefix
from ..ui.table import print_table

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "doctor"
HELP = ("check the compilers, the Open MPI build (FT MPI support), mpi4py against it, SimGrid and Python packages; "
        "exit 0 only if all is there")

APT = "apt-get install -y"
PYTHON_PACKAGES = ("numpy", "matplotlib", "ortools", "pytest", "pytest_timeout")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _tools(name: str, tools: tuple[str, ...], fix: str) -> Check:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return Check(name, False, f"missing: {', '.join(missing)}", fix)
    return Check(name, True, ", ".join(shutil.which(tool) or tool for tool in tools))


def _version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.splitlines() or [""])[0]


def checks() -> list[Check]:
    found = [
        _tools("C compiler", ("cc",), f"{APT} build-essential"),
        _tools("Fortran compiler", ("gfortran",), f"{APT} gfortran"),
        _tools("build tools", ("make", "patch", "perl", "cmake", "ninja"), f"{APT} make patch perl cmake ninja-build"),
        _tools("autotools (overlays that change the build system)", ("autoconf", "automake", "libtoolize", "flex"),
               f"{APT} autoconf automake libtool flex"),
    ]
    if found[0].ok:
        found[0].detail = _version("cc")
    prefix = None
    try:
        prefix = require_prefix()
        if ft_support(prefix):
            found.append(Check("Open MPI build (FT MPI support: yes)", True, str(prefix)))
        else:
            found.append(Check("Open MPI build (FT MPI support: yes)", False,
                               f"{prefix}: ompi_info does not report FT MPI support", "ftslide build-mpi"))
    except FtslideError as exc:
        found.append(Check("Open MPI build (FT MPI support: yes)", False, str(exc), "ftslide build-mpi"))
    mpi4py = "mpi4py (built against that Open MPI)"
    try:
        why = pympi.problem(sys.executable, prefix) if prefix is not None else "no Open MPI build to check against"
        found.append(Check(mpi4py, why is None,
                           why or f"mpi4py {pympi.MPI4PY_VERSION}: Comm.Revoke, Shrink, Ishrink, Agree, ...",
                           "ftslide build-mpi4py"))
    except FtslideError as exc:
        found.append(Check(mpi4py, False, str(exc), "ftslide build-mpi4py"))
    found.append(_tools("SimGrid (smpicc, smpirun)", ("smpicc", "smpirun"), f"{APT} libsimgrid-dev"))
    missing = [pkg for pkg in PYTHON_PACKAGES if importlib.util.find_spec(pkg) is None]
    found.append(Check("Python packages", not missing,
                       f"missing: {', '.join(missing)}" if missing else ", ".join(PYTHON_PACKAGES),
                       "pip install -e '.[test]' (in the project's virtual environment)"))
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    results = checks()
    print_table(["check", "status", "detail", "to fix"],
                [[c.name, "ok" if c.ok else "MISSING", c.detail, "" if c.ok else c.fix] for c in results])
    bad = [c for c in results if not c.ok]
    if bad:
        print(f"{len(bad)} of {len(results)} checks failed")
        return 1
    print(f"all {len(results)} checks passed")
    return 0
