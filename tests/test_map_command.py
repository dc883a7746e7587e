"""ftslide map: the metrics table, JSON, plots and every kind of bad input, through the real CLI.

The numbers for mesh:4x4, spares x:1, failure of node 5 = (1,1) were worked out by hand
(12 ranks on a 3x4 logical grid, 17 neighbour pairs, x-first routing):
- simple: rank 5 goes to spare 13 = (3,1) (2 hops; 12 and 14 are 3). Pairs 1-5, 4-5, 5-6 become
  3 hops, the rest 1: hist 1:14 3:3, mean 23/17. Link (3,1)x- carries rank 5's messages to
  1, 4, 6 and 9 (load 4); (2,1)x- 3, (2,1)x+ 2, (1,0)x+ 2, (1,2)x+ 2: 5 links above 1.
- slide1d: 5 -> (2,1), 9 -> (3,1); pairs 1-5, 4-5, 5-6, 8-9, 9-10 are 2 hops: hist 1:12 2:5,
  mean 22/17; (2,1)x- and (3,1)x- carry 3 messages, (1,0)x+ and (1,2)x+ 2: max 3, 4 links.
- slide2d: logical planes x=1,2 move to x=2,3 (8 ranks); the 4 pairs between x=0 and x=1 are
  2 hops: hist 1:13 2:4; every pair stays on its line: max load 1.
- shrink: rank 5 is adopted by node 1 (the lowest of the four 1-hop survivors): pair 1-5 is
  0 hops, 4-5, 5-6, 5-9 are 2: hist 0:1 1:13 2:3, two ranks on node 1.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MESH = ["--grid", "4x4", "--topology", "mesh", "--spares", "x:1"]


def ftslide_map(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ftslide", "map", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def table(stdout: str) -> tuple[str, dict[str, dict[str, str]]]:
    """(header line, {method: {column: cell}}) from the command's text output (the first table: routed's
    per-failure table follows it after a blank line)."""
    lines = stdout.strip().splitlines()
    header, columns, rule = lines[0], lines[1], lines[2]
    assert set(rule.replace(" ", "")) == {"-"}, stdout
    # Cells are separated by two or more spaces (cells like "1:12 2:5" contain single spaces).
    names = re.split(r"\s{2,}", columns.strip())
    rows = {}
    for line in lines[3:]:
        if not line.strip():
            break
        if line.startswith("plot: "):
            continue
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(names), line
        rows[cells[0]] = dict(zip(names, cells))
    return header, rows


def assert_one_line_error(result: subprocess.CompletedProcess[str], *phrases: str) -> str:
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


def test_table_of_a_hand_checked_case():
    result = ftslide_map(*MESH, "--method", "simple,slide1d,slide2d,hybrid,shrink", "--fail", "5")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    header, rows = table(result.stdout)
    assert header.startswith("grid mesh:4x4, logical 3x4: 12 ranks on 16 nodes, spares x:1 (4 nodes); "
                             "failures 5 (1.1); 5-point open stencil"), header
    expected = {  # placed, moved, max hops, mean hops, hops:pairs, max load, links >1, ranks/node
        "simple": ["1/1", "1", "3", "1.353", "1:14 3:3", "4", "5", "1"],
        "slide1d": ["1/1", "2", "2", "1.294", "1:12 2:5", "3", "4", "1"],
        "slide2d": ["1/1", "8", "2", "1.235", "1:13 2:4", "1", "0", "1"],
        "hybrid": ["1/1", "8", "2", "1.235", "1:13 2:4", "1", "0", "1"],   # its 2D phase
        "shrink": ["1/1", "1", "2", "1.118", "0:1 1:13 2:3", "3", "5", "2"],
    }
    assert list(rows) == list(expected)
    for method, values in expected.items():
        assert list(rows[method].values())[1:] == values, (method, rows[method])


def test_methods_side_by_side_in_the_order_given():
    _, rows = table(ftslide_map(*MESH, "--method", "shrink,simple", "--fail", "5").stdout)
    assert list(rows) == ["shrink", "simple"]
    _, rows = table(ftslide_map(*MESH, "--method", "all", "--fail", "5").stdout)
    assert list(rows) == ["simple", "slide1d", "slide2d", "hybrid", "shrink", "routed"]
    # Same failure list for every method: the same numbers as each method run alone.
    for method, row in rows.items():
        _, alone = table(ftslide_map(*MESH, "--method", method, "--fail", "5").stdout)
        assert alone == {method: row}


def test_routed_shows_its_choice_per_failure():
    """12x12x12 with a spare plane: the first failure takes the whole slab (load 1), the second a partial
    block; the table and the JSON give the same decisions and the loads of hybrid and direct beside them."""
    args = ("--grid", "torus:12x12x12", "--method", "routed", "--fail", "464,758")
    result = ftslide_map(*args)
    assert result.returncode == 0, result.stderr
    _, rows = table(result.stdout)
    assert rows["routed"]["max load"] == "2"
    per_failure = result.stdout.split("routed, failure by failure", 1)[1].strip().splitlines()[3:]
    assert [line.split()[0] for line in per_failure] == ["1", "2"]
    assert "block x" in per_failure[0] and "y all z all" in per_failure[0]
    doc = json.loads(ftslide_map(*args, "--json").stdout)
    choices = doc["methods"][0]["choices"]
    assert [c["node"] for c in choices] == [464, 758]
    assert [c["load_max"] for c in choices] == [1, 2]
    assert all(c["kind"] == "block" and c["hybrid_load_max"] >= c["load_max"] for c in choices)
    assert choices[0]["choice"] in per_failure[0]


def test_failure_free_map():
    result = ftslide_map(*MESH, "--method", "all")
    assert result.returncode == 0, result.stderr
    header, rows = table(result.stdout)
    assert "no failure" in header
    for row in rows.values():
        assert (row["placed"], row["moved"], row["max hops"], row["max load"], row["links >1"]) == \
            ("0/0", "0", "1", "1", "0")
        assert row["hops:pairs"] == "1:17"


def test_json_matches_the_table():
    args = (*MESH, "--method", "all", "--fail", "5")
    _, rows = table(ftslide_map(*args).stdout)
    result = ftslide_map(*args, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["grid"], doc["spares"], doc["nodes"], doc["ranks"], doc["failures"]) == \
        ("mesh:4x4", "x:1", 16, 12, [5])
    assert [m["method"] for m in doc["methods"]] == list(rows)
    for m in doc["methods"]:
        row = rows[m["method"]]
        assert m["error"] is None and row["placed"] == f"{m['placed']}/1"
        assert str(m["ranks_moved"]) == row["moved"]
        assert str(m["hops_max"]) == row["max hops"]
        assert f"{m['hops_mean']:.3f}" == row["mean hops"]
        assert " ".join(f"{h}:{n}" for h, n in enumerate(m["hops_hist"]) if n) == row["hops:pairs"]
        assert str(m["link_load_max"]) == row["max load"]
        assert str(m["links_overloaded"]) == row["links >1"]
        assert str(m["ranks_per_node_max"]) == row["ranks/node"]
        assert sum(m["hops_hist"]) == m["pairs"] == 17
        assert "map" not in m
    with_map = json.loads(ftslide_map(*args, "--json", "--with-map").stdout)
    maps = {m["method"]: m["map"] for m in with_map["methods"]}
    assert maps["slide1d"] == [0, 1, 2, 3, 4, 9, 6, 7, 8, 13, 10, 11]
    assert maps["simple"] == [0, 1, 2, 3, 4, 13, 6, 7, 8, 9, 10, 11]
    assert maps["shrink"] == [0, 1, 2, 3, 4, 1, 6, 7, 8, 9, 10, 11]


def test_failure_lists_ids_ranges_and_coordinates():
    def failures(spec: str) -> list[int]:
        result = ftslide_map("--grid", "6x6x6", "--method", "hybrid", "--fail", spec, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["failures"]

    assert failures("40,41") == [40, 41]
    assert failures("1.0.4,1.0.5") == [40, 41]        # node = (x*6 + y)*6 + z
    assert failures("40-43,7") == [40, 41, 42, 43, 7]
    assert failures("43-41") == [43, 42, 41]          # order matters: kept as written
    assert failures(" 7 , 1.0.4 ") == [7, 40]


def test_the_documented_3d_example():
    result = ftslide_map("--grid", "6x6x6", "--topology", "torus", "--spares", "x:1", "--method",
                         "hybrid", "--fail", "40,41")
    assert result.returncode == 0, result.stderr
    header, rows = table(result.stdout)
    assert "180 ranks on 216 nodes, spares x:1 (36 nodes); failures 40 (1.0.4), 41 (1.0.5)" in header
    assert "7-point periodic stencil" in header
    # hybrid's 2D phase: 40 takes plane x=1 out, its ranks and those of planes 2..4 move one plane
    # toward the spare plane (72 ranks, load 1); 41 is in the vacated plane and held no rank.
    assert rows["hybrid"]["placed"] == "2/2" and rows["hybrid"]["moved"] == "72"
    assert rows["hybrid"]["max hops"] == "2" and rows["hybrid"]["max load"] == "1"


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_png_and_svg(tmp_path):
    png = tmp_path / "map.png"
    result = ftslide_map(*MESH, "--method", "simple,slide1d,slide2d", "--fail", "5", "--plot", str(png))
    assert result.returncode == 0, result.stderr
    assert f"plot: {png}" in result.stdout
    assert _is_png(png) and png.stat().st_size > 20_000
    width, height = int.from_bytes(png.read_bytes()[16:20], "big"), int.from_bytes(png.read_bytes()[20:24], "big")
    assert width > 2 * height > 400         # three panels side by side
    svg = tmp_path / "map.svg"
    result = ftslide_map("--grid", "6x6x6", "--method", "hybrid", "--fail", "40,41", "--slice", "5",
                         "--plot", str(svg))
    assert result.returncode == 0, result.stderr
    assert "<svg" in svg.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.png", "map.svg"]  # no temp files left


def test_plot_replaces_an_existing_file(tmp_path):
    png = tmp_path / "map.png"
    png.write_bytes(b"old")
    assert ftslide_map(*MESH, "--fail", "5", "--plot", str(png)).returncode == 0
    assert _is_png(png)
    assert [p.name for p in tmp_path.iterdir()] == ["map.png"]


def test_method_out_of_spares_reports_the_failure_and_the_last_good_map(tmp_path):
    png = tmp_path / "map.png"
    result = ftslide_map(*MESH, "--method", "slide1d", "--fail", "5,9", "--plot", str(png))
    line = assert_one_line_error(result, "failure #2 (node 9)", "--keep-going")
    assert line.startswith("ftslide map: error: slide1d: ")
    _, rows = table(result.stdout)          # the map after failure #1 is still shown
    assert rows["slide1d"]["placed"] == "1/2 (stuck at #2)" and rows["slide1d"]["max load"] == "3"
    assert list(tmp_path.iterdir()) == []   # no plot of an incomplete answer
    # Several methods stuck: one line naming each.
    result = ftslide_map(*MESH, "--method", "slide1d,slide2d,hybrid", "--fail", "5,9")
    assert_one_line_error(result, "slide1d at failure #2 (ELINE)", "slide2d at failure #2 (EPLANE)")
    # simple runs out of spares on the 5th failure (4 spares).
    result = ftslide_map(*MESH, "--method", "simple", "--fail", "1,2,3,5,6")
    assert_one_line_error(result, "simple: cannot place failure #5 (node 6): out of spares")
    # --keep-going accepts partial answers, in the table, the JSON and the plot.
    result = ftslide_map(*MESH, "--method", "slide1d,hybrid", "--fail", "5,9", "--keep-going",
                         "--plot", str(png))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert _is_png(png)
    doc = json.loads(ftslide_map(*MESH, "--method", "slide1d,hybrid", "--fail", "5,9", "--keep-going",
                                 "--json").stdout)
    stuck, ok = doc["methods"]
    assert stuck["placed"] == 1 and stuck["error"]["code"] == "ELINE" and stuck["error"]["node"] == 9
    assert ok["placed"] == 2 and ok["error"] is None


def test_degrade_goes_on_past_the_spares():
    """simple on mesh:4x4 x:1 (4 spares) after 5 failures: the fifth rank goes to a live node beside its
    own (one guest, id 16), as the runtime's --on-no-spare degrade would put it; the JSON names the guest's
    host."""
    result = ftslide_map(*MESH, "--method", "simple", "--fail", "1,2,3,5,6", "--on-no-spare", "degrade")
    assert result.returncode == 0, result.stderr
    _, rows = table(result.stdout)
    assert rows["simple"]["placed"] == "5/5" and rows["simple"]["ranks/node"] == "2"
    line = next(text for text in result.stdout.splitlines() if text.startswith("simple, degraded"))
    shared = re.search(r"node (\d+) runs node ranks (\d+),(\d+) \(1 guest started in all\)", line)
    assert shared, line
    doc = json.loads(ftslide_map(*MESH, "--method", "simple", "--fail", "1,2,3,5,6", "--on-no-spare", "degrade",
                                 "--json", "--with-map").stdout)
    entry = doc["methods"][0]
    assert entry["guests"] == [int(shared[1])] and entry["serving"].count(16) == 1
    assert sorted(entry["map"]).count(int(shared[1])) == 2


BAD_INPUTS = [
    (["--grid", "4x4", "--method", "foo"], "unknown method 'foo'"),
    (["--grid", "4x4", "--method", "simple,,hybrid"], "unknown method '(empty)'"),
    (["--grid", "4x4", "--method", "simple,simple"], "listed twice"),
    (["--grid", "4x"], "bad --grid '4x'"),
    (["--grid", "4x4x4x4"], "2 or 3 dimensions"),
    (["--grid", "0x4"], "bad --grid '0x4'"),
    (["--grid", "mesh:4x4", "--topology", "torus"], "give the topology once"),
    (["--grid", "4x4", "--spares", "x1"], "bad spare layout 'x1'"),
    (["--grid", "4x4", "--spares", "x:0"], "bad spare layout 'x:0'"),
    (["--grid", "4x4", "--spares", "z:1"], "does not fit grid"),
    (["--grid", "4x4", "--spares", "x:4"], "does not fit grid"),
    (["--grid", "4x4", "--fail", "16"], "failed node 16 is outside grid torus:4x4: node ids are 0..15"),
    (["--grid", "4x4", "--fail", "99999999999"], "outside grid"),
    (["--grid", "4x4", "--fail", "5,5"], "failed node 5 is listed twice"),
    (["--grid", "4x4", "--fail", "3-6,5"], "failed node 5 is listed twice"),
    (["--grid", "4x4", "--fail", "9.9"], "outside grid"),
    (["--grid", "4x4", "--fail", "1.2.3"], "3 coordinates"),
    (["--grid", "4x4", "--fail", "-1"], "bad failure '-1'"),
    (["--grid", "4x4", "--fail", "5,,6"], "bad failure '(empty)'"),
    (["--grid", "4x4", "--fail", "0-99"], "larger than grid"),
    (["--grid", "4x4", "--method", "shrink", "--spares", "none", "--fail", "0-15"], "every non-spare node has failed"),
    (["--grid", "4x4", "--slice", "1"], "--slice"),
    (["--grid", "4x4", "--with-map"], "--with-map only works with --json"),
    (["--grid", "4x4", "--topology", "ring"], "missing kind or size"),
    (["--topology", "fattree:4"], "not a 2D or 3D torus or mesh: give"),
    (["--topology", "torus:4x4", "--route-order", "yz"], "bad routing order"),
    (["--topology", "star:8", "--grid", "4x4"], "has only 8 hosts"),
    (["--grid", "torus:257x256x256"], "at most 16777216"),
    (["--grid", "6x6x6", "--method", "routed", "--expect-failures", "37"], "spare budget"),
    (["--grid", "4x4", "--on-no-spare", "degrade", "--fail", "0-15"], "degrading: cannot place failure #16"),
    (["--grid", "4x4", "--on-no-spare", "shrink"], "invalid choice: 'shrink'"),
]


@pytest.mark.parametrize("args,phrase", BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_leaves_no_file(tmp_path, args, phrase):
    plot = ["--plot", str(tmp_path / "map.png")] if "--plot" not in args else []
    assert_one_line_error(ftslide_map(*args, *plot), phrase)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("plot,phrase", [
    ("missing/map.png", "folder"),
    ("map.jpg", "must end in .png or .svg"),
    ("map", "must end in .png or .svg"),
])
def test_bad_plot_path(tmp_path, plot, phrase):
    assert_one_line_error(ftslide_map(*MESH, "--fail", "5", "--plot", str(tmp_path / plot)), phrase)
    assert list(tmp_path.iterdir()) == []


def test_grid_too_large_for_the_memory(tmp_path):
    """The largest grid the core accepts (2^24 nodes) with 1 GiB of address space: one line, no file."""
    import resource

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    result = subprocess.run([sys.executable, "-m", "ftslide", "map", "--grid", "torus:256x256x256", "--method",
                             "routed", "--fail", "3", "--plot", str(tmp_path / "map.png")], cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                            preexec_fn=limit_memory)
    assert_one_line_error(result, "too large for this machine")
    assert list(tmp_path.iterdir()) == []


def test_plot_path_that_is_a_folder(tmp_path):
    folder = tmp_path / "map.png"
    folder.mkdir()
    assert_one_line_error(ftslide_map(*MESH, "--fail", "5", "--plot", str(folder)), "is a folder")
    assert [p.name for p in tmp_path.iterdir()] == ["map.png"] and list(folder.iterdir()) == []


def test_slice_outside_the_grid(tmp_path):
    result = ftslide_map("--grid", "6x6x6", "--fail", "40", "--slice", "6", "--plot", str(tmp_path / "m.png"))
    assert_one_line_error(result, "--slice 6 is outside grid torus:6x6x6: z is 0..5")
    assert list(tmp_path.iterdir()) == []


def test_ranks_per_node_count_the_faces_between_nodes():
    """mesh:4x2, spares x:1, 2 ranks per node as 2x1 blocks: the rank grid is 6x2 (12 ranks on 6 nodes).
    By hand: 10 pairs along x, 6 of them inside a node (0 hops), 6 along y; an x link carries a 1-rank
    face, a y link a 2-rank face (load 2, on all 6 directed y links); 14 directed links used."""
    result = ftslide_map("--grid", "4x2", "--topology", "mesh", "--spares", "x:1", "--ranks-per-node", "2",
                         "--block", "2x1", "--method", "simple")
    assert result.returncode == 0, result.stderr
    header, rows = table(result.stdout)
    assert header.startswith("grid mesh:4x2, logical 3x2: 12 ranks (2 per node, blocks of 2x1: rank grid 6x2) "
                             "on 8 nodes"), header
    assert list(rows["simple"].values())[1:] == ["0/0", "0", "1", "0.625", "0:6 1:10", "2", "6", "2"]
    doc = json.loads(ftslide_map("--grid", "4x2", "--topology", "mesh", "--spares", "x:1", "--ranks-per-node", "2",
                                 "--method", "simple", "--fail", "1", "--json").stdout)
    assert (doc["ranks_per_node"], doc["block"], doc["node_ranks"], doc["ranks"]) == (2, [2, 1], 6, 12)
    assert doc["methods"][0]["ranks_moved"] == 2 and doc["methods"][0]["pairs"] == 16
    # one rank per node: the document as before, without the new keys
    assert "ranks_per_node" not in json.loads(ftslide_map(*MESH, "--json").stdout)


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`ftslide map --json --with-map | head -2`: the reader closes the pipe long before the 13,000
    ranks' map is written; the command stops as a pipe's writer does (status 141), no traceback."""
    with subprocess.Popen([sys.executable, "-m", "ftslide", "map", "--grid", "24x24x24", "--spares", "x:1",
                           "--fail", "3,4", "--json", "--with-map"], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().strip() == b"{"
        proc.stdout.close()
        status = proc.wait(timeout=120)  # a few lines at most on stderr: they fit in the pipe
        err = proc.stderr.read().decode()
    assert status == 141 and err == "", err


def test_redundancy_groups_across_domains():
    """parity:3 on mesh:4x4 x:1 (12 node ranks) in 2x2 boxes: 4 groups dealt by (domain, node rank), the
    worked example of slide_groups() in slide_core.h; parity:4 has only 3 groups for boxes of 4 node ranks."""
    result = ftslide_map(*MESH, "--redundancy", "parity:3", "--domains", "2x2")
    assert result.returncode == 0, result.stderr
    assert "hybrid: redundancy parity:3, failure domains 2x2 boxes (4 domains), on the final map: 4 groups" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"\s+\d+\s+\d+ \d+ \d+\s", line)]
    assert [row[1:4] for row in rows] == [["0", "2", "8"], ["1", "3", "9"], ["4", "6", "10"], ["5", "7", "11"]]
    assert "losing any one domain: survivable" in result.stdout
    crowded = ftslide_map(*MESH, "--redundancy", "parity:4", "--domains", "2x2")
    assert crowded.returncode == 0 and "losing any one domain: NOT survivable" in crowded.stdout, crowded.stdout
    buddy = ftslide_map(*MESH, "--domains", "2x2", "--json", "--method", "slide1d,simple", "--fail", "5")
    doc = json.loads(buddy.stdout)
    assert [m["redundancy"]["shift"] for m in doc["methods"]] == [6, 6]
    assert all(m["redundancy"]["survivable"] for m in doc["methods"])
    assert "redundancy" not in json.loads(ftslide_map(*MESH, "--json").stdout)["methods"][0]


@pytest.mark.parametrize("args, phrase", [
    (["--redundancy", "raid5"], "bad --redundancy 'raid5'"),
    (["--redundancy", "rs:4,4"], "bad --redundancy 'rs:4,4'"),
    (["--redundancy", "parity:13"], "group size larger than the node ranks"),
    (["--domains", "5x1"], "bad --domains '5x1'"),
    (["--domains", "2x2x1"], "bad --domains '2x2x1'"),
])
def test_bad_redundancy_or_domains_is_one_line(args, phrase):
    result = ftslide_map(*MESH, *args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and phrase in lines[0], result.stderr
    assert result.stdout == ""
