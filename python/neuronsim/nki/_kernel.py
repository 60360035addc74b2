"""nki.jit and the ways NKI runs a kernel (simulate, baremetal, benchmark, profile), all on
NeuronSim's simulator: numbers from the simulated engines, time from its cost model."""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np
import torch

from ..errors import NeuronCompileError
from ..kernels.ir import Source
from ..kernels.kernel import Kernel, run_eager
from ..kernels.tracer import Traced, _current, trace
from ._common import torch_dtype
from ._index import Unroll

# NEURON_PLATFORM_TARGET_OVERRIDE / platform_target values (as NKI's) -> NeuronSim targets
PLATFORMS = {"trn1": "trn1", "inf2": "trn1", "gen2": "trn1", "trn2": "trn2", "gen3": "trn2",
             "trn3": "trn3", "gen4": "trn3"}

MODES = ("auto", "simulation", "baremetal", "benchmark", "torchxla", "jax", "trace")


def platform_target(explicit: str | None) -> str | None:
    """The NeuronSim target of an NKI platform target (argument, else the environment)."""
    value = explicit or os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE")
    if not value:
        return None
    found = PLATFORMS.get(str(value).lower())
    if found is None:
        raise NeuronCompileError(f"unknown NKI platform target {value!r}; valid: "
                                 f"{', '.join(sorted(PLATFORMS))}")
    return found


class TensorSpec:
    """nki.typing.tensor[shape, dtype]: an input known by shape and dtype only (its values
    are undefined: kernels given one run timing-only)."""

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = torch_dtype(dtype) if not isinstance(dtype, torch.dtype) else dtype

    def __repr__(self) -> str:
        return f"tensor[{list(self.shape)}, {self.dtype}]"


class NkiKernel(Kernel):
    """An NKI kernel: call it on numpy arrays (numpy out), torch tensors (torch out) or
    nki.typing.tensor specs (timing-only); `kernel[gx, gy]` launches an SPMD grid."""

    def __init__(self, fn: Callable[..., Any], dialect: str, mode: str = "auto",
                 target: str | None = None, grid: tuple[int, ...] = (),
                 **options: Any) -> None:
        if isinstance(fn, NkiKernel):
            fn = fn.fn
        if mode not in MODES:
            raise NeuronCompileError(f"nki.jit mode {mode!r}: one of {', '.join(MODES)}")
        super().__init__(fn, getattr(fn, "__name__", "kernel"))
        self.dialect = dialect
        self.mode = mode
        self.platform_target = target
        self.grid = tuple(grid)
        self.options = options
        self.last_stats: dict[str, Any] | None = None
        self.benchmark_result: BenchmarkResult | None = None

    def __getitem__(self, grid: Any) -> NkiKernel:
        grid = grid if isinstance(grid, tuple) else (grid,)
        from ..kernels.values import HbmView  # noqa: F401

        k = NkiKernel(self.fn, self.dialect, self.mode, self.platform_target,
                      tuple(int(getattr(g, "size", g)) for g in grid), **self.options)
        k._traces = self._traces
        return k

    def target(self) -> str:
        from ..options import resolve_options

        return platform_target(self.platform_target) or resolve_options(None).target

    def trace(self, *args: Any, target: str = "trn2", **kwargs: Any) -> Traced:
        from ..kernels.kernel import _signature

        key = (target, self.grid, _signature(args), _signature(tuple(sorted(kwargs.items()))))
        traced = self._traces.get(key)
        if traced is not None:
            return traced
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        unroll: set[tuple[str, int]] = set()
        for _ in range(64):
            def setup(t: Any) -> None:
                t.unroll = unroll

            try:
                with unset_fake_temporarily():
                    traced = trace(self.fn, self.name, list(args), kwargs, target,
                                   dialect=self.dialect, grid=self.grid, setup=setup)
                break
            except Unroll as u:
                new = {(lp.source.file, lp.source.line) for lp in u.loops}
                if new <= unroll:
                    raise NeuronCompileError(
                        f"kernel '{self.name}': a loop variable is needed as an int where "
                        "the loop is already unrolled") from None
                unroll |= new
        else:  # pragma: no cover
            raise NeuronCompileError(f"kernel '{self.name}': too many loops to unroll")
        self._traces[key] = traced
        return traced

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.run(args, kwargs)

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any], timing_only: bool = False,
            profile: str | None = None) -> Any:
        if _current:
            raise NeuronCompileError(f"kernel '{self.name}' is called inside another kernel; "
                                     "call a plain Python helper instead")
        from ..options import resolve_options
        from ..stats import last_run_stats

        numpy_out = any(isinstance(a, np.ndarray) for a in list(args) + list(kwargs.values()))
        timing_only = timing_only or any(isinstance(a, TensorSpec) for a in
                                         list(args) + list(kwargs.values()))
        # tensor arguments may be given by keyword: bind them to positions
        import inspect

        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise NeuronCompileError(f"kernel '{self.name}': {e}") from None
        params = list(inspect.signature(self.fn).parameters.values())
        pos: list[Any] = []
        rest: dict[str, Any] = {}
        tensor_phase = True
        for p in params:
            if p.name not in bound.arguments:
                tensor_phase = False
                continue
            v = bound.arguments[p.name]
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NeuronCompileError(f"kernel '{self.name}': *args / **kwargs parameters "
                                         "are not supported by NeuronSim's NKI")
            v = _to_torch(v)
            if tensor_phase and p.kind != p.KEYWORD_ONLY:
                pos.append(v)
            else:
                tensor_phase = False
                if isinstance(v, torch.Tensor):
                    raise NeuronCompileError(f"kernel '{self.name}': tensor argument "
                                             f"{p.name} after a defaulted one")
                rest[p.name] = v
        options = resolve_options({"target": self.target(), "timing_only": timing_only,
                                   **({"profile": profile} if profile else {})})
        outputs = run_eager(self, pos, rest, options)
        self.last_stats = last_run_stats()
        if numpy_out:
            outputs = [_to_numpy(o) for o in outputs]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _to_torch(v: Any) -> Any:
    if isinstance(v, TensorSpec):
        return torch.zeros(v.shape, dtype=v.dtype)
    if isinstance(v, np.ndarray):
        if v.dtype.name == "bfloat16":
            return torch.from_numpy(v.view(np.uint16).copy()).view(torch.bfloat16)
        t = torch.from_numpy(np.ascontiguousarray(v))
        if t.dtype == torch.float64:
            t = t.to(torch.float32)
        return t
    if isinstance(v, np.generic):
        return v.item()
    return v


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: exact in float32
        try:
            import ml_dtypes

            return t.view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
        except ImportError:
            return t.to(torch.float32).numpy()
    return t.numpy()


