"""Job scripts for Slurm, PBS Pro, Torque and Flux that keep a ULFM job alive when ranks or nodes die.

``render(request, prefix)`` fills the template of ``jobmgr-adapters/<manager>/job.sh.in``:
the manager's directives for the allocation, the options that stop the manager from
ending the job after a failure, and ``mpirun --with-ft ulfm`` from the project's build
with the launcher that manager needs. Every value is checked first, so bad input is an
FtslideError and no script is written (docs/jobmgr.md).

Errors and cost: ``check``, ``render`` and ``parse_time`` raise FtslideError for bad input;
``write`` raises it for a file it cannot write. All cost O(size of the script).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import FtslideError
from ..ui.output import write_text
from ..toolchain.mpi import MULTINODE_ULFM_OPTIONS, check_program, split_program
from ..toolchain.native import REPO

__all__ = ["MANAGERS", "SLURM_STEP_OPTIONS", "Request", "parse_time", "hms", "check", "render", "write"]

ADAPTERS = REPO / "jobmgr-adapters"
MANAGERS = ("slurm", "pbs", "torque", "flux")
_TEMPLATE = {"slurm": "slurm/job.sh.in", "pbs": "pbs/job.sh.in", "torque": "pbs/job.sh.in",
             "flux": "flux/job.sh.in"}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,62}")
_QUEUE = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_NP_OPTIONS = {"np", "n", "c"}
# srun options of the step in which PRRTE starts its daemons under Slurm (plm_slurm_args):
# the step outlives a failed node and a daemon's non-zero exit.
SLURM_STEP_OPTIONS = "--no-kill --kill-on-bad-exit=0"


@dataclass
class Request:
    """What the job asks for; ``command`` is ``[mpirun options] PROGRAM [ARGS]``."""

    manager: str
    nodes: int
    ntasks_per_node: int
    command: list[str]
    time: str | None = None
    name: str = "ftslide"
    queue: str | None = None
    job_output: str | None = None
    environment: dict[str, str] = field(default_factory=dict)


def parse_time(text: str) -> int:
    """Seconds of a time limit given as MINUTES, H:MM:SS or D-HH:MM:SS."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+):([0-5]\d):([0-5]\d)", text)
    if match:
        days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
        total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    elif text.isdigit():
        total = int(text) * 60
    else:
        raise FtslideError(f"--time {text!r} is not a time limit: give minutes (30) or H:MM:SS (1:30:00)")
    if total <= 0:
        raise FtslideError(f"--time {text!r} must be longer than zero")
    return total


def hms(seconds: int) -> str:
    """``seconds`` as H:MM:SS (hours not bounded), the form every job manager reads."""
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _directive_value(option: str, value: str) -> str:
    """Directives are read without shell quoting: refuse what would change their meaning."""
    if not value or any(c.isspace() or c in "\"'\\$`#" for c in value):
        raise FtslideError(f"{option} {value!r} must be non-empty, without spaces, quotes, '$', '`', '#' "
                           "or backslashes (job managers read directives without shell quoting)")
    return value


def check(request: Request) -> tuple[list[str], str, list[str]]:
    """Validate ``request``; return its split command (mpirun options, program, args)."""
    if request.manager not in MANAGERS:
        raise FtslideError(f"unknown job manager {request.manager!r}: choose one of {', '.join(MANAGERS)}")
    if not 1 <= request.nodes <= 100_000:
        raise FtslideError(f"--nodes {request.nodes} must be between 1 and 100000")
    if not 1 <= request.ntasks_per_node <= 4096:
        raise FtslideError(f"--ntasks-per-node {request.ntasks_per_node} must be between 1 and 4096")
    if not _NAME.fullmatch(request.name):
        raise FtslideError(f"--name {request.name!r} must start with a letter and hold at most 63 letters, "
                           "digits, '_', '.' or '-'")
    if request.queue is not None and not _QUEUE.fullmatch(request.queue):
        raise FtslideError(f"--queue {request.queue!r} must be 1-64 letters, digits, '_', '.', '@' or '-'")
    if request.time is not None:
        parse_time(request.time)
    if request.job_output is not None:
        _directive_value("--job-output", request.job_output)
    for name in request.environment:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise FtslideError(f"--env {name!r} is not a variable name (NAME=VALUE)")
    if not request.command:
        raise FtslideError("no program given: ftslide jobscript MANAGER [options] -- [mpirun options] "
                           "PROGRAM [ARGS]")
    options, program, args = split_program(request.command)
    check_program(program)
    return options, program, args


