"""ftslide doctor: check every dependency and say how to install what is missing; then the feature table of
the MPI in use (the project's build, or --mpi / FTSLIDE_MPI), each row found by probing it (toolchain.features)."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import FtslideError
from ..toolchain import features, pympi
from ..toolchain.ompi import MPI_OPTION_HELP, ft_support, named_prefix, require_prefix
from ..ui.table import print_table

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "doctor"
HELP = ("check the compilers, the Open MPI in use (the project's build, or --mpi PREFIX / FTSLIDE_MPI: FT MPI "
        "support), mpi4py against it, ISA-L, SimGrid and Python packages, exit 0 only if all is there; then print "
        "what that MPI offers the sliding runtime (our revoke and agreement, MPIX_Comm_ishrink, node-loss survival, "
        "MPI_Finalize after failures, Fortran and mpi4py bindings), each row found by probing it")

APT = "apt-get install -y"
PYTHON_PACKAGES = ("numpy", "matplotlib", "ortools", "pytest", "pytest_timeout")
# The erasure code of the sliding runtime's checkpoints (sliding/runtime/src/sliding_erasure.c) includes it.
ISAL_HEADER = "isa-l/erasure_code.h"
# Where the header is looked for when there is no C compiler to ask.
SYSTEM_INCLUDE_DIRS = (Path("/usr/local/include"), Path("/usr/include"))


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


def _header(name: str, header: str, fix: str) -> Check:
    """Whether ``header`` is there for the builds that include it: where cc finds it (or, without cc,
    in SYSTEM_INCLUDE_DIRS), with ISA-L's version when its isa-l.h says it. Cost: one preprocessor run."""
    cc = shutil.which("cc")
    if cc is None:
        path = next((d / header for d in SYSTEM_INCLUDE_DIRS if (d / header).is_file()), None)
        return Check(name, True, str(path)) if path else Check(name, False, f"missing: <{header}>", fix)
    probe = (f"#include <{header}>\n#if __has_include(<isa-l.h>)\n#include <isa-l.h>\n"
             "ftslide_version ISAL_MAJOR_VERSION ISAL_MINOR_VERSION ISAL_PATCH_VERSION\n#endif\n")
    try:
        out = subprocess.run([cc, "-E", "-x", "c", "-"], input=probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(name, False, f"cc cannot look for <{header}>: {exc}", fix)
    if out.returncode != 0:
        return Check(name, False, f"missing: <{header}> (cc does not find it)", fix)
    path = re.search(r'"([^"]*' + re.escape(header) + r')"', out.stdout)
    # The macros expand from a system header: cc may put a line marker between the tag and the numbers.
    version = re.search(r"ftslide_version\s+(?:#.*\n\s*)*(\d+)\s+(\d+)\s+(\d+)", out.stdout)
    detail = str(Path(path[1]).resolve()) if path else f"<{header}>"
    return Check(name, True, f"{detail} (ISA-L {'.'.join(version.groups())})" if version else detail)


def checks(mpi: str | None = None) -> list[Check]:
    """Every dependency's check, the Open MPI named by ``mpi`` (require_prefix's rules) among them."""
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
        prefix = require_prefix(mpi)
        if ft_support(prefix):
            found.append(Check("Open MPI build (FT MPI support: yes)", True, features.describe_mpi(prefix)))
        else:
            found.append(Check("Open MPI build (FT MPI support: yes)", False,
                               f"{prefix}: ompi_info does not report FT MPI support", "ftslide build-mpi"))
    except FtslideError as exc:
        found.append(Check("Open MPI build (FT MPI support: yes)", False, str(exc),
                           "ftslide build-mpi" if mpi is None else "another --mpi PREFIX"))
    mpi4py = "mpi4py (built against that Open MPI)"
    if named_prefix(mpi) is None:  # another MPI's mpi4py is a row of its feature table, not a dependency
        try:
            why = pympi.problem(sys.executable, prefix) if prefix is not None else "no Open MPI build to check against"
            found.append(Check(mpi4py, why is None,
                               why or f"mpi4py {pympi.MPI4PY_VERSION}: Comm.Revoke, Shrink, Ishrink, Agree, ...",
                               "ftslide build-mpi4py"))
        except FtslideError as exc:
            found.append(Check(mpi4py, False, str(exc), "ftslide build-mpi4py"))
    found.append(_header("ISA-L (erasure-coded checkpoints)", ISAL_HEADER, f"{APT} libisal-dev"))
    found.append(_tools("SimGrid (smpicc, smpirun)", ("smpicc", "smpirun"), f"{APT} libsimgrid-dev"))
    missing = [pkg for pkg in PYTHON_PACKAGES if importlib.util.find_spec(pkg) is None]
    found.append(Check("Python packages", not missing,
                       f"missing: {', '.join(missing)}" if missing else ", ".join(PYTHON_PACKAGES),
                       "pip install -e '.[test]' (in the project's virtual environment)"))
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mpi", metavar="PREFIX", help=MPI_OPTION_HELP)
    parser.add_argument("--no-probe-run", action="store_true",
                        help="do not start the MPI_Finalize-after-failures probe (np 3, a few seconds once per "
                        "prefix); show its cached answer, if any")


def feature_table(prefix: Path, run_probe: bool = True) -> None:
    """The features of the MPI at ``prefix``, with how each was found."""
    rows = features.table(prefix, run_probe=run_probe)
    print(f"\nwhat {features.describe_mpi(prefix)} offers the sliding runtime:")
    print_table(["feature", "present", "how it was found", "seen"],
                [[f.name, {True: "yes", False: "no", None: "?"}[f.present], f.how, f.detail] for f in rows])
    lacking = [f.key for f in rows if f.present is not True]
    if lacking:
        print("without them: " + "; ".join(f"{features.FEATURES[key]}: {features.FIX[key]}" for key in lacking))


def run(args: argparse.Namespace) -> int:
    results = checks(args.mpi)
    try:
        prefix: Path | None = require_prefix(args.mpi)
    except FtslideError:
        prefix = None  # the checks' table says why
    print_table(["check", "status", "detail", "to fix"],
                [[c.name, "ok" if c.ok else "MISSING", c.detail, "" if c.ok else c.fix] for c in results])
    if prefix is not None:
        feature_table(prefix, run_probe=not args.no_probe_run)
    bad = [c for c in results if not c.ok]
    if bad:
        print(f"{len(bad)} of {len(results)} checks failed")
        return 1
    print(f"all {len(results)} checks passed")
    return 0
