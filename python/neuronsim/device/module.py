"""`torch.neuron`: the device module PyTorch finds for the `neuron` device (as torch.cuda for
CUDA). Everything runs synchronously on the simulator, so synchronize() returns at once and
streams and events carry simulated timestamps (the device clock)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import torch

from . import hbm

_state = threading.local()
_device_count = 1
_target = "trn2"
_cores: list[int] = [0]  # the logical core id of each device (NEURON_RT_VISIBLE_CORES)
_generators: list[DeviceGenerator] = []
_initial_seeds: list[int] = []
_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


class DeviceGenerator:
    """A device's default generator, a (seed, offset) pair as CUDA's Philox generator: its
    state is 16 bytes (seed and offset as uint64), which is what DTensor's offset-based RNG
    tracker reads and rewrites for each shard (torchtitan, FSDP2, tensor parallel). A random
    op draws on the CPU from an mt19937 seeded from (seed, offset), then the offset advances
    by its elements rounded up to 4 (CUDA's increment); the same state gives the same
    numbers, different offsets (shards) different ones."""

    def __init__(self, seed: int | None = None) -> None:
        self._seed = int(torch.Generator().initial_seed() if seed is None else seed) & _MASK64
        self._offset = 0

    def manual_seed(self, seed: int) -> DeviceGenerator:
        self._seed, self._offset = int(seed) & _MASK64, 0
        return self

    def seed(self) -> int:
        self.manual_seed(torch.Generator().seed())
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_offset(self) -> int:
        return self._offset

    def set_offset(self, offset: int) -> None:
        self._offset = int(offset) & _MASK64

    def get_state(self) -> torch.Tensor:
        return torch.tensor([self._seed, self._offset], dtype=torch.uint64).view(torch.uint8)

    def set_state(self, new_state: torch.Tensor) -> None:
        state = new_state.detach().to("cpu")
        if state.dtype != torch.uint8 or state.numel() != 16:
            raise RuntimeError(
                "neuron: a device generator's state is 16 bytes (uint8: seed and offset as "
                f"uint64, as torch.neuron.get_rng_state() returns), got {state.numel()} "
                f"elements of {state.dtype}"
            )
        seed, offset = state.contiguous().view(torch.uint64).tolist()
        self._seed, self._offset = int(seed), int(offset)

    def host_generator(self) -> torch.Generator:
        """The CPU generator an op at the current offset draws from."""
        return torch.Generator().manual_seed(_splitmix64(self._seed ^ _splitmix64(self._offset)))

    def advance(self, elements: int) -> None:
        self._offset = (self._offset + (int(elements) + 3) // 4 * 4) & _MASK64

    @property
    def device(self) -> torch.device:
        return torch.device("neuron", _generators.index(self) if self in _generators else 0)


def _configure(cores: list[int], target: str) -> None:
    global _device_count, _target, default_generators
    device_count = len(cores)
    _device_count, _target = device_count, target
    _cores[:] = cores
    _generators[:] = [DeviceGenerator() for _ in range(device_count)]
    _initial_seeds[:] = [g.initial_seed() for g in _generators]
    default_generators = tuple(_generators)


default_generators: tuple[DeviceGenerator, ...] = ()  # as torch.cuda.default_generators


def _index(device: Any = None) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        if device.type != "neuron":
            raise ValueError(f"expected a neuron device, got {device}")
        index = current_device() if device.index is None else device.index
    if not 0 <= index < _device_count:
        raise RuntimeError(
            f"neuron: invalid device index {index} (device_count() is {_device_count})"
        )
    return index


def is_available() -> bool:
    return _device_count > 0


def is_initialized() -> bool:
    return True


def _lazy_init() -> None:
    pass


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return _device_count


def current_device() -> int:
    return torch.accelerator.current_device_index()


def set_device(device: Any) -> None:
    torch.accelerator.set_device_index(_index(device))


class device:
    """Context manager that makes `device` current: `with torch.neuron.device(1): ...`"""

    def __init__(self, device: Any) -> None:
        self.index = _index(device)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = current_device()
        set_device(self.index)

    def __exit__(self, *exc: Any) -> None:
        set_device(self.previous)


# Streams and events (torch.Stream / torch.Event on the neuron device), as FSDP2 and other
# device-generic code reach them through torch.neuron.


def Stream(device: Any = None, priority: int = 0) -> torch.Stream:  # noqa: N802 - torch.cuda's name
    return torch.Stream(device=torch.device("neuron", _index(device)), priority=priority)


def current_stream(device: Any = None) -> torch.Stream:
    return torch.accelerator.current_stream(torch.device("neuron", _index(device)))


def default_stream(device: Any = None) -> torch.Stream:
    return torch.accelerator.current_stream(torch.device("neuron", _index(device)))


def set_stream(stream: torch.Stream) -> None:
    torch.accelerator.set_stream(stream)


def stream(s: torch.Stream | None):  # noqa: ANN201 - a context manager
    import contextlib

    return contextlib.nullcontext() if s is None else s


def Event(enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):  # noqa: N802
    return torch.Event(device="neuron", enable_timing=enable_timing)


def _flush() -> None:
    from . import adaptive

    adaptive.flush()


def synchronize(device: Any = None) -> None:
    """Runs the pending adaptive eager batch (if any); otherwise returns at once: the simulator
    has finished every program when its call returns."""
    _index(device)
    _flush()


def get_device_name(device: Any = None) -> str:
    """'neuron (simulated trn2-lnc2 NeuronCore)': code that looks for "neuron" in the name
    (as for TorchNeuron's) finds it."""
    _index(device)
    return f"neuron (simulated {_target} NeuronCore)"


@dataclass(frozen=True)
class NeuronDeviceProperties:
    """What torch.neuron.get_device_properties() returns (as torch.cuda's properties)."""

    name: str
    total_memory: int  # bytes of HBM of the device
    target: str  # the simulated target: trn2-lnc2 (LNC=2, the default), trn2, ...
    logical_nc_config: int  # physical NeuronCores per device (NEURON_LOGICAL_NC_CONFIG)
    core_id: int  # the logical core id (NEURON_RT_VISIBLE_CORES)
    hbm_bytes_per_ns: float  # HBM bandwidth
    partitions: int  # SBUF partitions
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int
    is_simulated: bool = True


def get_device_properties(device: Any = None) -> NeuronDeviceProperties:
    from .. import native

    index = _index(device)
    facts = native.lib().target_facts(_target)
    return NeuronDeviceProperties(
        name=get_device_name(index),
        total_memory=hbm.memory_stats(index)[2],
        target=_target,
        logical_nc_config=2 if _target.endswith("lnc2") else 1,
        core_id=_cores[index],
        hbm_bytes_per_ns=float(facts["hbm_bytes_per_ns"]),
        partitions=int(facts["partitions"]),
        sbuf_bytes_per_partition=int(facts["sbuf_bytes_per_partition"]),
        psum_bytes_per_partition=int(facts["psum_bytes_per_partition"]),
    )


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """(Trainium generation, 0): (2, 0) on trn2 targets."""
    _index(device)
    return (int(_target[3]) if _target[3:4].isdigit() else 0, 0)


def target() -> str:
    """The simulated target the device models (NEURONSIM_TARGET at import)."""
    return _target


def is_bf16_supported() -> bool:
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.bfloat16, torch.float16]


# Random numbers: one (seed, offset) generator per device (random ops run on the CPU, over device
# memory, from a CPU generator seeded from both).


def default_generator(device: Any = None) -> DeviceGenerator:
    return _generators[_index(device)]


def manual_seed(seed: int) -> None:
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for generator in _generators:
        generator.manual_seed(int(seed))


def seed() -> None:
    default_generator().seed()


def seed_all() -> None:
    for generator in _generators:
        generator.seed()


def initial_seed() -> int:
    return default_generator().initial_seed()


def get_rng_state(device: Any = "neuron") -> torch.Tensor:
    return default_generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = "neuron") -> None:
    default_generator(device).set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [g.get_state() for g in _generators]


