"""ftslide faults under the runtime's redundancy policies (issue 38): correlated kills planned from the
policy's own pairing and groups (the core's buddy_shift and groups), the judge held to what each policy
promises, and short real campaigns of heat2d (parity:4, rs:6,2, a whole failure domain, the file level,
K = 1 and 2) whose every run must be as the judge says it should.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ftslide.sliding import core, faults, runtime
from ftslide.sliding.core import compute_map, make_layout

REPO = Path(__file__).resolve().parents[1]
HEAT2D = ("mesh:4x3", "x:1")  # heat2d's layout: 9 node ranks (a 3x3 grid), 3 spares


def heat2d_campaign(**fields) -> faults.Campaign:
    grid, spares = HEAT2D
    return faults.Campaign(**{"grid": grid, "spares": spares, "app": "heat2d", **fields})


# ---- plans -----------------------------------------------------------------------------------

def test_phases_all_adds_the_correlated_phases_that_apply():
    """phases() is today's list (the default campaign's); --phases all adds partners and same_recovery
    always, overrun where a group may lose two, domain with domains, checkpoint_file with the file level."""
    assert "checkpoint_file" not in faults.phases()
    plain = faults.phases_for(heat2d_campaign())
    assert plain == (*faults.phases(), "partners", "same_recovery")
    every = faults.phases_for(heat2d_campaign(redundancy="rs:6,2", domains="2x1", file_level=True))
    assert every == (*faults.phases(), *faults.correlated_phases())
    assert faults.phases_for(heat2d_campaign(redundancy="parity:4", domains="2x1")) == \
        (*faults.phases(), "partners", "domain", "same_recovery")


@pytest.mark.parametrize("policy,domains", [("buddy", None), ("buddy", "2x1"), ("parity:4", None),
                                            ("parity:4", "2x1"), ("rs:6,2", "2x1")])
def test_correlated_plans_follow_the_policy_placement(policy, domains):
    """partners kills a node and one whose death with it loses a checkpoint with one failure more
    (the buddy pairing or a group, under the initial map and the domains); overrun kills M + 1
    members of one group; domain every node of the first victim's box; same_recovery a second node
    at recovery_agree or recovery_state. What the plans predict is what the policy promises: a buddy
    pair and two of a parity group lose a checkpoint, two of an rs:6,2 group do not, three do, a
    whole domain never does."""
    phases = ("partners", "overrun", "same_recovery", *(["domain"] if domains else []))
    c = heat2d_campaign(redundancy=policy, domains=domains, phases=phases, runs=40)
    faults.check(c)
    layout = make_layout(*HEAT2D)
    protection = c.protection()
    initial = layout.initial_map()
    lose = core.parse_redundancy(policy).lose
    seen = set()
    for index in range(40):
        phase, _method, kills = faults.plan(c, index)
        seen.add(phase)
        (first, first_point), *others = kills
        nodes = [first, *(node for node, _ in others)]
        assert len(set(nodes)) == len(nodes)
        if phase in ("partners", "overrun"):
            assert first_point.startswith("iter=") and int(first_point[5:]) >= c.checkpoint_every
            partners = faults.partners_of(layout, initial, protection, first)
            assert {node for node, _ in others} <= set(partners) and partners, (phase, kills)
            assert len(others) == (1 if phase == "partners" else lose), kills
            assert all(point in (first_point, "recovery_start") for _, point in others), kills
            lost = faults.lost_in_memory(layout, initial, protection, nodes)
            assert lost == (len(nodes) > lose), (policy, kills)
        elif phase == "domain":
            box = protection.domains[first]
            assert sorted(nodes) == [n for n in range(layout.nodes) if protection.domains[n] == box]
            assert all(point == "recovery_start" for _, point in others)
            assert not faults.lost_in_memory(layout, initial, protection, nodes), kills
        else:
            assert phase == "same_recovery" and len(others) == 1, kills
            assert first_point == "checkpoint#2" or first_point.startswith("iter=")
            assert others[0][1] in ("recovery_agree", "recovery_state")
    assert seen == set(c.phases)


def test_lost_in_memory_counts_each_group():
    """parity:4 on heat2d's 9 node ranks: groups of 5 and 4; one member of each group dead loses
    nothing, two of one group lose a checkpoint; rs:6,2 (one group of 9) loses one at three dead.
    Buddy without domains is buddies_among, the judge's test before policies."""
    layout = make_layout(*HEAT2D)
    mapping = layout.initial_map()
    parity = faults.Protection(core.parse_redundancy("parity:4"))
    g = core.groups(layout, mapping, None, 4, 1)
    a, b = g.members(0)[:2]
    c = g.members(1)[0]
    assert not faults.lost_in_memory(layout, mapping, parity, [mapping[a], mapping[c]])
    assert faults.lost_in_memory(layout, mapping, parity, [mapping[a], mapping[b]])
    rs = faults.Protection(core.parse_redundancy("rs:6,2"))
    assert not faults.lost_in_memory(layout, mapping, rs, [0, 1])
    assert faults.lost_in_memory(layout, mapping, rs, [0, 1, 2])
    buddy = faults.Protection()
    for dead in ([0, 4], [0, 1], [3, 7], [2, 6, 8]):
        assert faults.lost_in_memory(layout, mapping, buddy, dead) == faults.buddies_among(mapping, dead), dead


