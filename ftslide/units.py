"""Quantities written on the command line: rates, durations and sizes, in one grammar for every command.

A quantity is a number (``5``, ``2.5``, ``1e-6``), then an optional prefix, then an optional unit,
with no blank inside and letters in any case:

========  =============================================  ===========================================
kind      prefixes and units                             examples
========  =============================================  ===========================================
rate      ``k M G T`` (x 1000), ``Ki Mi Gi`` (x 1024);   ``1gbit`` (10^9 bits/s), ``100mbit``,
          ``bit`` for bits per second, ``bps`` or no     ``5GBps`` or ``5e9`` (bytes/s)
          unit for bytes per second (as ``tc`` reads)
speed     the same prefixes; ``f`` or no unit            ``100Gf`` (flop/s)
duration  ``s ms us ns``; no unit: seconds               ``1ms``, ``100ns``, ``2e-6``
size      ``K M G`` (x 1024), an optional ``B``          ``64K``, ``1M``, ``4096``
========  =============================================  ===========================================

Every parser raises :class:`~ftslide.errors.FtslideError` with a one-line message naming the
quantity (``what``) and an example. Cost: O(len(text)).

Examples::

    >>> parse_rate("20mbit", "rate") * 8
    20000000.0
    >>> parse_time("100ns", "latency")
    1e-07
"""

from __future__ import annotations

import re

from .errors import FtslideError

__all__ = ["parse_rate", "parse_speed", "parse_time", "parse_size"]

_NUMBER = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 1024.0, "mi": 1024.0**2, "gi": 1024.0**3}
_QUANTITY = re.compile(_NUMBER + r"(ki|mi|gi|k|m|g|t)?([a-z]*)\s*")
_RATE_UNITS = {"": 1.0, "bps": 1.0, "bit": 1 / 8}
_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _scaled(text: str, units: dict[str, float]) -> float | None:
    match = _QUANTITY.fullmatch(str(text).lower())
    if match is None or match[3] not in units:
        return None
    return float(match[1]) * _PREFIX[match[2] or ""] * units[match[3]]


def parse_rate(text: str, what: str) -> float:
    """A link rate in bytes per second.

    Parameters: ``text`` such as ``1gbit``, ``100mbit``, ``5GBps`` or ``5e9``; ``what`` names it in
    the error (``bandwidth``, ``rate``). Returns a positive float. Raises FtslideError for anything
    else, zero included.
    """
    value = _scaled(text, _RATE_UNITS)
    if value is None or value <= 0:
        raise FtslideError(f"bad {what} '{text}': write a positive rate such as 1gbit, 100mbit, 5GBps "
                           "or 5e9 (bytes per second)")
    return value


def parse_speed(text: str, what: str) -> float:
    """A host speed in flop/s from ``100Gf``, ``1e9`` ...; positive. Raises FtslideError."""
    value = _scaled(text, {"": 1.0, "f": 1.0})
    if value is None or value <= 0:
        raise FtslideError(f"bad {what} '{text}': write a positive speed such as 100Gf or 1e9")
    return value


def parse_time(text: str, what: str) -> float:
    """A duration in seconds (zero or more) from ``1ms``, ``100ns``, ``2e-6`` ...

    The prefixes of rates do not apply (``1ms`` is a millisecond). Raises FtslideError.
    """
    match = re.fullmatch(_NUMBER + r"(s|ms|us|ns)?\s*", str(text).lower())
    if match is None:
        raise FtslideError(f"bad {what} '{text}': write a duration such as 1ms, 100ns or 2e-6 (seconds)")
    return float(match[1]) * _TIME_UNITS[match[2] or ""]


def parse_size(text: str, what: str) -> int:
    """A byte count from ``64K``, ``1M``, ``4096`` ... (binary multiples), below 2 GiB.

    Raises FtslideError for anything else and for 2G or more.
    """
    match = re.fullmatch(r"\s*([0-9]+)\s*([kmg])?i?b?\s*", str(text).lower())
    if match is None:
        raise FtslideError(f"bad {what} '{text}': write a byte count such as 4096, 64K or 1M")
    value = int(match[1]) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[match[2] or ""]
    if value >= 2**31:
        raise FtslideError(f"{what} '{text}' is too large: at most 2G - 1 bytes")
    return value
