"""Network and node parameters of a simulated machine, and the study presets."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import FtslideError


@dataclass(frozen=True)
class NetParams:
    """Per-link bandwidth (bytes/s) and latency (s), host speed (flop/s)."""

    bw: float = 5e9
    lat: float = 100e-9
    speed: float = 1e9

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

_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 1024.0, "mi": 1024.0**2,
          "gi": 1024.0**3}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def parse_rate(text: str, what: str, unit: str) -> float:
    """'5G', '5e9', '12.5GBps' -> float (unit suffix such as Bps or f optional)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([kKmMgGtT]i?)?" + unit + r"?\s*",
                     text)
    if not m or float(m.group(1)) <= 0:
        raise FtslideError(f"bad {what} '{text}': write a positive number with an optional "
                           f"k/M/G/T suffix, e.g. 5G{unit}")
    return float(m.group(1)) * _UNITS[(m.group(2) or "").lower()]


def parse_time(text: str, what: str) -> float:
    """'100ns', '1us', '1e-6' -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|ns)?\s*", text)
    if not m:
        raise FtslideError(f"bad {what} '{text}': write a duration such as 100ns, 1us or 2e-6")
    return float(m.group(1)) * _TIME[m.group(2) or "s"]


def parse_size(text: str, what: str) -> int:
    """'64K', '1M', '4096' -> bytes (binary multiples)."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([kKmMgG])?[iI]?[bB]?\s*", text)
    if not m:
        raise FtslideError(f"bad {what} '{text}': write a byte count such as 4096, 64K or 1M")
    mult = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[(m.group(2) or "").lower()]
    value = int(m.group(1)) * mult
    if value >= 2**31:
        raise FtslideError(f"{what} '{text}' is too large: at most 2G - 1 bytes")
    return value