# ---- the judge --------------------------------------------------------------------------------

def ended(returncode: int, checksum: str | None, killed: dict[int, str], recoveries: list[tuple[int, list[int]]],
          lost: bool = False) -> runtime.StencilRun:
    """What heat2d reports, as runtime.parse reads it; ``lost``: it stopped with ERR_DATA_LOST."""
    errors = [runtime.RunError("recovery", runtime.Status.ERR_DATA_LOST, "lost")] if lost else []
    return runtime.StencilRun(returncode, "", "", checksum,
                              [runtime.Recovery(it, failed, 1, {"total": 5.0}) for it, failed in recoveries],
                              errors, dict(killed))


def judge(policy: str, kills, run, manifest: int | None = None, file_level: bool = False) -> faults.RunRecord:
    record = faults.RunRecord(1, "partners", "hybrid", kills, manifest=manifest)
    protection = faults.Protection(core.parse_redundancy(policy), None, file_level, 5)
    faults.judge(record, run, "0x1", make_layout(*HEAT2D), "hybrid", protection=protection)
    return record


def test_judge_holds_data_lost_to_the_policy():
    """Two nodes of one parity:4 group dead before a commit: data-lost is right, not promised; the same
    two under rs:6,2, or one per group under parity:4, were promised: data-lost there is wrong. With
    a file level and a manifest, data-lost is wrong (the runtime must roll back); without a manifest
    it is right. Before the first checkpoint (kills before iteration 5) nothing can be lost."""
    layout = make_layout(*HEAT2D)
    g = core.groups(layout, layout.initial_map(), None, 4, 1)
    a, b = g.members(0)[:2]
    c = g.members(1)[0]
    pair = [(a, "iter=12"), (b, "recovery_start")]
    landed = dict(pair)
    record = judge("parity:4", pair, ended(3, None, landed, [], lost=True))
    assert (record.outcome, record.ok, record.promised) == ("data-lost", True, False), record
    record = judge("rs:6,2", pair, ended(3, None, landed, [], lost=True))
    assert (record.outcome, record.ok, record.promised) == ("data-lost", False, True), record
    assert "rs:6,2 rebuilds" in record.detail
    apart = [(a, "iter=12"), (c, "recovery_start")]
    record = judge("parity:4", apart, ended(3, None, dict(apart), [], lost=True))
    assert (record.ok, record.promised) == (False, True), record
    record = judge("parity:4", pair, ended(3, None, landed, [], lost=True), manifest=10, file_level=True)
    assert (record.outcome, record.ok, record.promised) == ("data-lost", False, True), record
    assert "roll back" in record.detail
    record = judge("parity:4", pair, ended(3, None, landed, [], lost=True), manifest=None, file_level=True)
    assert (record.ok, record.promised) == (True, False), record
    early = [(a, "iter=3"), (b, "recovery_start")]
    record = judge("parity:4", early, ended(3, None, dict(early), [], lost=True))
    assert (record.ok, record.promised) == (False, True), record


