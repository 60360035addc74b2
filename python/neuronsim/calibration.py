"""How far to trust a target's simulated time: which kinds of work have been checked against
published Trainium measurements, and at what error.

The summary (calibration.json beside this file) is written by `python bench/fidelity.py`,
which runs every published point (bench/results/fidelity.md lists them with their sources);
points a cost parameter was fitted on are not counted. neuronsim.report() prints it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

SUMMARY = Path(__file__).with_name("calibration.json")

# The target whose published points stand for another's (same cores and collective engines).
_SAME_AS = {"trn2-lnc2": "trn2", "trn3": "trn3-lnc2"}


@functools.cache
def _summary() -> dict[str, Any]:
    try:
        return json.loads(SUMMARY.read_text())
    except (OSError, ValueError):
        return {}


def calibration(target: str) -> list[dict[str, Any]]:
    """The kinds of work checked on `target` (or the target it shares its costs with): each a
    dict with `work`, `points`, `median_abs_error`, `max_abs_error` (fractions)."""
    targets = _summary().get("targets", {})
    return targets.get(target) or targets.get(_SAME_AS.get(target, ""), [])


def describe(target: str) -> list[str]:
    """Lines for the report: what was checked on the target, or that nothing was."""
    rows = calibration(target)
    if not rows:
        return [f"  calibration: no published measurement checks {target} yet "
                "(bench/results/fidelity.md)"]  # fmt: skip
    lines = [f"  calibration of {target} against published measurements "
             "(bench/results/fidelity.md):"]  # fmt: skip
    for row in rows:
        lines.append(
            f"    {row['work']}: {row['points']} points, median |error| "
            f"{100 * row['median_abs_error']:.0f}%, max {100 * row['max_abs_error']:.0f}%"
        )
    return lines
