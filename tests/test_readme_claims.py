"""The README's figures come from committed runs: each claim is read from the README's text and compared
with the JSON of the run it names (issue 39: "claims that come from runs")."""

from __future__ import annotations

import json
import re

from ftslide.toolchain.native import REPO

README = (REPO / "README.md").read_text()
SLOWDOWN = REPO / "bench" / "simulate" / "results" / "slowdown-torus8x8x8.json"


def slowdown(run: dict, method: str, pattern: str, failures: int) -> float:
    (row,) = [r for r in run["rows"] if (r["method"], r["pattern"], r["failures"]) == (method, pattern, failures)]
    assert row["trials_ok"] == row["trials"] == 3 and row["error"] is None, row
    return row["slowdown_median"]


def test_the_slowdown_sentence_is_the_committed_run():
    """The 8x8x8 slowdown sentence: simple, slide1d and hybrid, routed after 4 failures (all halos at once),
    and routed with the halos one dimension at a time, each rounded to one decimal as the README prints it;
    the run is the demo's command (torus:8x8x8, spares x:1, the four methods, failures 0..4, seed 1)."""
    text = " ".join(README.split())
    found = re.search(r"After 4 failures simple substitution makes the halo exchange ([\d.]+)x slower, slide1d and "
                      r"hybrid ([\d.]+)x, routed ([\d.]+)x \(([\d.]+)x when the halos go one dimension at a time\)",
                      text)
    assert found, "the README's slowdown sentence changed: update this test with it"
    assert SLOWDOWN.name in text
    run = json.loads(SLOWDOWN.read_text())
    config = run["config"]
    assert (config["topology"], config["spares"], config["methods"], config["failures"], config["seed"]) == \
        ("torus:8x8x8", "x:1", ["simple", "slide1d", "hybrid", "routed"], [0, 1, 2, 3, 4], 1)
    claimed = [float(x) for x in found.groups()]
    measured = [slowdown(run, "simple", "stencil7", 4), slowdown(run, "slide1d", "stencil7", 4),
                slowdown(run, "routed", "stencil7", 4), slowdown(run, "routed", "stencil7-phased", 4)]
    assert claimed == [round(x, 1) for x in measured]
    assert round(slowdown(run, "hybrid", "stencil7", 4), 1) == claimed[1]  # "slide1d and hybrid"
    demo = re.search(r"exec ftslide simulate (.*?) --out", (REPO / "bootstrap").read_text(), re.S)
    assert demo and "--topology torus:8x8x8" in demo.group(1) and "--seed 1" in demo.group(1)