def test_judge_a_rollback_must_end_with_the_failure_free_checksum():
    """A recovery that found two of a parity:4 group dead and resumed at iteration 10 rolled back to
    the file level: right with the failure-free checksum (rolled_back_to 10), a wrong checksum stays
    one. A later recovery's failures are judged under the map that recovery left: one more dead
    member of another group after the rollback is promised."""
    layout = make_layout(*HEAT2D)
    g = core.groups(layout, layout.initial_map(), None, 4, 1)
    a, b = g.members(0)[:2]
    pair = [(a, "iter=12"), (b, "recovery_start")]
    record = judge("parity:4", pair, ended(0, "0x1", dict(pair), [(10, sorted([a, b]))]), manifest=10,
                   file_level=True)
    assert (record.outcome, record.ok, record.promised, record.rolled_back_to) == ("recovered", True, True, 10)
    record = judge("parity:4", pair, ended(0, "0x2", dict(pair), [(10, sorted([a, b]))]), manifest=10,
                   file_level=True)
    assert (record.outcome, record.ok) == ("wrong-checksum", False)
    record = judge("parity:4", pair, ended(0, "0x1", dict(pair), [(0, sorted([a, b]))]), manifest=10,
                   file_level=True)  # resumed from the initial values: no file checkpoint is iteration 0
    assert (record.outcome, record.ok) == ("error", False) and "iteration 0" in record.detail, record
    after = compute_map(layout, "hybrid", sorted([a, b]))
    later = core.groups(layout, after, None, 4, 1)
    third = next(after[r] for r in later.members(1) if after[r] not in (a, b))
    kills = [*pair, (third, "iter=20")]
    run = ended(0, "0x1", dict(kills), [(10, sorted([a, b])), (20, [*sorted([a, b]), third])])
    record = judge("parity:4", kills, run, manifest=15, file_level=True)
    assert (record.outcome, record.ok, record.promised, record.rolled_back_to) == ("recovered", True, True, 10)


# ---- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command,args,phrase", [
    ("faults", ["--redundancy", "rs:4,4"], "M from 1 to G-1"),
    ("faults", ["--redundancy", "parity:1"], "at least 2"),
    ("faults", ["--redundancy", "rs:10,2"], "larger than the 9 nodes"),
    ("faults", ["--redundancy", "raid5"], "bad redundancy policy"),
    ("faults", ["--redundancy", "parity:4", "--domains", "2x2"], "no placement survives"),
    ("faults", ["--redundancy", "buddy", "--domains", "4x3"], "no placement survives"),
    ("faults", ["--domains", "2x2x1"], "bad domain box"),
    ("faults", ["--file-level", "--file-every", "0"], "--file-every"),
    ("faults", ["--file-every", "2"], "--file-level"),
    ("faults", ["--checkpoint-dir", "/nonexistent/ftslide"], "not a writable folder"),
    ("faults", ["--phases", "domain"], "--domains"),
    ("faults", ["--phases", "checkpoint_file"], "--file-level"),
    ("demo", ["--redundancy", "rs:3,3"], "M from 1 to G-1"),
    ("demo", ["--redundancy", "parity:9"], "larger than the 8 nodes"),
    ("demo", ["--redundancy", "parity:4", "--domains", "2x2x2"], "no placement survives"),
    ("demo", ["--checkpoint-dir", "/nonexistent/ftslide"], "no such folder"),
    ("demo", ["--file-every", "3"], "--checkpoint-dir"),
])
def test_bad_policy_input_is_one_line_and_nothing_starts(tmp_path, command, args, phrase):
    report = tmp_path / "never.json"
    extra = ["--app", "heat2d", "--out", str(report)] if command == "faults" else []
    result = subprocess.run([sys.executable, "-m", "ftslide", command, *extra, *args], cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and phrase in lines[0], (args, result.stderr)
    assert not result.stdout and not report.exists()


def test_demo_refuses_a_checkpoint_directory_of_another_layout(tmp_path):
    (tmp_path / "manifest").write_text("ftslide-sliding-checkpoint 1\nversion 5\ngrid mesh:4x3\nspares x:1\n"
                                       "ranks_per_node 1\nblock -\nlogical_ranks 9\nbytes_per_rank 8\nend\n")
    result = subprocess.run([sys.executable, "-m", "ftslide", "demo", "--checkpoint-dir", str(tmp_path)], cwd=REPO,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and "grid mesh:4x3" in lines[0], result.stderr


# ---- real campaigns -----------------------------------------------------------------------------

def campaign(tmp_path: Path, *args: str, timeout: float = 900) -> dict:
    """A heat2d campaign through the command; every run must be as the judge says it should."""
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "ftslide", "faults", "--app", "heat2d", "--timeout", "90",
                             "--out", str(report), *args], cwd=REPO, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=timeout)
    assert report.exists(), result.stderr[-3000:]
    doc = json.loads(report.read_text())
    bad = [r for r in doc["runs"] if not r["ok"]]
    assert result.returncode == (1 if bad else 0), result.stderr[-2000:]
    assert not bad, json.dumps(bad, indent=1)[:6000]
    summary = doc["summary"]
    assert summary["hangs"] == summary["wrong_checksums"] == summary["errors"] == summary["leftovers"] == 0
    assert summary["data_lost_promised"] == 0 and summary["missed"] == 0
    for run in doc["runs"]:
        assert run["landed"] == {str(node): point for node, point in run["kills"]}, run
        assert run["promised"] is not None, run
    return doc


