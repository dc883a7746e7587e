"""The failure-domain column of the node coordinate file (sliding_nodes.h, `domain=LABEL`), read by the
runtime's own C reader through ftslide.sliding.runtime (check_node_coords, node_domains). No MPI."""

from __future__ import annotations

import pytest

from ftslide.errors import FtslideError
from ftslide.sliding import core as sc
from ftslide.sliding import runtime

GRID, SPARES = "torus:3x2x2", "x:1"  # 12 nodes


@pytest.fixture
def layout():
    return sc.make_layout(GRID, SPARES)


def names(layout) -> list[str]:
    return [f"n{j}" for j in range(layout.nodes)]


def test_domains_by_coordinates(tmp_path, layout):
    """Job node j at grid node 11 - j, boards of two: labels numbered in the order they first appear,
    given per GRID node id."""
    path = tmp_path / "nodes.txt"
    path.write_text("# name x y z domain\n" + "".join(
        f"n{j} {' '.join(map(str, layout.coords(11 - j)))} domain=board{(11 - j) // 2}\n" for j in range(12)))
    assert runtime.check_node_coords(path, layout, names(layout)) == [11 - j for j in range(12)]
    domains, count = runtime.node_domains(path, layout, names(layout))
    # the first line names grid node 11 (board5 -> domain 0), the last grid node 0 (board0 -> domain 5)
    assert count == 6 and domains == [5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0]
    assert sc.groups(layout, layout.initial_map(), domains, 2, 1).sizes == [2, 2, 2, 2]  # 8 node ranks


def test_domains_by_list_order(tmp_path, layout):
    path = tmp_path / "nodes.txt"
    path.write_text("".join(f"n{j}\tdomain=rack-{'ab'[j % 2]}\n" for j in range(12)))
    domains, count = runtime.node_domains(path, layout, names(layout))
    assert count == 2 and domains == [0, 1] * 6


def test_files_without_domains(tmp_path, layout):
    path = tmp_path / "nodes.txt"
    path.write_text("".join(f"n{j}\n" for j in range(12)))
    assert runtime.node_domains(path, layout, names(layout)) is None
    assert runtime.check_node_coords(path, layout, names(layout)) == list(range(12))


@pytest.mark.parametrize("lines, line", [
    (["n0 domain=a", "n1"], 2),                       # the first line has a domain, the second none
    (["n0", "n1 domain=a"], 2),                       # the reverse
    (["n0 0 0 0 domain=a", "n1 0 0 1"], 2),
    (["n0 domain="], 1),                              # no label
    (["n0 domain=a domain=b"], 1),                    # two domain fields
    (["n0 0 0 domain=a"], 1),                         # two coordinates on a 3D grid
    (["n0 0 0 0 1 domain=a"], 1),                     # four
    (["n0 0 0 0 domain=a", "n1 domain=a"], 2),        # the two forms mixed
])
def test_bad_domain_fields_name_the_line(tmp_path, layout, lines, line):
    path = tmp_path / "nodes.txt"
    path.write_text("# header\n" + "\n".join(lines) + "\n")
    for read in (runtime.check_node_coords, runtime.node_domains):
        with pytest.raises(FtslideError) as err:
            read(path, layout, names(layout))
        message = str(err.value)
        assert f"nodes.txt, line {line + 1}: " in message and "\n" not in message, message
        assert "domain=LABEL" in message


def test_a_whole_domain_file_in_one_domain_has_no_parity_placement(tmp_path, layout):
    """The issue's bad input: a domain file that puts every node in one domain."""
    path = tmp_path / "nodes.txt"
    path.write_text("".join(f"n{j} domain=all\n" for j in range(12)))
    domains, count = runtime.node_domains(path, layout, names(layout))
    assert count == 1
    with pytest.raises(FtslideError) as err:
        sc.groups(layout, layout.initial_map(), domains, 4, 1)
    assert err.value.code == sc.Status.ENOPLACEMENT
