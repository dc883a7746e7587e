"""The C unit tests of tests/test_c_units.py, run by ctest in the background of the whole session.

When collection ends, the C tests of the selected ``test_c_unit`` items start in one ctest run at the
lowest CPU priority (nice 19), as many at a time as the machine has cores. They are CPU-bound (the
exhaustive protocol checks are most of the suite's CPU time) while the MPI tests mostly wait, so
they take the cycles the rest of the suite leaves idle and almost none from it. Their items run
last and read each C test's status and output from ctest's JUnit report.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import pytest

from ftslide.toolchain.native import BUILD_DIR

CTEST_TIMEOUT = 300  # seconds for one C test (ctest ends it after this and reports it failed)
RUN_TIMEOUT = 2400  # seconds the last item waits, at most, for the whole run
ITEM = "test_c_unit"


@dataclass
class CtestRun:
    process: subprocess.Popen
    junit: Path
    log: Path


RUN_KEY = pytest.StashKey[CtestRun]()


def c_test_names(items: list[pytest.Item]) -> list[str]:
    return sorted({item.callspec.params["name"] for item in items if getattr(item, "originalname", "") == ITEM})


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The C unit items last, so that the background run has the whole session to finish."""
    items.sort(key=lambda item: getattr(item, "originalname", "") == ITEM)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the run (tests/test_c_units.py built the C cores when it was collected)."""
    names = c_test_names(session.items)
    if not names or session.config.option.collectonly:
        return
    folder = Path(tempfile.mkdtemp(prefix="ftslide-ctest-"))
    junit, log = folder / "results.xml", folder / "ctest.log"
    pattern = "^(" + "|".join(re.escape(name) for name in names) + ")$"
    with open(log, "w") as out:
        process = subprocess.Popen(["nice", "-n", "19", "ctest", "-j", str(os.cpu_count() or 1), "--timeout",
                                    str(CTEST_TIMEOUT), "--output-junit", str(junit), "-R", pattern],
                                   cwd=BUILD_DIR, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    session.config.stash[RUN_KEY] = CtestRun(process, junit, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    """A run still going when the session ends (interrupted, or its items deselected) is ended; its
    folder is removed."""
    run = config.stash.get(RUN_KEY, None)
    if run is None:
        return
    if run.process.poll() is None:
        os.killpg(run.process.pid, signal.SIGKILL)
        run.process.wait()
    shutil.rmtree(run.junit.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def ctest_results(request: pytest.FixtureRequest) -> dict[str, tuple[str, str]]:
    """Status ("run", "fail", ...) and output of every C test of the session's run, by name."""
    run = request.config.stash.get(RUN_KEY, None)
    if run is None:
        pytest.fail("the C unit tests were not started (tests/harness/ctest_run.py)")
    try:
        run.process.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(run.process.pid, signal.SIGKILL)
        pytest.fail(f"ctest did not end within {RUN_TIMEOUT} s:\n{run.log.read_text()[-4000:]}")
    if not run.junit.is_file():
        pytest.fail(f"ctest wrote no results (exit {run.process.returncode}):\n{run.log.read_text()[-4000:]}")
    results = {}
    for case in ElementTree.parse(run.junit).getroot().iter("testcase"):
        output = "".join(node.text or "" for node in case.iter("system-out"))
        results[case.get("name", "")] = (case.get("status", ""), output)
    return results
