"""The C unit tests registered with ctest, one pytest item each.

The C cores are built (CMake) when this module is collected. The C tests of the selected items run in
one ctest run in the background of the whole session, at the lowest CPU priority, on every core
(tests/harness/ctest_run.py); the items run last, and each reports its own C test, with its output
when it failed.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from ftslide.toolchain.native import build_native
from harness.ctest_run import RUN_TIMEOUT


def _ctest_names() -> list[str]:
    build = build_native()
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True,
                             check=True)
    return [test["name"] for test in json.loads(listing.stdout).get("tests", [])]


@pytest.mark.timeout(RUN_TIMEOUT + 60)
@pytest.mark.parametrize("name", _ctest_names())
def test_c_unit(name, ctest_results):
    status, output = ctest_results.get(name, ("not run", ""))
    assert status == "run", f"{name}: {status}\n{output[-6000:]}"