def _resolve(program: str) -> str:
    """An absolute path for a program given by path (the job may start in another directory)."""
    return os.path.abspath(program) if "/" in program else program


def _gives_np(options: Sequence[str]) -> bool:
    return any(opt.lstrip("-").split("=", 1)[0] in _NP_OPTIONS for opt in options if opt.startswith("-"))


def render(request: Request, prefix: Path, invocation: str | None = None) -> str:
    """The job script text for ``request`` with the Open MPI build at ``prefix``."""
    options, program, args = check(request)
    manager = request.manager
    np = request.nodes * request.ntasks_per_node
    seconds = parse_time(request.time) if request.time is not None else None
    env_lines = [f"export {name}={shlex.quote(value)}" for name, value in sorted(request.environment.items())]
    # ULFM across nodes needs these with Open MPI 5.0.7 (docs/nodeloss.md); the user's options come
    # after them and win.
    mpirun_args = [*MULTINODE_ULFM_OPTIONS, *options, _resolve(program), *args]
    # Our -np goes first; a -np among the user's options replaces it.
    np_text = str(np)
    if _gives_np(options):
        np_text = None

    directives: list[str] = []
    values = {"@NAME@": request.name, "@NODES@": str(request.nodes), "@PPN@": str(request.ntasks_per_node),
              "@SRUN_OPTIONS@": SLURM_STEP_OPTIONS}
    if manager == "slurm":
        if seconds is not None:
            directives.append(f"#SBATCH --time={hms(seconds)}")
        if request.queue:
            directives.append(f"#SBATCH --partition={request.queue}")
        if request.job_output:
            directives.append(f"#SBATCH --output={request.job_output}")
    elif manager in ("pbs", "torque"):
        if manager == "pbs":
            resources = [f"#PBS -l select={request.nodes}:ncpus={request.ntasks_per_node}:"
                         f"mpiprocs={request.ntasks_per_node}",
                         "#PBS -l place=scatter",
                         "#PBS -W tolerate_node_failures=all"]
            keepalive = ("# tolerate_node_failures=all (PBS Professional, OpenPBS): the job keeps running\n"
                         "# when a sister node fails, at start or later; a dead rank or node reaches the\n"
                         "# program as a ULFM process failure instead of ending the job.")
        else:
            resources = [f"#PBS -l nodes={request.nodes}:ppn={request.ntasks_per_node}"]
            keepalive = ("# Torque has no job attribute like PBS Pro's tolerate_node_failures: whether the\n"
                         "# job outlives a failed node depends on the server's configuration. A dead rank\n"
                         "# reaches the program as a ULFM process failure (mpirun --with-ft ulfm).")
        if seconds is not None:
            resources.append(f"#PBS -l walltime={hms(seconds)}")
        values["@RESOURCES@"] = "\n".join(resources)
        values["@KEEPALIVE_COMMENT@"] = keepalive
        if request.queue:
            directives.append(f"#PBS -q {request.queue}")
        if request.job_output:
            directives.append(f"#PBS -o {request.job_output}")
    else:
        if seconds is not None:
            directives.append(f"# flux: -t {seconds}s")
        if request.queue:
            directives.append(f"# flux: --queue={request.queue}")
        if request.job_output:
            directives.append(f"# flux: --output={request.job_output}")
    values["@DIRECTIVES@"] = "\n".join(directives)
    values["@PREFIX@"] = shlex.quote(str(prefix))
    values["@COMMAND@"] = invocation or f"ftslide jobscript {manager}"
    values["@MPIRUN_ARGS@"] = shlex.join(mpirun_args)

    text = (ADAPTERS / _TEMPLATE[manager]).read_text()
    if np_text is None:
        text = text.replace(" -np @NP@", "")
    values["@NP@"] = np_text or ""
    for key, value in values.items():
        text = text.replace(key, value)
    path_line = 'export PATH="$prefix/bin:$PATH"\n'
    text = text.replace(path_line, path_line + "".join(f"{line}\n" for line in env_lines), 1)
    # Empty placeholder lines (no extra directives) vanish rather than leave a blank line.
    return re.sub(r"\n\n(?=set -u)", "\n", text)


def write(text: str, path: Path) -> None:
    """Write an executable script atomically: a failure leaves neither a partial nor a temporary file."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        what = "is a file, not a directory" if directory.exists() else "does not exist"
        raise FtslideError(f"cannot write {path}: {directory} {what}")
    write_text(path, text, mode=0o755)

