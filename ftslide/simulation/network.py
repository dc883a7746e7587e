"""Network and node parameters of a simulated machine, and the study presets.

Nothing here raises or computes: the values are data (docs/simulations.md, "Presets and parameters").
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NetParams", "Preset", "PRESETS"]


@dataclass(frozen=True)
class NetParams:
    """Per-link bandwidth (bytes/s) and latency (s), host speed (flop/s), the bandwidth between
    ranks on one host (bytes/s; None: 20 times a link's, shared memory against the network), and the
    CPU work a rank spends per byte it sends (flop/byte, on its host, which its host's ranks share;
    0: none, SimGrid's default; ``ftslide validate`` calibrates it with the host speed)."""

    bw: float = 5e9
    lat: float = 100e-9
    speed: float = 1e9
    loopback_bw: float | None = None
    send_work: float = 0.0

    def loopback(self) -> float:
        """Bytes/s between two ranks of one host."""
        return self.loopback_bw if self.loopback_bw is not None else self.bw * 20

    def simgrid(self) -> dict[str, str]:
        """Values as SimGrid platform attributes."""
        return {"bw": f"{self.bw:.6g}Bps", "lat": f"{self.lat:.6g}s", "speed": f"{self.speed:.6g}f"}


@dataclass(frozen=True)
class Preset:
    """A published setup: the machine's network and the job's layout."""

    name: str
    topology: str
    grid: str | None
    spares: str
    net: NetParams
    description: str


# Link figures are per direction. Latency is per link (SimGrid adds them along
# the route); software overheads are not modelled.
PRESETS: dict[str, Preset] = {
    "k": Preset("k", "torus:12x12x12", None, "x:1", NetParams(5e9, 100e-9, 128e9),
                "K computer-like 3D torus (Tofu links 5 GB/s), 12x12x12 nodes, one spare plane"),
    "bgq": Preset("bgq", "torus:16x8x8", None, "x:1", NetParams(2e9, 50e-9, 204.8e9),
                  "Blue Gene/Q-like torus (2 GB/s links) reduced to 3D, 16x8x8 nodes, one spare plane"),
    "tsubame": Preset("tsubame", "fattree:2;16,32;1,16;1,1", "torus:8x8x8", "x:1",
                      NetParams(4e9, 100e-9, 140e9),
                      "TSUBAME2-like full-bisection fat-tree (QDR InfiniBand, 4 GB/s), 512 hosts "
                      "in 32 leaf switches of 16, an 8x8x8 stencil grid with one spare plane"),
}
