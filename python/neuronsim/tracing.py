"""Tracing at call time in the state Dynamo traces in, so that other threads are not hurt.

PyTorch keeps its tracing state process-wide: FX sets a "symbolic tracing" flag and patches
torch.nn.Module.__call__ while it traces, and a thread entering a torch.compile'd function
while the flag is set fails ("Detected that you are using FX to symbolically trace a
dynamo-optimized function") unless a compile is under way; a thread that builds Dynamo's guards
while the patch is in place guards on the patched method. Dynamo itself traces holding its
compile lock, with torch.compiler's compiling flag set. The neuron device traces an eager op on
a program-cache miss, and a graph with symbolic sizes is specialized at its first call with new
sizes: both do it inside `like_a_dynamo_compile()`, which is that same state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def like_a_dynamo_compile() -> Iterator[None]:
    """Dynamo's compile lock (reentrant) held and torch.compiler.is_compiling() true."""
    from torch._dynamo.convert_frame import compile_lock

    with compile_lock, torch.compiler._compile_session_context():
        yield
