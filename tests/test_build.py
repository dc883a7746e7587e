"""The Open MPI build: keys, overlays, reuse, and every way a build can be refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ftslide.errors import FtslideError
from ftslide.toolchain import ompi as ompi_build
from ftslide.toolchain.native import REPO
from ftslide.toolchain.mpi import kill_processes, run_marker
from ftslide.toolchain.ompi import BuildInputs, Overlay

REPO = Path(__file__).resolve().parent.parent


def ftslide(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the ftslide CLI in a session of its own, killed (with any ranks it started) when it ends."""
    name, value = run_marker()
    proc = subprocess.Popen([sys.executable, "-m", "ftslide", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {}), name: value}, cwd=REPO, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        kill_processes(proc.pid, f"{name}={value}")
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def assert_one_line_error(result: subprocess.CompletedProcess, *phrases: str) -> None:
    """Non-zero exit; stderr is progress lines ("[build-mpi ...]") at most, then one error line."""
    assert result.returncode != 0, result
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("[build-mpi ")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1] == lines[0]
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


def make_inputs(tmp_path: Path, files: dict[str, str], patches: dict[str, str] | None = None) -> BuildInputs:
    overlay = tmp_path / "overlay"
    for rel, text in files.items():
        (overlay / rel).parent.mkdir(parents=True, exist_ok=True)
        (overlay / rel).write_text(text)
    patch_paths = []
    for name, text in (patches or {}).items():
        (tmp_path / name).write_text(text)
        patch_paths.append(tmp_path / name)
    real = ompi_build.load_inputs()
    return BuildInputs(real.version, real.tarball_name, real.sha256, real.debian_package, real.debian_version,
                       real.debian_suite, real.configure_options,
                       (Overlay(overlay, "ompi/mca/coll/demo"),), tuple(patch_paths))


def test_keys_follow_the_inputs(tmp_path):
    inputs = make_inputs(tmp_path, {"coll_demo.c": "int a;", "Makefile.am": "x = 1"})
    sha = inputs.sha256
    tree, full = ompi_build.tree_key(inputs, sha), ompi_build.full_key(inputs, sha)
    # A source change keeps the configured tree (incremental rebuild) but changes the full key.
    (tmp_path / "overlay" / "coll_demo.c").write_text("int b;")
    assert ompi_build.tree_key(inputs, sha) == tree
    assert ompi_build.full_key(inputs, sha) != full
    # A build-system change, a new file and another tarball each need a new tree.
    (tmp_path / "overlay" / "Makefile.am").write_text("x = 2")
    tree2 = ompi_build.tree_key(inputs, sha)
    assert tree2 != tree
    (tmp_path / "overlay" / "extra.h").write_text("")
    assert ompi_build.tree_key(inputs, sha) != tree2
    assert ompi_build.tree_key(inputs, "0" * 64) != ompi_build.tree_key(inputs, sha)


def test_autogen_only_for_build_system_changes(tmp_path):
    assert not ompi_build.needs_autogen(make_inputs(tmp_path / "a", {"coll_demo.c": ""}))
    assert ompi_build.needs_autogen(make_inputs(tmp_path / "b", {"configure.m4": ""}))
    patch = "--- a/config/opal_check.m4\n+++ b/config/opal_check.m4\n@@ -1 +1 @@\n-a\n+b\n"
    assert ompi_build.needs_autogen(make_inputs(tmp_path / "c", {"x.c": ""}, {"fix.patch": patch}))
    patch = "--- a/ompi/runtime/ompi_mpi_init.c\n+++ b/ompi/runtime/ompi_mpi_init.c\n@@ -1 +1 @@\n-a\n+b\n"
    assert not ompi_build.needs_autogen(make_inputs(tmp_path / "d", {"x.c": ""}, {"fix.patch": patch}))


