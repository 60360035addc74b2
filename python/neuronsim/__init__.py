"""NeuronSim: the `neuron` torch.compile backend for a simulated AWS Trainium NeuronCore."""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as _error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "neuronsim needs PyTorch, which is not installed; install the CPU build it was made "
        "for with `pip install torch==2.13.0` (an unpinned `pip install torch` may download a "
        "multi-GB CUDA build)"
    ) from _error

from . import bucketing  # noqa: F401 - neuronsim.bucketing after `import neuronsim`
from . import profiler  # noqa: F401 - neuronsim.profiler.export_chrome_trace
from . import device as _device
from . import distributed as _distributed
from . import dtypes as _dtypes
from . import logs as _logs
from . import stats as _stats
from .backend import neuron_backend
from .cache import CACHE as _CACHE
from .cache import cache_stats
from .errors import NeuronCompileError, NeuronRuntimeError
from .options import OPTION_SPECS
from .partition import clear_op_tracking, get_fallback_ops, supported_ops
from .registration import register as _register
from .report import NodeBound, node_bounds, report
from .stats import last_run_stats, measure
from .timeline import plot_timeline

__version__ = "0.1.0"

__all__ = [
    "OPTION_SPECS",
    "NeuronCompileError",
    "NeuronRuntimeError",
    "cache_stats",
    "clear_op_tracking",
    "compiler_version",
    "get_fallback_ops",
    "last_run_stats",
    "measure",
    "neuron_backend",
    "plot_timeline",
    "NodeBound",
    "node_bounds",
    "report",
    "reset",
    "supported_ops",
    "targets",
]

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
    programs, the last run's stats, the fallback op counts (get_fallback_ops) and one-time
    warnings.

    Dynamo keeps its own compiled frames; call torch._dynamo.reset() to drop those too.
    """
    _CACHE.clear()
    _device.eager.clear()
    _stats.clear()
    clear_op_tracking()
    _dtypes.reset_float64_warning()


_register(neuron_backend)
_device.register()
_distributed.register()