def set_rng_state_all(states: list[torch.Tensor]) -> None:
    for generator, state in zip(_generators, states):
        generator.set_state(state)


# Memory: the simulated HBM of each device (the target's HBM per core).


def _outside_dynamo() -> None:
    """The RNG state functions run eagerly: torch.random.fork_rng calls them for the current
    accelerator inside functions that Dynamo traces, where the state would be a fake tensor
    (set_state on it asserts). Called there, they break the graph and run for real."""
    from .no_dynamo import outside_dynamo

    for name in ("get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
                 "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed"):
        globals()[name] = outside_dynamo(globals()[name])


_outside_dynamo()


def memory_allocated(device: Any = None) -> int:
    """Bytes of device memory held by live tensors."""
    return hbm.memory_stats(_index(device))[0]


def max_memory_allocated(device: Any = None) -> int:
    """The peak of memory_allocated() since start or reset_peak_memory_stats()."""
    return hbm.memory_stats(_index(device))[1]


def memory_reserved(device: Any = None) -> int:
    """As memory_allocated(): the allocator caches nothing."""
    return memory_allocated(device)


def max_memory_reserved(device: Any = None) -> int:
    return max_memory_allocated(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    hbm.reset_peak(_index(device))


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device's simulated HBM."""
    allocated, _, capacity, _ = hbm.memory_stats(_index(device))
    return capacity - allocated, capacity


def memory_stats(device: Any = None) -> dict[str, Any]:
    """Memory and transfer counters of the device, with the simulated clock: CUDA's keys
    (torch.accelerator.memory_stats(): allocated_bytes / reserved_bytes / active_bytes /
    requested_bytes .all.current / .peak / .allocated / .freed, all the same as nothing is
    cached; allocation / segment / active .all.* counting allocations; num_ooms,
    num_alloc_retries), capacity_bytes, and host_to_device_* / device_to_host_* /
    device_to_device_* (count, bytes, ns) and clock_ns."""
    index = _index(device)
    _flush()
    capacity = hbm.memory_stats(index)[2]
    return {
        **torch.accelerator.memory_stats(index),  # the allocator's (a c10::DeviceAllocator)
        "capacity_bytes": capacity,
        **hbm.transfer_stats(index),
    }


def empty_cache() -> None:
    """Nothing to free: memory returns to the device when its last tensor goes."""


def get_dynamo_metrics() -> list[Any]:
    """One record per graph torch.compile(backend="neuron") compiled (TorchNeuron's API):
    graph_id, graph_name, kind, graph_node_count, has_collectives, torch_neuronx_compile_us."""
    from .. import compile_metrics

    return compile_metrics.get_dynamo_metrics()


def reset_dynamo_metrics() -> None:
    from .. import compile_metrics

    compile_metrics.reset_dynamo_metrics()


def simulated_time_ns(device: Any = None) -> float:
    """The device clock: simulated ns of every program, eager op and copy run on it so far."""
    _flush()
    return hbm.transfer_stats(_index(device))["clock_ns"]
