"""Does a build of ftproto_sim print what another printed? A check for refactorings of the driver.

    python simulations/protocols/same_output.py record BUILD/bin/ftproto_sim runs.jsonl
    python simulations/protocols/same_output.py compare BUILD/bin/ftproto_sim runs.jsonl

``record`` runs a fixed set of cases (every protocol, with and without crashes,
the adversary, every tree, the torus order, --root, --detect, a --cfg override,
P from 8 to 4,096, torus and fat-tree platforms from the Python generator, bad
options) and stores each case's command line, exit code and stdout. ``compare``
runs the same cases with another binary and reports every difference. SimGrid
is deterministic, so stdout must be byte-identical, simulated times included;
only the host measurements (``wall``, ``cpu``, ``maxrss_kb``) are masked. For a
bad option the exit code must match and stderr must be one line.

The command lines are built as ``ftslide.simulation.protocols.run_driver``
builds them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ftslide.simulation import protocols as ps  # noqa: E402

HOST_FIELDS = re.compile(r'"wall": [0-9.]+, "cpu": [0-9.-]+, "maxrss_kb": -?[0-9]+')
TIMEOUT = 300.0


def driver_args(proto: str, p: int, crashes=(), adversary: int = 0, detect: float = 1e-6, dump: bool = False,
                extra=(), tree: str = "binomial", torus=()) -> list[str]:
    """The options run_driver passes after the platform, in its order."""
    args = ["--proto", proto, "--p", str(p), "--detect", repr(detect), "--tree", tree, *extra]
    for rank, t in crashes:
        args += ["--crash", f"{rank}@{t!r}"]
    if adversary:
        args += ["--adversary", str(adversary)]
    if dump:
        args.append("--dump")
    if torus:
        args += ["--torus-order", "x".join(map(str, torus))]
    return args


def cases(workdir: Path) -> list[tuple[str, list[str], bool]]:
    """(id, argv after the program, expected to be refused) for every case."""
    out: list[tuple[str, list[str], bool]] = []
    plats: dict[tuple[str, int], tuple[Path, object]] = {}

    def plat(spec: str, p: int) -> tuple[Path, object]:
        if (spec, p) not in plats:
            topo = ps.topology_for(spec, p)
            name = re.sub(r"[^A-Za-z0-9]+", "_", f"{spec}-{p}")
            plats[(spec, p)] = (ps.write_platform(topo, workdir / f"{name}.xml"), topo)
        return plats[(spec, p)]

    def add(cid: str, spec: str, p: int, bad: bool = False, **kw) -> None:
        path, _ = plat(spec, p)
        out.append((f"{spec}/P{p}/{cid}", [str(path), *driver_args(p=p, **kw)], bad))

    for spec in ("torus", "fattree"):
        for p in (8, 16, 64):
            for proto in (*ps.PROTOS, "allreduce"):
                add(f"{proto}-free", spec, p, proto=proto, dump=p == 16)
            for proto in ps.AGREEMENTS:
                for tree in ps.TREES:
                    add(f"{proto}-{tree}-free", spec, p, proto=proto, tree=tree)
                    add(f"{proto}-{tree}-before+during+adv", spec, p, proto=proto, tree=tree, dump=True,
                        crashes=[(p - 3, 0.0), (5, 0.0), (p // 2 + 1, 2e-6), (p // 2 + 3, 4.5e-6)],
                        adversary=2)
                add(f"{proto}-adv{p // 4}", spec, p, proto=proto, tree="knomial4", adversary=p // 4)
                add(f"{proto}-rank0-before", spec, p, proto=proto, crashes=[(0, 0.0), (1, -1.0)], dump=True)
                add(f"{proto}-detect0", spec, p, proto=proto, crashes=[(3, 1e-6)], adversary=1, detect=0.0)
                add(f"{proto}-detect5us", spec, p, proto=proto, crashes=[(2, 0.0), (4, 3e-7)], detect=5e-6)
                # the same rank twice: the earlier time counts
                add(f"{proto}-twice", spec, p, proto=proto, crashes=[(6, 3e-6), (6, 1e-6)])
            for proto in ("bmg", "bmg-lean"):
                add(f"{proto}-before+during", spec, p, proto=proto, dump=True,
                    crashes=[(0, 0.0), (p - 1, 0.0), (2, 1e-7), (p // 2, 3e-7)])
                add(f"{proto}-root3", spec, p, proto=proto, extra=["--root", "3"], crashes=[(5, 2e-7)])
                add(f"{proto}-root-dead-moves", spec, p, proto=proto, extra=["--root", str(p - 1)],
                    crashes=[(p - 1, 0.0), (0, 0.0)], dump=True)
                # the broadcaster dies at once: nobody delivers (exit 0, decided 0)
                add(f"{proto}-root-dies", spec, p, proto=proto, crashes=[(0, 1e-12)])
                add(f"{proto}-late-crash", spec, p, proto=proto, crashes=[(1, 1.0)])
            add("era-lv08", spec, p, proto="era", extra=["--cfg=network/model:LV08"], crashes=[(3, 0.0)])
            add("era-cfg-first", spec, p, proto="era-early", extra=["--cfg=network/crosstraffic:1"], adversary=1)
            # the sweep's own schedules (ftslide protocols simulate)
            for proto in ps.PROTOS:
                for when in ("during", "before"):
                    crashes, adv = ps.crash_schedule(proto, p, 3, when, 2e-6, seed=1)
                    add(f"{proto}-sweep-{when}", spec, p, proto=proto, crashes=crashes, adversary=adv,
                        tree="knomial4")
    # a failure report makes the root decide and the adversary kill it there
    for spec in ("torus", "fattree"):
        for p in (16, 64):
            add("era-knomial4-report-kills", spec, p, proto="era", tree="knomial4", crashes=[(1, 5e-7)], adversary=3)
            add("era-early-knomial4-report-kills", spec, p, proto="era-early", tree="knomial4",
                crashes=[(2, 1.5e-6)], adversary=3)
    # the folded torus order, on tori of exactly P hosts
    for p in (8, 16, 64):
        _, topo = plat("torus", p)
        dims = ps.torus_order(topo, p)
        for proto in ps.AGREEMENTS:
            for tree in ps.TREES:
                add(f"{proto}-{tree}-torus", "torus", p, proto=proto, tree=tree, torus=dims)
                add(f"{proto}-{tree}-torus-adv", "torus", p, proto=proto, tree=tree, torus=dims, dump=True,
                    crashes=[(5 % p, 0.0), (p - 2, 0.0), (p // 2, 1e-6)], adversary=3)
    # an explicit platform bigger than P
    for proto in (*ps.PROTOS, "allreduce"):
        add(f"{proto}-on-bigger", "torus:4x4x4", 50, proto=proto, crashes=[] if proto == "allreduce" else [(7, 0.0)])
    # larger P
    for proto in (*ps.PROTOS, "allreduce"):
        add(f"{proto}-free", "torus", 1024, proto=proto, tree="knomial4")
    _, topo = plat("torus", 1024)
    add("era-early-torus-adv4", "torus", 1024, proto="era-early", tree="knomial4", adversary=4,
        torus=ps.torus_order(topo, 1024), crashes=[(77, 0.0), (500, 3e-6)])
    add("era-adv3", "fattree", 1024, proto="era", adversary=3, crashes=[(9, 0.0)])
    add("bmg-lean-during", "fattree", 1024, proto="bmg-lean", crashes=[(0, 0.0), (33, 2e-7), (700, 5e-7)])
    add("era-early-free", "torus", 4096, proto="era-early", tree="knomial4")
    add("era-adv2", "torus", 4096, proto="era", tree="binary", adversary=2)
    # refused: one line on stderr, exit 2 (the same exit code as before)
    for cid, kw in [
        ("bad-proto", dict(proto="paxos")),
        ("bad-tree", dict(proto="era", tree="ternary")),
        ("crash-out-of-range", dict(proto="era", crashes=[(8, 0.0)])),
        ("allreduce-with-crash", dict(proto="allreduce", crashes=[(1, 0.0)])),
        ("adversary-on-bmg", dict(proto="bmg", adversary=1)),
        ("nobody-left", dict(proto="era", crashes=[(r, 0.0) for r in range(4)], adversary=4)),
        ("torus-mismatch", dict(proto="era", torus=(2, 2))),
        ("unknown-option", dict(proto="era", extra=["--frobnicate"])),
        ("missing-value", dict(proto="era", extra=["--root"])),
        ("bad-p-value", dict(proto="era", extra=["--p", "0"])),
        ("bad-detect", dict(proto="era", detect=-1.0)),
    ]:
        add(cid, "torus", 8, bad=True, **kw)
    path, _ = plat("torus", 8)
    out.append(("torus/P8/missing-p", [str(path), "--proto", "era"], True))
    out.append(("torus/P8/bad-crash-syntax", [str(path), "--proto", "era", "--p", "8", "--crash", "3"], True))
    out.append(("torus/P8/platform-too-small", [str(path), "--proto", "era", "--p", "9"], True))
    out.append(("missing-platform", [], True))
    return out


def run(binary: str, argv: list[str]) -> dict:
    proc = subprocess.run([binary, *argv], capture_output=True, text=True, timeout=TIMEOUT)
    return {"rc": proc.returncode, "stdout": HOST_FIELDS.sub('"wall": W, "cpu": C, "maxrss_kb": M', proc.stdout),
            "stderr_lines": len(proc.stderr.strip().splitlines()), "stderr": proc.stderr}


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in ("record", "compare"):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: same_output.py record|compare BINARY RUNS.jsonl", file=sys.stderr)
        return 2
    mode, binary, store = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    with tempfile.TemporaryDirectory(prefix="ftproto-same-") as tmp:
        todo = cases(Path(tmp))
        if mode == "record":
            with store.open("w") as f:
                for cid, argv, bad in todo:
                    res = run(binary, argv)
                    rel = [a.replace(tmp, "$TMP") for a in argv]
                    f.write(json.dumps({"id": cid, "argv": rel, "bad": bad, "rc": res["rc"],
                                        "stdout": res["stdout"]}) + "\n")
            print(f"recorded {len(todo)} runs of {binary} in {store}")
            return 0
        recorded = {r["id"]: r for r in map(json.loads, store.read_text().splitlines())}
        diffs = 0
        for cid, argv, bad in todo:
            want = recorded.get(cid)
            rel = [a.replace(tmp, "$TMP") for a in argv]
            if want is None or want["argv"] != rel:
                print(f"DIFF {cid}: not recorded with these arguments")
                diffs += 1
                continue
            res = run(binary, argv)
            problems = []
            if res["rc"] != want["rc"]:
                problems.append(f"exit {res['rc']}, recorded {want['rc']}")
            if res["stdout"] != want["stdout"]:
                problems.append(f"stdout differs:\n  new: {res['stdout']!r}\n  old: {want['stdout']!r}")
            if bad and (res["rc"] == 0 or res["stderr_lines"] != 1):
                problems.append(f"a refused run must print one line on stderr, got:\n{res['stderr']}")
            if problems:
                diffs += 1
                print(f"DIFF {cid}: " + "; ".join(problems))
        print(f"compared {len(todo)} runs of {binary} with {store}: {diffs} differ")
        return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
