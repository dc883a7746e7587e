"""The C unit tests registered with ctest, one pytest item each.

The C cores are built (CMake) when this module is collected. The C tests of the items selected in
this session run in one ctest run, as many at a time as the machine has cores (each is one thread,
and the exhaustive protocol checks are most of the suite's CPU time), when the first item runs;
each item then reports its own C test, with its output when it failed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from ftslide.toolchain.native import build_native

CTEST_TIMEOUT = 300  # seconds for one C test (ctest ends it after this and reports it failed)
RUN_TIMEOUT = 2400  # seconds for the whole run of the selected C tests


def _ctest_names() -> list[str]:
    build = build_native()
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True,
                             check=True)
    return [test["name"] for test in json.loads(listing.stdout).get("tests", [])]


@pytest.fixture(scope="session")
def ctest_results(request, tmp_path_factory) -> dict[str, tuple[str, str]]:
    """Status ("run", "fail", ...) and output of every C test selected in this session, by name."""
    names = sorted({item.callspec.params["name"] for item in request.session.items
                    if item.originalname == "test_c_unit"})
    junit = tmp_path_factory.mktemp("ctest") / "results.xml"
    pattern = "^(" + "|".join(re.escape(name) for name in names) + ")$"
    run = subprocess.run(["ctest", "-j", str(os.cpu_count() or 1), "--timeout", str(CTEST_TIMEOUT),
                          "--output-junit", str(junit), "-R", pattern],
                         cwd=build_native(), capture_output=True, text=True, timeout=RUN_TIMEOUT)
    if not Path(junit).is_file():
        pytest.fail(f"ctest wrote no results (exit {run.returncode}):\n{run.stdout[-4000:]}{run.stderr[-2000:]}")
    results = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        output = "".join(node.text or "" for node in case.iter("system-out"))
        results[case.get("name", "")] = (case.get("status", ""), output)
    return results


@pytest.mark.timeout(RUN_TIMEOUT + 60)
@pytest.mark.parametrize("name", _ctest_names())
def test_c_unit(name, ctest_results):
    status, output = ctest_results.get(name, ("not run", ""))
    assert status == "run", f"{name}: {status}\n{output[-6000:]}"