@pytest.mark.mpi
@pytest.mark.timeout(900)
def test_parity4_correlated_kills(tmp_path):
    """parity:4 (groups of 5 and 4): a node and a member of its group lose a checkpoint (data-lost,
    not promised) unless the second died after the first's recovery had rebuilt the parity; a
    second node at recovery_agree/state is judged as it landed; every run as it should be."""
    doc = campaign(tmp_path, "--redundancy", "parity:4", "--phases", "partners,same_recovery",
                   "--runs", "6", "--seed", "4")
    runs = doc["runs"]
    assert doc["campaign"]["redundancy"] == "parity:4"
    assert any(r["outcome"] == "data-lost" and r["promised"] is False for r in runs), runs
    # a partner that died at recovery_start died with the first: a checkpoint is gone
    for r in runs:
        if r["phase"] == "partners" and r["kills"][1][1] == "recovery_start":
            assert r["outcome"] in ("data-lost", "out-of-spares"), r


@pytest.mark.mpi
@pytest.mark.timeout(900)
def test_rs62_survives_two_of_a_group_and_not_three(tmp_path):
    """rs:6,2 (one group of 9): two of the group at once are promised and recovered; three (overrun)
    are not: data-lost (or out of spares first)."""
    doc = campaign(tmp_path, "--redundancy", "rs:6,2", "--phases", "partners,overrun", "--runs", "4",
                   "--seed", "5")
    for r in doc["runs"]:
        if r["phase"] == "partners":
            assert (r["outcome"], r["promised"]) == ("recovered", True), r
        else:
            assert r["outcome"] in ("data-lost", "out-of-spares") and r["promised"] is False, r


@pytest.mark.mpi
@pytest.mark.timeout(900)
def test_a_whole_domain_dies_and_nothing_is_lost(tmp_path):
    """--domains 2x1 (boxes of two nodes): every node of a box dies at once, under buddy and parity:4
    whose placement keeps a box's nodes apart: promised and recovered, every time."""
    for policy in ("buddy", "parity:4"):
        doc = campaign(tmp_path, "--redundancy", policy, "--domains", "2x1", "--phases", "domain",
                       "--runs", "3", "--seed", "6")
        for r in doc["runs"]:
            assert len(r["kills"]) == 2 and (r["outcome"], r["promised"]) == ("recovered", True), r


