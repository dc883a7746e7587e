"""`ftslide doctor`'s feature table (issue 39): every row found by probing the MPI in use, for our build
and for upstream Open MPI 5.0.11 (``upstream_prefix``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ftslide.toolchain import features

pytestmark = pytest.mark.timeout(600)


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ftslide", "doctor", *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))


def rows(text: str) -> dict[str, str]:
    """feature name -> yes | no | ? from the printed table."""
    found = {}
    for name in features.FEATURES.values():
        match = re.search(rf"^{re.escape(name)}\s+(yes|no|\?)\s", text, re.M)
        assert match, f"no row {name!r} in\n{text}"
        found[name] = match[1]
    return found


def test_our_build_has_every_feature(mpi_prefix):
    done = doctor()
    table = rows(done.stdout)
    assert set(table.values()) == {"yes"}, done.stdout
    assert f"the project's build of Open MPI 5.0.7 at {mpi_prefix}" in done.stdout


def test_upstream_has_ulfm_and_none_of_ours(upstream_prefix):
    """5.0.11: FT MPI support, none of our additions; the finalize row from the probe run (yes or no, a
    race; test_any_mpi provokes the hang), never from the version."""
    done = doctor("--mpi", str(upstream_prefix))
    table = rows(done.stdout)
    name = features.FEATURES
    assert table[name["ft"]] == "yes", done.stdout
    for key in ("revoke", "agreement", "ishrink", "node_loss", "fortran", "mpi4py"):
        assert table[name[key]] == "no", (key, done.stdout)
    assert table[name["finalize"]] in ("yes", "no"), done.stdout
    assert "probe run: np 3, one rank SIGKILLed" in done.stdout
    assert f"Open MPI 5.0.11 at {upstream_prefix}" in done.stdout
    # the checks of the dependencies pass with it: mpi4py against another MPI is a feature, not a dependency
    assert re.search(r"^Open MPI build \(FT MPI support: yes\)\s+ok\s", done.stdout, re.M), done.stdout
    assert done.returncode == 0 and "all 8 checks passed" in done.stdout, done.stdout


def test_doctor_with_a_bad_mpi_says_why(tmp_path):
    done = doctor("--mpi", str(tmp_path / "nowhere"))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert re.search(r"Open MPI build \(FT MPI support: yes\)\s+MISSING\s+--mpi .*nowhere is not usable: no such "
                     r"folder", done.stdout), done.stdout
    assert "offers the sliding runtime" not in done.stdout
