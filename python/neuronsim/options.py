"""Backend options: names, defaults, environment variables and validation."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import native


def _compile_error(message: str) -> Exception:
    """neuronsim.NeuronCompileError(message), imported on first use: errors.py imports
    torch._dynamo, which the device's registration during `import torch` must not."""
    from .errors import NeuronCompileError as error_type

    return error_type(message)


@dataclass(frozen=True)
class OptionSpec:
    env: str
    help: str


# The documented options of torch.compile(..., backend="neuron", options={...}).
OPTION_SPECS: dict[str, OptionSpec] = {
    "target": OptionSpec(
        "NEURONSIM_TARGET",
        "simulated chip: trn1, trn2, trn2-lnc2 (a logical core of two trn2 physical cores, "
        "LNC=2; the default, as TorchNeuron's NEURON_LOGICAL_NC_CONFIG=2), trn3",
    ),
    "dump_dir": OptionSpec(
        "NEURONSIM_DUMP_DIR", "directory for per-graph dumps: graph file, IR per stage, program"
    ),
    "fallback": OptionSpec(
        "NEURONSIM_FALLBACK",
        "unsupported ops: 'none' (default) fails compilation, 'cpu' runs them in eager PyTorch",
    ),
    "profile": OptionSpec(
        "NEURONSIM_PROFILE",
        "path of a Chrome trace / Perfetto JSON file written on every run ({graph} and {run} "
        "in the path are replaced by the graph name and a run counter)",
    ),
    "timing_only": OptionSpec(
        "NEURONSIM_TIMING_ONLY",
        "True: only time the program; outputs have the right shapes, their contents are "
        "undefined",
    ),
    "check_hazards": OptionSpec(
        "NEURONSIM_CHECK_HAZARDS",
        "True (default): functional runs check that the simulated schedule orders every pair "
        "of conflicting memory accesses as the program does, and that nothing reads on-chip "
        "memory never written; a violation raises NeuronRuntimeError",
    ),
    # TorchNeuron's options (torch-neuronx's torch.compile reference).
    "model_name": OptionSpec(
        "", "a name for the model's graphs: their names in get_dynamo_metrics(), dumps and "
        "traces start with it",
    ),
    "fallback_execution": OptionSpec(
        "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION",
        "True: a graph that fails to compile runs op by op in eager mode (on the neuron device "
        "for neuron tensors) with a warning, instead of raising; default False, as "
        "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=1 (TorchNeuron's default); =0 sets True",
    ),
}

# Values of the `fallback` option.
FALLBACK_MODES = ("none", "cpu")


@dataclass(frozen=True)
class BackendOptions:
    target: str
    dump_dir: str | None = None
    fallback: str = "none"  # FALLBACK_MODES; not in key(): each compiled group has its own
    profile: str | None = None  # run options, not in key(): they do not change programs
    timing_only: bool = False
    check_hazards: bool = True
    model_name: str | None = None  # names only, not in key()
    fallback_execution: bool = False  # what a failed compilation does, not in key()

    def key(self) -> dict[str, Any]:
        """What the options contribute to a compile-cache key (dumps do not change programs)."""
        return {"target": self.target}


def resolve_options(options: Mapping[str, Any] | None) -> BackendOptions:
    """Validates user options and fills the rest from the environment and defaults."""
    options = dict(options or {})
    unknown = sorted(str(name) for name in options if name not in OPTION_SPECS)
    if unknown:
        raise _compile_error(
            f"unknown neuron backend option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(name) for name in unknown)}; "
            f"valid options: {', '.join(OPTION_SPECS)}"
        )
    return BackendOptions(
        target=_target(options),
        dump_dir=_dump_dir(options),
        fallback=_fallback(options),
        profile=_profile(options),
        timing_only=_flag(options, "timing_only", False),
        check_hazards=_flag(options, "check_hazards", True),
        model_name=_model_name(options),
        fallback_execution=_fallback_execution(options),
    )


def _model_name(options: dict[str, Any]) -> str | None:
    value = options.get("model_name")
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", value):
        raise _compile_error(
            f"option 'model_name' must be a non-empty str of letters, digits, '_', '.' and "
            f"'-' (it names graph files and dump directories), got {value!r}"
        )
    return value


def _fallback_execution(options: dict[str, Any]) -> bool:
    """options['fallback_execution'], else the inverse of TorchNeuron's
    TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION (default 1: no fallback)."""
    env = OPTION_SPECS["fallback_execution"].env
    if options.get("fallback_execution") is not None or not os.environ.get(env):
        return _flag(options, "fallback_execution", False)
    return not _flag({}, "fallback_execution", True)


def _target(options: dict[str, Any]) -> str:
    if options.get("target") is not None:
        target, source = options["target"], "options['target']"
    elif os.environ.get("NEURONSIM_TARGET"):
        target, source = os.environ["NEURONSIM_TARGET"], "NEURONSIM_TARGET"
    else:
        from .device import environment

        try:
            target, source = environment.default_target(), environment.LNC_ENV
        except ValueError as error:
            raise _compile_error(str(error)) from None
    valid = native.targets()
    if not isinstance(target, str) or target not in valid:
        raise _compile_error(
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
        raise _compile_error(
            f"option 'dump_dir' must be a path (str or os.PathLike), got {type(value).__name__}"
        )
    return os.fspath(value)


def _fallback(options: dict[str, Any]) -> str:
    if options.get("fallback") is not None:
        value, source = options["fallback"], "options['fallback']"
    elif os.environ.get("NEURONSIM_FALLBACK"):
        value, source = os.environ["NEURONSIM_FALLBACK"], "NEURONSIM_FALLBACK"
    else:
        return "none"
    if not isinstance(value, str) or value.lower() not in FALLBACK_MODES:
        raise _compile_error(
            f"unknown fallback {value!r} (from {source}); valid values: "
            f"{', '.join(repr(m) for m in FALLBACK_MODES)}"
        )
    return value.lower()


def _profile(options: dict[str, Any]) -> str | None:
    value = options.get("profile")
    if value is None:
        value = os.environ.get("NEURONSIM_PROFILE") or None
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise _compile_error(
            f"option 'profile' must be a path (str or os.PathLike), got {type(value).__name__}"
        )
    return os.fspath(value)


def _flag(options: dict[str, Any], name: str, default: bool) -> bool:
    """A boolean option: options[name], else its environment variable, else `default`."""
    env = OPTION_SPECS[name].env
    if options.get(name) is not None:
        value, source = options[name], f"options[{name!r}]"
        if isinstance(value, bool):
            return value
    elif os.environ.get(env):
        value, source = os.environ[env], env
    else:
        return default
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise _compile_error(
        f"{source} must be a boolean (True/False, or 1/0 in the environment), got {value!r}"
    )
