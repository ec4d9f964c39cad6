"""A session's own timeouts, as PostgreSQL reads and shows them.

Owns: reading a timeout's text (milliseconds unless a unit is given) into the form SHOW
gives, and the timeout of a session's next statement: the owner's ``statement_timeout_s``,
or the session's shorter ``statement_timeout`` (review 43, F3: it was accepted and ignored).
"""
from __future__ import annotations

import re

_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"([0-9]{1,12}(?:\.[0-9]{0,12})?)\s*(us|ms|s|min|h|d)?")


def duration(name: str, value: str) -> str:
    """A timeout as PostgreSQL reads it (milliseconds unless a unit is given) and shows it
    (``100ms``, ``2s``, ``1min``, ``0``)."""
    found = _DURATION.fullmatch(value.strip().lower())
    if found is None:
        raise ValueError(f'invalid value for parameter "{name}": "{value[:40]}"; give '
                         "milliseconds or a number with a unit (ms, s, min, h, d)")
    ms = float(found.group(1)) * _UNITS[found.group(2) or "ms"]
    ms = 0 if ms == 0 else max(1, round(ms))
    if ms >= 2 ** 31:
        raise ValueError(f'{value[:40]} is outside the range of "{name}" (0 .. 2147483647 '
                         "milliseconds)")
    for unit in ("d", "h", "min", "s"):
        if ms and ms % _UNITS[unit] == 0:
            return f"{ms // _UNITS[unit]}{unit}"
    return f"{ms}ms" if ms else "0"


def statement_timeout(state, owner: float) -> float:
    """Seconds this session's next statement may take: the owner's limit, or the session's
    own ``statement_timeout`` where it SET a shorter one (0 is none of its own)."""
    found = _DURATION.fullmatch(str(state.settings.get("statement_timeout") or "0"))
    ms = float(found.group(1)) * _UNITS[found.group(2) or "ms"] if found else 0
    return min(owner, ms / 1000) if ms > 0 else owner
