"""mpi4py built against the project's Open MPI, and the check that an interpreter's mpi4py is that one.

mpi4py 4 offers ULFM as ``Comm.Revoke``, ``Is_revoked``, ``Shrink``, ``Ishrink``, ``Agree``,
``Iagree``, ``Get_failed`` and ``Ack_failed`` when the MPI headers it is compiled against declare
them (it tests ``OMPI_HAVE_MPI_EXT_FTMPI``, and ``OMPI_HAVE_MPIX_COMM_ISHRINK`` for ``Ishrink``,
which patch ompi/09 defines). Compiled against an MPI without them it falls back silently: a
"shrink" that duplicates, an "agreement" that is an allreduce. So the binary wheels of the Python
registry will not do: ``build`` compiles the pinned sdist (checksum-verified) with the build's
``mpicc``, keeps the wheel in the cache under a key of the Open MPI prefix, the mpi4py release and
the interpreter, and installs it into the running interpreter's environment; a re-run with nothing
changed does neither (a stamp in the environment).

``interpreter`` is the Python that runs programs against a prefix: the running one for the project's
build (``require`` refuses it, naming the fix, when its mpi4py is another MPI's), and for another Open
MPI (``--mpi``) whose libmpi the running interpreter's mpi4py does not load, a side environment in the
cache (``side_environment``: a venv of the running interpreter's base, with this mpi4py built against
that prefix and the numpy the running environment has).

``problem`` tells whether an interpreter's mpi4py is ours, from what it really loads: the path of
the ``libmpi`` its ``MPI`` module maps (imported without ``MPI_Init``), and whether its error classes
include ULFM's.

Errors and cost: FtslideError (one line) for a failed download, build or install, and from
``require`` for an interpreter whose mpi4py is missing or built against another MPI. A cold
``build`` costs about 2 minutes on 2 cores (Cython and the C compile); a cached one installs a wheel
(a few seconds); an unchanged re-run reads a stamp. ``problem`` starts the interpreter once (about
0.2 s). A cold ``side_environment`` costs a venv, numpy's wheel and a cold ``build``; a warm one
reads a marker.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from ..errors import FtslideError
from .ompi import cache_root, exclusive, is_project_build, mpi_environment

__all__ = ["MPI4PY_VERSION", "MPI4PY_SHA256", "CYTHON_VERSION", "cache_key", "wheel_dir", "installed",
           "build", "probe", "problem", "require", "interpreter", "side_environment", "is_python"]

# The pinned release: its sdist from the Python registry, verified by pip against this sha256.
MPI4PY_VERSION = "4.1.2"
MPI4PY_SHA256 = "56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02"
# mpi4py's sdist carries Cython sources only; the build runs without isolation, with this Cython.
CYTHON_VERSION = "3.1.8"
# Written into the environment that got the wheel: the key it was built for.
STAMP = ".ftslide-mpi4py"
# Run by the interpreter under test: what its mpi4py loads, without initialising MPI.
PROBE = r"""
import json, sys
try:
    import mpi4py
except ImportError:
    print(json.dumps({"mpi4py": None})); sys.exit(0)
mpi4py.rc.initialize = mpi4py.rc.finalize = False
from mpi4py import MPI
libmpi = ""
with open("/proc/self/maps") as maps:
    for line in maps:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if "/libmpi.so" in path:
            libmpi = path
            break
print(json.dumps({"mpi4py": mpi4py.__version__, "libmpi": libmpi,
                  "library": MPI.Get_library_version().strip("\x00 \n").splitlines()[0],
                  "ulfm": MPI.ERR_REVOKED != MPI.ERR_UNKNOWN and hasattr(MPI.Comm, "Ishrink")}))
"""


def cache_key(prefix: Path, python: str = sys.executable) -> str:
    """What a wheel depends on: the Open MPI prefix (its path names its inputs' tree key, which
    covers the headers), the mpi4py release and the interpreter's ABI and platform."""
    digest = hashlib.sha256()
    for part in (str(prefix), MPI4PY_VERSION, MPI4PY_SHA256, CYTHON_VERSION, _abi_tag(python)):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def _abi_tag(python: str) -> str:
    if Path(python).resolve() == Path(sys.executable).resolve():
        return f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"
    result = subprocess.run([python, "-c", "import sys, sysconfig; "
                             "print(f'{sys.implementation.cache_tag}-{sysconfig.get_platform()}')"],
                            capture_output=True, text=True, timeout=60)
    return result.stdout.strip() or python


