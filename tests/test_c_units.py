"""The C unit tests registered with ctest, one pytest item each.

The C cores are built (CMake) when this module is collected; each ctest test
then runs on its own, so a failure names the C test and shows its output.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from ftslide.toolchain.native import build_native


def _ctest_names() -> list[str]:
    build = build_native()
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True,
                             check=True)
    return [test["name"] for test in json.loads(listing.stdout).get("tests", [])]


@pytest.mark.parametrize("name", _ctest_names())
def test_c_unit(name):
    result = subprocess.run(["ctest", "--output-on-failure", "--timeout", "300", "-R", f"^{name}$"],
                            cwd=build_native(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "1 tests passed" in result.stdout or "100% tests passed" in result.stdout, result.stdout