def test_overlay_sync_copies_only_changes(tmp_path):
    inputs = make_inputs(tmp_path, {"coll_demo.c": "int a;", "coll_demo.h": "#define X 1"})
    tree = tmp_path / "tree"
    assert ompi_build.sync_overlays(inputs, tree) == ["ompi/mca/coll/demo/coll_demo.c",
                                                      "ompi/mca/coll/demo/coll_demo.h"]
    header = tree / "ompi/mca/coll/demo/coll_demo.h"
    os.utime(header, (1000, 1000))
    (tmp_path / "overlay" / "coll_demo.c").write_text("int b;")
    assert ompi_build.sync_overlays(inputs, tree) == ["ompi/mca/coll/demo/coll_demo.c"]
    assert (tree / "ompi/mca/coll/demo/coll_demo.c").read_text() == "int b;"
    assert header.stat().st_mtime == 1000  # untouched, so make does not rebuild it


@pytest.fixture(scope="module")
def pinned_tarball() -> Path:
    """The pinned source tarball from the cache (./bootstrap fetched it to build)."""
    path = ompi_build.cache_root() / "src" / ompi_build.load_inputs().tarball_name
    assert path.exists(), f"{path} is missing: run ./bootstrap setup"
    return path


def test_wrong_checksum_stops_the_build(tmp_path, pinned_tarball):
    result = ftslide("build-mpi", "--tarball", str(pinned_tarball), "--sha256", "ab" * 32,
                     env={"FTSLIDE_CACHE": str(tmp_path)})
    assert_one_line_error(result, "checksum mismatch", "ab" * 32)
    assert not (tmp_path / "ompi").exists() or not any((tmp_path / "ompi").glob("openmpi-*"))


def test_truncated_tarball_leaves_nothing(tmp_path, pinned_tarball):
    broken = tmp_path / "openmpi-broken.tar.xz"
    broken.write_bytes(pinned_tarball.read_bytes()[: 4 << 20])
    sha = ompi_build.sha256_file(broken)
    cache = tmp_path / "cache"
    result = ftslide("build-mpi", "--tarball", str(broken), "--sha256", sha, env={"FTSLIDE_CACHE": str(cache)})
    assert_one_line_error(result, "cannot extract")
    assert sorted(p.name for p in (cache / "ompi").iterdir()) == [".lock"]


def test_bad_arguments(tmp_path):
    assert_one_line_error(ftslide("build-mpi", "--tarball", str(tmp_path / "nope.tar.xz"), "--sha256", "a" * 64),
                          "does not exist")
    assert_one_line_error(ftslide("build-mpi", "--tarball", str(tmp_path)), "--sha256")
    assert_one_line_error(ftslide("build-mpi", "--jobs", "0"), "--jobs")
    assert_one_line_error(ftslide("build-mpi", "--frobnicate"), "unrecognized arguments")


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_no_space_left(tmp_path, pinned_tarball):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(small)], check=True)
    try:
        result = ftslide("build-mpi", "--tarball", str(pinned_tarball), "--sha256",
                         ompi_build.sha256_file(pinned_tarball), env={"FTSLIDE_CACHE": str(small)})
        assert_one_line_error(result, "no space", "FTSLIDE_CACHE")
        assert not any((small / "ompi").glob("openmpi-*"))
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_unchanged_rerun_reuses_the_prefix(mpi_prefix):
    started = time.monotonic()
    result = ftslide("build-mpi")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(mpi_prefix)
    assert "reusing" in result.stderr
    print(f"unchanged re-run took {time.monotonic() - started:.1f} s")


def test_broken_prefix_is_refused(tmp_path, mpi_prefix):
    broken = tmp_path / "prefix"
    shutil.copytree(mpi_prefix / "bin", broken / "bin", symlinks=True)
    env = {"FTSLIDE_MPI_PREFIX": str(broken)}
    assert_one_line_error(ftslide("run", "-np", "1", "/bin/true", env=env),
                          "incomplete", "lib/libmpi.so", "ftslide build-mpi")
    assert_one_line_error(ftslide("env", env=env), "ftslide build-mpi")
    doctor = ftslide("doctor", env=env)
    assert doctor.returncode == 1 and "MISSING" in doctor.stdout