def wheel_dir(prefix: Path, python: str = sys.executable) -> Path:
    """Where the wheel of ``cache_key`` is kept."""
    return cache_root() / "mpi4py" / f"mpi4py-{MPI4PY_VERSION}-{cache_key(prefix, python)[:12]}"


def _stamp(python: str) -> Path:
    result = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                            timeout=60) if Path(python).resolve() != Path(sys.executable).resolve() else None
    return Path(result.stdout.strip() if result else sys.prefix) / STAMP


def installed(prefix: Path, python: str = sys.executable) -> bool:
    """Whether the environment of ``python`` holds the wheel of ``cache_key`` (by its stamp, and
    the package still being there)."""
    stamp = _stamp(python)
    try:
        if stamp.read_text().strip() != cache_key(prefix, python):
            return False
    except OSError:
        return False
    site = Path(sysconfig.get_paths()["purelib"]) if python == sys.executable else None
    return site is None or (site / "mpi4py" / "__init__.py").is_file()


def _pip(python: str, args: list[str], env: dict[str, str], log: Path, what: str) -> None:
    with open(log, "a") as out:
        out.write(f"$ {python} -m pip {' '.join(args)}\n")
        out.flush()
        result = subprocess.run([python, "-m", "pip", *args], env=env, stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        lines = [line for line in log.read_text(errors="replace").splitlines() if "error" in line.lower()]
        last = (lines or log.read_text(errors="replace").splitlines() or ["no output"])[-1].strip()
        raise FtslideError(f"{what} failed: {last[:200]} (full log: {log})")


def build(prefix: Path, python: str = sys.executable) -> tuple[Path, bool]:
    """Build (or reuse) the mpi4py wheel for ``prefix`` and install it for ``python``; return
    (the wheel, whether nothing had to be built or installed)."""
    if installed(prefix, python):
        return next(wheel_dir(prefix, python).glob("mpi4py-*.whl"), wheel_dir(prefix, python)), True
    folder = wheel_dir(prefix, python)
    wheel = next(folder.glob("mpi4py-*.whl"), None)
    env = mpi_environment(prefix)
    env["MPICC"] = str(prefix / "bin" / "mpicc")
    env.pop("MPI4PY_BUILD_MPIABI", None)
    env.pop("MPI4PY_BUILD_CONFIGURE", None)
    folder.parent.mkdir(parents=True, exist_ok=True)
    log = folder.parent / f"{folder.name}.log"
    log.write_text("")
    if wheel is None:
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{folder.name}-") as work:
            requirements = Path(work) / "requirements.txt"
            requirements.write_text(f"mpi4py=={MPI4PY_VERSION} --hash=sha256:{MPI4PY_SHA256}\n")
            _pip(python, ["install", "-q", f"Cython=={CYTHON_VERSION}", "setuptools>=64", "wheel"], env, log,
                 "installing mpi4py's build requirements")
            # --no-cache-dir: pip would reuse a wheel it built from the same sdist against another MPI
            _pip(python, ["wheel", "-q", "--no-cache-dir", "--no-deps", "--no-binary", "mpi4py", "--no-build-isolation",
                          "--require-hashes", "-r", str(requirements), "-w", str(Path(work) / "wheel")],
                 env, log, f"building mpi4py {MPI4PY_VERSION} against {prefix}")
            built = next((Path(work) / "wheel").glob("mpi4py-*.whl"))
            if folder.exists():
                shutil.rmtree(folder)
            (Path(work) / "wheel").rename(folder)
            wheel = folder / built.name
    _pip(python, ["install", "-q", "--no-deps", "--force-reinstall", str(wheel)], env, log,
         f"installing {wheel.name}")
    why = problem(python, prefix)
    if why:  # a wheel that does not load this build's libmpi is of no use: the next run builds again
        shutil.rmtree(folder, ignore_errors=True)
        raise FtslideError(f"the mpi4py just installed is not usable: {why} (log: {log})")
    _stamp(python).write_text(cache_key(prefix, python) + "\n")
    return wheel, False


def probe(python: str, prefix: Path | None = None) -> dict[str, object]:
    """What ``python``'s mpi4py is: its version (None without mpi4py), the libmpi it loads, the
    library's version line and whether ULFM is compiled in. Raises FtslideError when the
    interpreter cannot run it."""
    env = mpi_environment(prefix) if prefix is not None else dict(os.environ)
    try:
        result = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FtslideError(f"{python} cannot be run to look at its mpi4py ({exc})") from None
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (result.stderr.strip().splitlines() or ["no answer"])[-1]
        raise FtslideError(f"the mpi4py of {python} does not load ({last[:200]}): run 'ftslide build-mpi4py' "
                           "and run the program with the project's .venv/bin/python3") from None


def problem(python: str, prefix: Path) -> str | None:
    """Why ``python``'s mpi4py is not the project's (None when it is): none installed, built
    without ULFM, or loading another libmpi than ``prefix``'s."""
    found = probe(python, prefix)
    if found.get("mpi4py") is None:
        return f"{python} has no mpi4py"
    libmpi = str(found.get("libmpi") or "")
    ours = (prefix / "lib").resolve()
    if not libmpi or Path(libmpi).resolve().parent != ours:
        return (f"mpi4py {found['mpi4py']} of {python} is built against another MPI "
                f"({libmpi or 'no libmpi'}: {found.get('library')}), not the project's Open MPI in {prefix}")
    if not found.get("ulfm"):
        return f"mpi4py {found['mpi4py']} of {python} is built without the ULFM calls (older than 4.0?)"
    return None


def require(python: str, prefix: Path) -> None:
    """Raise FtslideError, naming the fix, unless ``python``'s mpi4py is built against ``prefix``."""
    why = problem(python, prefix)
    if why:
        raise FtslideError(f"{why}: run 'ftslide build-mpi4py' (./bootstrap setup does) and run the "
                           f"program with {Path(sys.executable).parent / 'python3'}")


def side_environment(prefix: Path) -> Path:
    """The python3 of a venv kept in the cache for ``prefix`` (keyed like its mpi4py wheel): made from the
    running interpreter's base at the first use, with mpi4py built against ``prefix`` and numpy (the
    release the running environment has), then reused. FtslideError (one line) when it cannot be made."""
    folder = cache_root() / "python" / f"venv-{cache_key(prefix)[:12]}"
    python, ready = folder / "bin" / "python3", folder / ".ftslide-ready"
    if ready.is_file() and python.exists():
        return python
    with exclusive(folder.parent / f"{folder.name}.lock", f"the Python environment {folder}"):
        if not (ready.is_file() and python.exists()):   # made meanwhile by the process we waited for
            _make_side_environment(prefix, folder, python, ready)
    return python


def _make_side_environment(prefix: Path, folder: Path, python: Path, ready: Path) -> None:
    """side_environment's venv in ``folder`` (its ``python``), made afresh; ``ready`` written last."""
    base = getattr(sys, "_base_executable", sys.executable) or sys.executable
    folder.parent.mkdir(parents=True, exist_ok=True)
    made = subprocess.run([base, "-m", "venv", "--clear", str(folder)], capture_output=True, text=True, timeout=600)
    if made.returncode != 0:
        last = (made.stderr.strip().splitlines() or ["no output"])[-1]
        raise FtslideError(f"could not make a Python environment for {prefix} in {folder}: {last[:200]}")
    try:
        numpy = f"numpy=={importlib.metadata.version('numpy')}"
    except importlib.metadata.PackageNotFoundError:
        numpy = "numpy"
    log = folder.parent / f"{folder.name}.log"
    log.write_text("")
    _pip(str(python), ["install", "-q", numpy], mpi_environment(prefix), log, f"installing {numpy} for {prefix}")
    build(prefix, str(python))
    ready.write_text(cache_key(prefix) + "\n")


def interpreter(prefix: Path) -> str:
    """The Python that runs the runtime's programs against ``prefix``: the running one for the project's
    build (FtslideError naming the fix when its mpi4py is not built against it) or when its mpi4py loads
    ``prefix``'s libmpi; for another Open MPI, ``side_environment(prefix)``."""
    if is_project_build(prefix):
        require(sys.executable, prefix)
        return sys.executable
    return sys.executable if problem(sys.executable, prefix) is None else str(side_environment(prefix))


def is_python(program: str) -> bool:
    """Whether ``program`` names a Python interpreter (python, python3, python3.11, a path to one)."""
    name = os.path.basename(program)
    return name == "python" or (name.startswith("python") and name[6:].replace(".", "").isdigit())
