"""The `neuron` device: PyTorch's PrivateUse1 backend, renamed (see python/src/NeuronDevice.cpp
for the native half and eager.py for how ops run)."""

from __future__ import annotations

import sys

import torch

_registered = False
_UNSUPPORTED_DTYPE_HINT = "the NeuronCore has no {dtype}; use float32 or bfloat16"


def register() -> None:
    """Registers `neuron` with PyTorch (idempotent): the PrivateUse1 backend under that name,
    Tensor.neuron() / .is_neuron, the torch.neuron module and the eager-mode fallback."""
    global _registered
    if _registered:
        return
    from . import autocast, default_backend, eager, environment, hbm, memory, module, sharing
    from .no_dynamo import outside_dynamo

    hbm.load()
    if torch._C._get_privateuse1_backend_name() != "neuron":
        torch.utils.rename_privateuse1_backend("neuron")
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True, for_packed_sequence=True
    )
    module.memory = memory
    module.memory_summary = memory.memory_summary
    module.memory_snapshot = memory.memory_snapshot
    sys.modules["torch.neuron"] = module
    sys.modules["torch.neuron.memory"] = memory
    torch._register_device_module("neuron", module)
    from ..options import resolve_options

    cores = environment.visible_cores()
    target = resolve_options(None).target
    hbm.configure(len(cores), target)
    module._configure(cores, target)
    eager._generator = lambda: module.default_generator()
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(outside_dynamo(eager.run_op), "PrivateUse1")
    kernels = torch.library.Library("aten", "IMPL")
    eager.register_kernels(kernels)
    autocast_fallthrough = torch.library.Library("_", "IMPL")
    autocast.register(autocast_fallthrough, kernels)
    # registrations live as long as these objects
    _libraries.extend([fallback, kernels, autocast_fallthrough])
    default_backend.install()  # torch.compile(model) of neuron tensors: the neuron backend
    from ..flex_attention import allow_neuron_tensors

    allow_neuron_tensors()  # flex_attention accepts neuron tensors (about 17 ms of import)
    sharing.install()  # neuron tensors through torch.multiprocessing (DataLoader workers)
    from . import adaptive

    adaptive.configure_from_environment()  # NEURONSIM_ADAPTIVE_EAGER
    _registered = True


_libraries: list[torch.library.Library] = []
