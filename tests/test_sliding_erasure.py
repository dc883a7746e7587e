"""The erasure code and stripe layout of the sliding runtime's checkpoints (sliding/runtime/src/sliding_erasure.c).

The C unit test sliding/runtime/tests/test_sliding_erasure.c is compiled with the system cc (the unit has no
MPI) and linked with ISA-L, twice: as libsliding compiles it (-O2, warnings as errors), and with
AddressSanitizer and UndefinedBehaviorSanitizer and tiny pieces for ISA-L's int lengths, so that the loop
that cuts long chunks runs on every length. Each group runs as its own test, as tests/test_c_units.py runs
the core's. Then the wiring: libsliding links ISA-L and keeps the unit's symbols to itself, and
``ftslide doctor`` has a row for ISA-L. A missing libisal-dev fails the compile (never skips).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ftslide.commands import doctor
from ftslide.sliding import runtime as stencil
from ftslide.toolchain.native import REPO

RUNTIME = REPO / "sliding" / "runtime"
TEST_SOURCE = RUNTIME / "tests" / "test_sliding_erasure.c"
UNIT_SOURCE = RUNTIME / "src" / "sliding_erasure.c"
GROUPS = ("code", "layout", "errors", "mislabelled")
# How each variant of the test program is compiled (beside the include folders and -lisal).
VARIANTS = {
    "plain": ("-O2", "-Wall", "-Wextra", "-Wshadow", "-Werror"),
    "sanitized": ("-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                  "-DSLIDING_ERASURE_PIECE_BYTES=64", "-Wall", "-Wextra", "-Werror"),
}


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    cc = shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler cc: apt-get install -y build-essential")
    out_dir = tmp_path_factory.mktemp("erasure")
    built = {}
    for name, flags in VARIANTS.items():
        binary = out_dir / f"test_sliding_erasure-{name}"
        cmd = [cc, *flags, f"-I{RUNTIME / 'src'}", f"-I{RUNTIME / 'include'}", "-o", str(binary),
               str(TEST_SOURCE), str(UNIT_SOURCE), "-lisal"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, (f"compiling the {name} test failed (ISA-L: apt-get install -y libisal-dev):\n"
                                        + result.stderr[-4000:])
        built[name] = binary
    return built


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("group", GROUPS)
def test_c_group(programs: dict[str, Path], variant: str, group: str) -> None:
    result = subprocess.run([str(programs[variant]), group], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-6000:]
    checks, failed = result.stdout.split()[0], result.stdout.split()[2]
    assert int(checks) > 10 and failed == "0", result.stdout


def test_unknown_group_is_refused(programs: dict[str, Path]) -> None:
    result = subprocess.run([str(programs["plain"]), "nonsense"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "unknown group 'nonsense'" in result.stderr


def test_libsliding_links_isal_and_hides_the_unit(mpi_prefix: Path) -> None:
    """libsliding, built with the build's mpicc, compiles the unit, needs libisal and exports none of the
    unit's functions (they are the runtime's own)."""
    assert UNIT_SOURCE in stencil.LIBRARY_SOURCES and "-lisal" in stencil.LIBRARY_LINK
    library = stencil.build_library(mpi_prefix)
    dynamic = subprocess.run(["readelf", "-d", "-W", str(library)], capture_output=True, text=True, timeout=60)
    assert "[libisal.so" in dynamic.stdout, dynamic.stdout
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True,
                             timeout=60)
    assert symbols.returncode == 0 and " sliding_create" in symbols.stdout
    assert "sliding_code_" not in symbols.stdout and "sliding_stripe_" not in symbols.stdout
    every = subprocess.run(["nm", str(library)], capture_output=True, text=True, timeout=60)
    assert " sliding_code_decode" in every.stdout  # built in, only not exported


def test_doctor_checks_isal() -> None:
    row = next(c for c in doctor.checks() if c.name.startswith("ISA-L"))
    assert row.ok and "isa-l/erasure_code.h" in row.detail, row
    missing = doctor._header("ISA-L", "isa-l/no_such_header.h", f"{doctor.APT} libisal-dev")
    assert not missing.ok and "no_such_header.h" in missing.detail
    assert missing.fix == "apt-get install -y libisal-dev"
