"""NeuronSim: the `neuron` torch.compile backend for a simulated AWS Trainium NeuronCore.

Importing it registers the `neuron` device (which `import torch` already does through the
`torch.backends` entry point, as TorchNeuron does) and the torch.distributed backend. The
compiler's Python side (torch._dynamo, AOTAutograd, the graph passes) loads on first use of a
name below or of torch.compile(backend="neuron"), so that `import torch` stays fast.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


def _autoload() -> None:
    """The `torch.backends` entry point, called by `import torch`: importing this package has
    registered the device already. Defined before this package imports torch: when
    `import neuronsim` comes first, torch's autoload calls it on the partly imported package."""


try:
    import torch as _torch  # noqa: F401
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "neuronsim needs PyTorch, which is not installed; install the CPU build it was made "
        "for with `pip install torch==2.13.0` (an unpinned `pip install torch` may download a "
        "multi-GB CUDA build)"
    ) from _error

from . import device as _device
from . import distributed as _distributed
from . import logs as _logs

try:  # `import nki` / `import neuronxcc.nki` resolve to neuronsim.nki (README: "NKI kernels")
    import neuronsim_nki_hook as _nki_hook

    _nki_hook.install()
except ImportError:  # pragma: no cover (a source tree without the hook package on sys.path)
    pass

__version__ = "0.1.0"

# Public name -> the module that defines it, imported on first access (PEP 562).
_LAZY = {
    "OPTION_SPECS": "options",
    "NeuronCompileError": "errors",
    "NeuronRuntimeError": "errors",
    "cache_stats": "cache",
    "clear_op_tracking": "partition",
    "get_fallback_ops": "partition",
    "supported_ops": "partition",
    "last_run_stats": "stats",
    "measure": "stats",
    "neuron_backend": "backend",
    "plot_timeline": "timeline",
    "NodeBound": "report",
    "node_bounds": "report",
    "report": "report",
}
_LAZY_MODULES = ("bucketing", "profiler", "kernels", "nki")

__all__ = [*sorted(_LAZY), "compiler_version", "reset", "targets"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'neuronsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_LAZY_MODULES})


_logs.configure_from_env()  # NEURONSIM_LOG_LEVEL


def targets() -> list[str]:
    """Names of the simulated targets (values of the `target` option)."""
    from . import native

    return native.targets()


def compiler_version() -> str:
    """Version of the native compiler (part of every compile-cache key)."""
    from . import native

    return native.compiler_version()


def reset() -> None:
    """Empties the compile cache and its counters, the neuron device's cache of eager-op
    programs, the last run's stats, the fallback op counts (get_fallback_ops), the executed-op
    counts and one-time warnings.

    Dynamo keeps its own compiled frames; call torch._dynamo.reset() to drop those too.
    """
    from . import dtypes, partition, stats
    from .cache import CACHE

    CACHE.clear()
    _device.eager.clear()
    stats.clear()
    partition.clear_op_tracking()
    dtypes.reset_float64_warning()


def _torchneuron_installed() -> bool:
    """True when AWS's torch-neuronx is installed: it owns the `neuron` device then."""
    from importlib import metadata

    try:
        metadata.distribution("torch-neuronx")
    except metadata.PackageNotFoundError:
        return False
    return True


if not _torchneuron_installed():
    _device.register()
_distributed.register()
if "torch._dynamo" in sys.modules:
    # Dynamo is loaded anyway: register `neuron` and `neuronsim` now (and warn now if another
    # package has `neuron`). Otherwise the torch_dynamo_backends entry points find them when
    # torch.compile first looks them up, and importing neuronsim.backend registers them.
    from . import backend as _backend  # noqa: F401