def test_pinned_source_comes_through_a_private_apt_configuration(tmp_path):
    """The default tarball is fetched from Debian trixie's source package into an empty cache and
    verified; the system's apt lists and sources stay as they were."""
    system_lists = sorted(p.name for p in Path("/var/lib/apt/lists").glob("*"))
    system_sources = sorted(p.name for p in Path("/etc/apt/sources.list.d").glob("*"))
    old = os.environ.get("FTSLIDE_CACHE")
    os.environ["FTSLIDE_CACHE"] = str(tmp_path)
    try:
        inputs = ompi_build.load_inputs()
        tarball, sha = ompi_build.resolve_tarball(inputs, None, None)
    finally:
        if old is None:
            del os.environ["FTSLIDE_CACHE"]
        else:
            os.environ["FTSLIDE_CACHE"] = old
    assert tarball == tmp_path / "src" / inputs.tarball_name and sha == inputs.sha256
    assert any("trixie" in p.name for p in (tmp_path / "apt" / "lists").glob("*"))
    assert sorted(p.name for p in Path("/var/lib/apt/lists").glob("*")) == system_lists
    assert sorted(p.name for p in Path("/etc/apt/sources.list.d").glob("*")) == system_sources


def test_other_checkouts_build_trees_are_kept(tmp_path):
    """Checkouts with other inputs share the cache: a build prunes only the trees of other keys that
    nobody used for BUILD_TREE_KEEP_SECONDS, so another checkout's next overlay change stays incremental."""
    root = tmp_path / "ompi"
    trees = {name: root / f"build-{name}" for name in ("mine", "recent", "stale", "unstamped")}
    for tree in trees.values():
        tree.mkdir(parents=True)
    for name in ("mine", "recent", "stale"):
        (trees[name] / ".configured").write_text(name)
    now = time.time()
    old = now - ompi_build.BUILD_TREE_KEEP_SECONDS - 60
    os.utime(trees["stale"] / ".configured", (old, old))
    os.utime(trees["unstamped"], (old, old))
    ompi_build._prune_build_trees(root, keep=trees["mine"], now=now)
    assert sorted(p.name for p in root.iterdir()) == ["build-mine", "build-recent"]


def test_the_debian_archive_is_the_systems(tmp_path):
    """The source package comes from the archive the system's apt sources name (a site mirror as the site
    wrote it), in either format, never from a security archive; none is a one-line error."""
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    assert ompi_build.system_debian_mirror(apt) == "http://mirror.example/debian"
    (apt / "sources.list").write_text("# site\ndeb [arch=amd64 signed-by=/k.gpg] http://site.example/deb bookworm main\n")
    assert ompi_build.system_debian_mirror(apt) == "http://site.example/deb"  # sources.list comes first
    (apt / "sources.list").write_text("deb http://security.example/x bookworm-security main\n")
    (apt / "sources.list.d" / "debian.sources").unlink()
    with pytest.raises(FtslideError, match="no Debian archive in the system's apt sources"):
        ompi_build.system_debian_mirror(apt)
    assert "://" in ompi_build.system_debian_mirror()  # this machine's own
    assert "deb.debian.org" not in (REPO / "ompi-ulfm" / "build.toml").read_text()


def test_a_cached_thing_is_made_by_one_process_at_a_time(tmp_path, capfd):
    """ompi.exclusive, which the Open MPI build and pympi.side_environment hold while they make their
    folder: a second process waits (saying once on stderr for what) until the first lets go, and the
    lock is let go when its holder is killed."""
    lockfile = tmp_path / "venv-x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from ftslide.toolchain.ompi import exclusive\n"
         f"with exclusive(Path({str(lockfile)!r}), 'x'):\n    print('held', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        timer = threading.Timer(2.0, holder.kill)
        timer.start()
        started = time.monotonic()
        with ompi_build.exclusive(lockfile, "the Python environment venv-x"):
            waited = time.monotonic() - started
        timer.cancel()
    finally:
        holder.kill()
        holder.wait()
    assert 1.5 < waited < 30, waited
    err = capfd.readouterr().err
    assert err.count("waiting for another process making the Python environment venv-x to finish") == 1, err
