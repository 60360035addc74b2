"""The `neuronsim` logger, configured from NEURONSIM_LOG_LEVEL."""

from __future__ import annotations

import logging
import os
import warnings

LOGGER_NAME = "neuronsim"
LEVEL_ENV = "NEURONSIM_LOG_LEVEL"
_FORMAT = "[neuronsim %(levelname)s] %(message)s"


def configure_from_env() -> None:
    """Sets the level of the `neuronsim` logger from NEURONSIM_LOG_LEVEL (a name or a number).

    When the variable is set, the logger also gets its own stderr handler (unless it already
    has one) and stops propagating to the root logger, so that e.g. DEBUG messages show without
    any logging setup and are not printed twice. Unset: nothing changes (warnings still reach
    stderr through logging's last-resort handler; configure `logging` as usual to see more).
    """
    value = os.environ.get(LEVEL_ENV, "").strip()
    if not value:
        return
    level = _parse_level(value)
    if level is None:
        warnings.warn(
            f"neuronsim: {LEVEL_ENV}={value!r} is not a logging level; use DEBUG, INFO, WARNING, "
            "ERROR, CRITICAL or a number",
            UserWarning,
            stacklevel=3,
        )
        return
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(level)
    if not any(getattr(h, "_neuronsim_handler", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(_FORMAT))
        handler._neuronsim_handler = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.propagate = False


def _parse_level(value: str) -> int | None:
    if value.lstrip("-").isdigit():
        return int(value)
    level = logging.getLevelName(value.upper())
    return level if isinstance(level, int) else None
