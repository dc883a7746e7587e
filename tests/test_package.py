"""The ftslide package outside a checkout (issue 39): `pip wheel .` builds a wheel that carries the
C cores, and from that wheel installed in a fresh virtual environment the tools work from any
folder, while the commands that need a checkout say so in one line.

The wheel is built without build isolation (scikit-build-core comes with the test extra), and the
fresh environment takes numpy, matplotlib and OR-Tools from this environment through a .pth line
rather than downloading them: nothing is fetched. Cost: a wheel build of the C cores (about 20 s on
2 cores), a few seconds of commands.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from ftslide.toolchain.native import REPO
from test_build import assert_one_line_error

# What the Python side loads from an installed package (ftslide/toolchain/native.py, CMakeLists.txt).
NATIVE_FILES = ("ftslide/_native/lib/libslidecore.so", "ftslide/_native/lib/libslidenames.so",
                "ftslide/_native/bin/protocheck", "ftslide/_native/bin/ftproto_sim",
                "ftslide/_native/share/simulations/smpi/ftsim_kernels.c")
MAP_ARGS = ("map", "--grid", "6x6x6", "--spares", "x:1", "--method", "routed", "--fail", "40,41")
PLAN_ARGS = ("plan", "--preset", "k", "--failures", "8", "--spare-nodes", "144")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel <repo>` into a temporary folder (the checkout's build/ is not touched)."""
    out = tmp_path_factory.mktemp("wheel")
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": "2"}  # the machine is shared
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                             "--no-index", "-q", "-w", str(out), str(REPO)],
                            capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, (f"pip wheel failed (scikit-build-core missing? pip install -e '.[test]'):\n"
                                    f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    wheels = list(out.glob("ftslide-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (no checkout on its path)."""
    root = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "-q", str(wheel)], check=True, timeout=300, stdin=subprocess.DEVNULL)
    # The dependencies from this environment, after the venv's own site-packages (a plain path
    # line: the .pth files there, such as the editable install's, are not read).
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "ftslide_test_deps.pth").write_text("".join(f"{path}\n" for path in sorted(ours)))
    return root


def installed(venv: Path, *args: str, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess:
    """The venv's ftslide command, run from ``cwd`` with nothing of the checkout on the path."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    base["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    return subprocess.run([str(venv / "bin" / "ftslide"), *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, **(env or {})}, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.timeout(900)
def test_the_wheel_carries_the_c_cores(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in NATIVE_FILES:
        assert name in names, f"{name} is not in {wheel.name}"
    assert "ftslide/cli.py" in names
    # Only what the package loads: no C unit tests, checker mutants or benchmarks.
    assert not [n for n in names if re.search(r"/(test_|protocheck_mut_|sliding_map)", n)], sorted(names)


@pytest.mark.timeout(900)
def test_installed_package_runs_outside_the_checkout(venv: Path, tmp_path: Path):
    """map, plan, protocols check and simulate from the installed wheel, in a folder outside the
    checkout: the C cores are the package's own, and map prints what it prints in the checkout."""
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import ftslide.toolchain.native as n; print(n.CHECKOUT); print(n.BUILD_DIR)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert where.returncode == 0, where.stderr
    checkout, build_dir = where.stdout.split("\n")[:2]
    assert checkout == "None" and Path(build_dir).is_relative_to(venv), where.stdout

    mapped = installed(venv, *MAP_ARGS, cwd=tmp_path)
    assert mapped.returncode == 0, mapped.stderr
    assert "180 ranks on 216 nodes" in mapped.stdout
    assert re.search(r"^routed\s+2/2\s", mapped.stdout, re.M), mapped.stdout
    assert re.search(r"^1\s+40 \(1\.0\.4\)\s+block", mapped.stdout, re.M), mapped.stdout
    here = subprocess.run([sys.executable, "-m", "ftslide", *MAP_ARGS], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert mapped.stdout == here.stdout

    plan = installed(venv, *PLAN_ARGS, cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert "slowdown after 8 failures" in plan.stdout
    rows = re.findall(r"^\s*\d+\s+([xyz]:1)\s+(simple|slide1d|hybrid|routed)\s+144\s", plan.stdout, re.M)
    assert len(rows) >= 10, plan.stdout
    assert re.search(r"^best: spares [xyz]:1 with \w+: stencil7 [0-9.]+x after 8 failures", plan.stdout, re.M), \
        plan.stdout

    check = installed(venv, "protocols", "check", "--proto", "era", "--p", "2-4", "--exhaustive",
                      "--max-crashes", "1", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "result: PASS" in check.stdout, check.stdout

    # A cache of its own: the SMPI kernels compile from the source the wheel ships.
    cache = tmp_path / "cache"
    sim = installed(venv, "simulate", "--topology", "torus:4x4x4", "--spares", "x:1", "--methods", "simple,routed",
                    "--failures", "0..1", "--patterns", "stencil7", "--trials", "1", "--out", str(tmp_path / "sim"),
                    cwd=tmp_path, env={"FTSLIDE_CACHE": str(cache)})
    assert sim.returncode == 0, sim.stderr
    assert re.search(r"^simple\s+1\s+stencil7\s+[0-9.]+", sim.stdout, re.M), sim.stdout
    assert list((cache / "smpi" / "bin").glob("ftsim_kernels-*"))
    assert (tmp_path / "sim" / "slowdown.csv").is_file()


@pytest.mark.timeout(900)
def test_installed_package_says_what_needs_a_checkout(venv: Path, tmp_path: Path):
    for args in (("demo",), ("faults", "--runs", "1"), ("run", "-np", "2", "/bin/true")):
        result = installed(venv, *args, cwd=tmp_path, timeout=120)
        assert_one_line_error(result, "needs a checkout of ftslide", "./bootstrap setup")
    doctor = installed(venv, "doctor", cwd=tmp_path, timeout=120)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    row = next(line for line in doctor.stdout.splitlines() if line.startswith("Open MPI build"))
    assert "needs a checkout of ftslide" in row, doctor.stdout
