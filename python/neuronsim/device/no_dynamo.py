"""Kernels and device-module functions Dynamo never traces, without importing torch._dynamo.

The device registers itself while `import torch` runs (the `torch.backends` entry point), where
importing torch._dynamo would add about a second to every `import torch`. torch._dynamo.disable
does two things this module does with the same C hooks (torch._C._dynamo.eval_frame): the
wrapper's own frame is marked as one Dynamo skips, and while it runs the frame callback is
cleared, so nothing it calls is intercepted either. Eager ops on neuron tensors run between the
graphs of a compiled function (graph breaks, DDP's hooks), where Dynamo would otherwise try to
compile this package's Python code as user code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from torch._C._dynamo import eval_frame as _eval_frame

_SKIP = _eval_frame._FrameExecStrategy(_eval_frame._FrameAction.SKIP,
                                       _eval_frame._FrameAction.DEFAULT)


def outside_dynamo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` wrapped so that Dynamo neither traces it nor anything it calls."""

    @functools.wraps(fn)
    def run_outside_dynamo(*args: Any, **kwargs: Any) -> Any:
        prior = _eval_frame.set_eval_frame(None)
        try:
            return fn(*args, **kwargs)
        finally:
            _eval_frame.set_eval_frame(prior)

    _eval_frame.set_code_exec_strategy(run_outside_dynamo.__code__, _SKIP)
    # Dynamo's own marks: a call from traced code is a graph break, the function runs as is.
    run_outside_dynamo._torchdynamo_disable = True
    run_outside_dynamo._torchdynamo_disable_msg = None
    run_outside_dynamo._torchdynamo_disable_recursive = True
    run_outside_dynamo._torchdynamo_orig_callable = fn
    return run_outside_dynamo
