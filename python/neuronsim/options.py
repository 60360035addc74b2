"""Backend options: names, defaults, environment variables and validation."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import native
from .errors import NeuronCompileError


@dataclass(frozen=True)
class OptionSpec:
    env: str
    help: str


# The documented options of torch.compile(..., backend="neuron", options={...}).
OPTION_SPECS: dict[str, OptionSpec] = {
    "target": OptionSpec("NEURONSIM_TARGET", "simulated chip: trn1, trn2 (default), trn3"),
    "dump_dir": OptionSpec(
        "NEURONSIM_DUMP_DIR", "directory for per-graph dumps: graph file, IR per stage, program"
    ),
}


@dataclass(frozen=True)
class BackendOptions:
    target: str
    dump_dir: str | None = None

    def key(self) -> dict[str, Any]:
        """What the options contribute to a compile-cache key (dumps do not change programs)."""
        return {"target": self.target}


def resolve_options(options: Mapping[str, Any] | None) -> BackendOptions:
    """Validates user options and fills the rest from the environment and defaults."""
    options = dict(options or {})
    unknown = sorted(str(name) for name in options if name not in OPTION_SPECS)
    if unknown:
        raise NeuronCompileError(
            f"unknown neuron backend option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(name) for name in unknown)}; "
            f"valid options: {', '.join(OPTION_SPECS)}"
        )
    return BackendOptions(target=_target(options), dump_dir=_dump_dir(options))


def _target(options: dict[str, Any]) -> str:
    if options.get("target") is not None:
        target, source = options["target"], "options['target']"
    elif os.environ.get("NEURONSIM_TARGET"):
        target, source = os.environ["NEURONSIM_TARGET"], "NEURONSIM_TARGET"
    else:
        return native.default_target()
    valid = native.targets()
    if not isinstance(target, str) or target not in valid:
        raise NeuronCompileError(
            f"unknown target {target!r} (from {source}); valid targets: {', '.join(valid)}"
        )
    return target


def _dump_dir(options: dict[str, Any]) -> str | None:
    value = options.get("dump_dir")
    if value is None:
        value = os.environ.get("NEURONSIM_DUMP_DIR") or None
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise NeuronCompileError(
            f"option 'dump_dir' must be a path (str or os.PathLike), got {type(value).__name__}"
        )
    return os.fspath(value)
