"""The persistent level of the sliding runtime's checkpoints (sliding/runtime/src/sliding_file.c).

The C unit test sliding/runtime/tests/test_sliding_file.c is compiled with the system cc and -pthread (the
unit has no MPI) and linked with ISA-L (its CRC-32), three times: as libsliding compiles it (-O2, warnings
as errors), with AddressSanitizer and UndefinedBehaviorSanitizer, and with ThreadSanitizer (the writer
thread and the application's share the staging buffer). Each group runs as its own test in a directory of
its own; after the round trip, Python reads a rank file's header and checks its CRC with zlib, a second
implementation of the same CRC-32. Then the wiring: libsliding compiles the unit and keeps its symbols to
itself. A missing compiler or libisal-dev fails (never skips).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from ftslide.sliding import runtime as stencil
from ftslide.toolchain.native import REPO

RUNTIME = REPO / "sliding" / "runtime"
TEST_SOURCE = RUNTIME / "tests" / "test_sliding_file.c"
UNIT_SOURCES = (RUNTIME / "src" / "sliding_file.c", RUNTIME / "src" / "sliding_names.c")
GROUPS = ("roundtrip", "manifest", "shape", "malformed", "dirs", "damaged", "nonblocking", "free", "args")
COMMON = ("-pthread", "-Wall", "-Wextra", "-Werror")
VARIANTS = {
    "plain": ("-O2", "-Wshadow", *COMMON),
    "sanitized": ("-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", *COMMON),
    "threads": ("-O1", "-g", "-fsanitize=thread", *COMMON),
}
# The large checkpoint of the nonblocking group, in MiB: the sanitized builds copy slowly.
LARGE_MIB = {"plain": "128", "sanitized": "32", "threads": "16"}
HEADER = struct.Struct("<8sQQQII24x")  # sliding_file.h: magic, version, rank, payload bytes, CRCs, zeros


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    cc = shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler cc: apt-get install -y build-essential")
    out_dir = tmp_path_factory.mktemp("file-level")
    built = {}
    for name, flags in VARIANTS.items():
        binary = out_dir / f"test_sliding_file-{name}"
        cmd = [cc, *flags, f"-I{RUNTIME / 'src'}", f"-I{RUNTIME / 'include'}", "-o", str(binary),
               str(TEST_SOURCE), *map(str, UNIT_SOURCES), "-lisal"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, (f"compiling the {name} test failed (ISA-L: apt-get install -y libisal-dev):\n"
                                        + result.stderr[-4000:])
        built[name] = binary
    return built


def run_group(program: Path, group: str, directory: Path, variant: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([str(program), group, str(directory)], capture_output=True, text=True, timeout=300,
                            env={"PATH": "/usr/bin:/bin", "SLIDING_FILE_TEST_MIB": LARGE_MIB[variant]})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    checks, _, failed, _ = result.stdout.splitlines()[-1].split()
    assert int(checks) > 5 and failed == "0", result.stdout
    return result.stdout


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("group", GROUPS)
def test_c_group(programs: dict[str, Path], variant: str, group: str, tmp_path: Path) -> None:
    output = run_group(programs[variant], group, tmp_path / "dir", variant)
    if group == "nonblocking":
        print(output)  # the copy and write times (pytest -s shows them)


def test_rank_file_format_read_by_python(programs: dict[str, Path], tmp_path: Path) -> None:
    """The rank file the round trip leaves (v9/r3.bin, 100000 bytes of rank 3) has the documented header,
    and its CRCs are zlib's CRC-32: another implementation agrees with ISA-L's."""
    run_group(programs["plain"], "roundtrip", tmp_path, "plain")
    data = (tmp_path / "v9" / "r3.bin").read_bytes()
    magic, version, rank, size, payload_crc, header_crc = HEADER.unpack(data[:HEADER.size])
    assert (magic, version, rank, size) == (b"SLDRANK1", 9, 3, 100000)
    assert len(data) == 64 + size and data[40:64] == bytes(24)
    assert payload_crc == zlib.crc32(data[64:]) and header_crc == zlib.crc32(data[:36])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v3", "v6", "v9"]  # no manifest: never committed
    assert sorted(p.name for p in (tmp_path / "v9").iterdir()) == [f"r{r}.bin" for r in range(4)]


def test_unknown_group_and_usage_are_refused(programs: dict[str, Path], tmp_path: Path) -> None:
    result = subprocess.run([str(programs["plain"]), "nonsense", str(tmp_path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "unknown group 'nonsense'" in result.stderr
    result = subprocess.run([str(programs["plain"])], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "usage" in result.stderr


def test_libsliding_compiles_the_unit_and_hides_it(mpi_prefix: Path) -> None:
    """libsliding, built with the build's mpicc, compiles sliding_file.c and exports none of its functions."""
    assert UNIT_SOURCES[0] in stencil.LIBRARY_SOURCES
    library = stencil.build_library(mpi_prefix)
    exported = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True,
                              timeout=60)
    assert exported.returncode == 0 and " sliding_create" in exported.stdout
    assert "sliding_file_" not in exported.stdout
    every = subprocess.run(["nm", str(library)], capture_output=True, text=True, timeout=60)
    assert " sliding_file_stage" in every.stdout  # built in, only not exported
