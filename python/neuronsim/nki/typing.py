"""nki.typing: `nt.tensor[shape, dtype]` describes a kernel input by shape and dtype (a kernel
called with one runs timing-only: its values are undefined)."""

from __future__ import annotations

from typing import Any

from ._kernel import TensorSpec


class _TensorType:
    def __getitem__(self, key: Any) -> TensorSpec:
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("nki.typing.tensor[shape, dtype]")
        return TensorSpec(tuple(key[0]), key[1])


tensor = _TensorType()
scalar = float


class _MutableTensorType:
    """`nt.mutable_tensor`: the annotation of an HBM argument a kernel writes (an annotation
    only: any argument may be written, and the caller's tensor gets the final value)."""

    def __getitem__(self, key: Any) -> Any:
        return tensor[key] if isinstance(key, tuple) and len(key) == 2 else self


mutable_tensor = _MutableTensorType()