def jit(fn: Callable[..., Any] | None = None, *, mode: str = "auto",
        platform_target: str | None = None, dialect: str = "nki", **options: Any) -> Any:
    """@nki.jit: the kernel runs on NeuronSim's simulator whatever the mode (NKI's modes
    choose a framework; here numpy in gives numpy out, torch in gives torch out)."""
    if fn is None:
        return lambda f: NkiKernel(f, dialect, mode, platform_target, **options)
    return NkiKernel(fn, dialect, mode, platform_target, **options)


def _kernel_of(kernel: Any, dialect: str) -> NkiKernel:
    if isinstance(kernel, NkiKernel):
        return kernel
    return NkiKernel(kernel, dialect)


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """Runs a kernel on numpy arrays and returns numpy arrays (NKI's simulate_kernel)."""
    return _kernel_of(kernel, "legacy").run(args, kwargs)


def simulate(kernel: Any) -> Callable[..., Any]:
    """nki.simulate(kernel)(*args): the kernel run on the simulator."""
    k = _kernel_of(kernel, "nki")
    return lambda *args, **kwargs: k.run(args, kwargs)


class LatencyStats:
    """NKI's benchmark latency statistics (microseconds). The simulator is deterministic:
    every iteration takes the same simulated device time, so every percentile is that time."""

    def __init__(self, samples_us: list[float]) -> None:
        self.samples_us = samples_us

    def get_latency_percentile(self, percentile: float) -> float:
        return float(np.percentile(self.samples_us, percentile))

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples_us))


class BenchmarkResult:
    def __init__(self, samples_us: list[float], stats: dict[str, Any] | None) -> None:
        self.nc_latency = LatencyStats(samples_us)
        self.stats = stats


class _Benchmarked:
    """A kernel under nki.benchmark: each call runs it once (timing-only, as NKI's benchmark
    ignores the values) and records `iters` samples of its simulated device time."""

    def __init__(self, kernel: NkiKernel, warmup: int, iters: int, functional: bool) -> None:
        self.kernel = kernel
        self.warmup, self.iters, self.functional = warmup, iters, functional
        self.benchmark_result: BenchmarkResult | None = None

    def __getitem__(self, grid: Any) -> _Benchmarked:
        return _Benchmarked(self.kernel[grid], self.warmup, self.iters, self.functional)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.kernel.run(args, kwargs, timing_only=not self.functional)
        stats = self.kernel.last_stats or {}
        us = float(stats.get("sim_ns", 0.0)) / 1000.0
        self.benchmark_result = BenchmarkResult([us] * max(1, self.iters), stats)
        self.kernel.benchmark_result = self.benchmark_result
        return out


def benchmark(kernel: Any = None, *, warmup: int = 5, iters: int = 10,
              save_neff_name: str | None = None, save_trace_name: str | None = None,
              additional_compile_opt: str | None = None, functional: bool = False,
              **_: Any) -> Any:
    """nki.benchmark(warmup=, iters=)(kernel): `.benchmark_result.nc_latency` after a call
    holds the simulated device time (us). With save_trace_name, a Perfetto trace is written."""
    def wrap(k: Any) -> _Benchmarked:
        b = _Benchmarked(_kernel_of(k, "legacy"), warmup, iters, functional)
        if save_trace_name:
            b.kernel.options["profile"] = save_trace_name
        return b

    return wrap(kernel) if kernel is not None else wrap


def baremetal(kernel: Any = None, **kw: Any) -> Any:
    """nki.baremetal: runs the kernel on numpy arrays (on the simulator)."""
    def wrap(k: Any) -> Callable[..., Any]:
        kk = _kernel_of(k, "legacy")
        return kk

    return wrap(kernel) if kernel is not None else wrap


class _Profiled:
    def __init__(self, kernel: NkiKernel, path: str) -> None:
        self.kernel, self.path = kernel, path

    def __getitem__(self, grid: Any) -> _Profiled:
        return _Profiled(self.kernel[grid], self.path)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel.run(args, kwargs, profile=self.path)


def profile(kernel: Any = None, *, working_directory: str = ".", save_neff_name: str = "file",
            save_trace_name: str = "profile.json", overwrite: bool = True, **_: Any) -> Any:
    """nki.profile: runs the kernel and writes a Chrome trace / Perfetto JSON timeline of
    the simulated engines to working_directory/save_trace_name."""
    def wrap(k: Any) -> _Profiled:
        os.makedirs(working_directory, exist_ok=True)
        return _Profiled(_kernel_of(k, "legacy"), os.path.join(working_directory,
                                                               save_trace_name))

    return wrap(kernel) if kernel is not None else wrap


_ = Source