@pytest.mark.mpi
@pytest.mark.timeout(900)
def test_k2_nodes_rs62_and_parity4(tmp_path):
    """K = 2 (mesh:4x2, 6 node ranks, 16 processes): rs:6,2 with domains and parity:4 with partners
    and same_recovery; every run as the judge says it should be."""
    campaign(tmp_path, "--grid", "mesh:4x2", "--ranks-per-node", "2", "--redundancy", "rs:6,2", "--domains", "2x1",
             "--phases", "partners,domain,same_recovery", "--runs", "3", "--seed", "7")
    campaign(tmp_path, "--grid", "mesh:4x2", "--ranks-per-node", "2", "--redundancy", "parity:4",
             "--phases", "partners,same_recovery", "--runs", "3", "--seed", "8")


@pytest.mark.mpi
@pytest.mark.timeout(600)
def test_a_lost_checkpoint_rolls_back_to_the_file_level(mpi_prefix, tmp_path):
    """heat2d, parity:4, file level every checkpoint, 60 iterations: two members of one group die
    at iteration 50 and as the recovery starts; the in-memory parity cannot rebuild them, a manifest
    exists (a write may lag on a loaded machine: up to three tries), so every rank rolls back to the
    newest file checkpoint: recovered with the failure-free checksum, from an iteration before 50.
    Without the file level the same kills end in data-lost. Also the checkpoint_file kill point."""
    layout = make_layout(*HEAT2D)
    g = core.groups(layout, layout.initial_map(), None, 4, 1)
    a, b = (layout.initial_map()[r] for r in g.members(0)[:2])
    kills = [(a, runtime.iteration_point(50)), (b, "recovery_start")]
    program = runtime.build(mpi_prefix, "c", "heat2d")
    common = dict(iterations=60, checkpoint_every=5, timeout=120, program=program, app="heat2d")
    base = runtime.run(mpi_prefix, *HEAT2D, "hybrid", (), **common)
    assert base.returncode == 0 and base.checksum, base.stderr[-2000:]
    protection = faults.Protection(core.parse_redundancy("parity:4"), None, True, 5)
    for attempt in range(3):
        directory = tmp_path / f"files{attempt}"
        directory.mkdir()
        options = runtime.checkpoint_options(*HEAT2D, "parity:4", None, directory, 1)
        run = runtime.run(mpi_prefix, *HEAT2D, "hybrid", kills, **common, checkpoints=options)
        record = faults.RunRecord(1, "partners", "hybrid", kills, manifest=faults.manifest_version(directory))
        faults.judge(record, run, base.checksum, layout, "hybrid", protection=protection)
        assert record.ok, (record, run.stderr[-3000:])
        if record.outcome == "recovered":
            break
    assert (record.outcome, record.promised) == ("recovered", True), record
    assert record.rolled_back_to is not None and 5 <= record.rolled_back_to < 50, record
    assert run.checksum == base.checksum
    memory_only = runtime.checkpoint_options(*HEAT2D, "parity:4")
    run = runtime.run(mpi_prefix, *HEAT2D, "hybrid", kills, **common, checkpoints=memory_only)
    record = faults.RunRecord(1, "partners", "hybrid", kills)
    faults.judge(record, run, base.checksum, layout, "hybrid",
                 protection=dataclasses.replace(protection, file_level=False))
    assert (record.outcome, record.ok, record.promised) == ("data-lost", True, False), (record, run.stderr[-2000:])


@pytest.mark.mpi
@pytest.mark.timeout(900)
def test_file_level_campaign_with_a_node_dying_as_it_writes(tmp_path):
    """--file-level --file-every 1 with buddy: partners and checkpoint_file (a node dies as a committed
    copy is about to go to files), each run in a fresh directory; every run as it should be."""
    doc = campaign(tmp_path, "--redundancy", "buddy", "--file-level", "--file-every", "1",
                   "--phases", "checkpoint_file,partners", "--runs", "4", "--seed", "9")
    assert doc["campaign"]["file_level"] is True
    for r in doc["runs"]:
        if r["phase"] == "checkpoint_file":
            assert r["outcome"] == "recovered" and r["promised"], r
