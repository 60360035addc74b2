"""What a kernel holds: views of HBM tensors and of SBUF/PSUM tiles, with NKI-style indexing
and arithmetic operators on tiles."""

from __future__ import annotations

import math
from typing import Any

import torch

from . import ir
from .ir import Aff, HbmAccess, TileRegion, caller_source
from .tracer import error


class DynSlice:
    """nl.ds(start, size): `size` elements from `start` (which may be a loop variable)."""

    def __init__(self, start: Any, size: int) -> None:
        self.start = Aff.of(start)
        self.size = int(size)


def _index(key: Any, size: int, what: str) -> tuple[Aff, int, int, bool]:
    """(start, count, step, keeps the dim) of one index over a dim of `size`."""
    if isinstance(key, DynSlice):
        return key.start, key.size, 1, True
    if isinstance(key, slice):
        step = 1 if key.step is None else key.step
        if not isinstance(step, int) or step < 1:
            raise error(f"{what} slices take a positive int step, got {key.step!r}")
        start = Aff.of(0 if key.start is None else key.start)
        stop = Aff.of(size if key.stop is None else key.stop)
        length = stop - start
        if not length.is_const():
            raise error(f"the size of a {what} slice must not depend on a loop variable "
                        f"({key.start!r}:{key.stop!r}); use nl.ds(start, size)")
        return start, -(-length.const // step), step, True
    if isinstance(key, (int, Aff)) and not isinstance(key, bool):
        return Aff.of(key), 1, 1, False
    raise error(f"cannot index a {what} with {key!r}")


class HbmView:
    """Elements of an HBM tensor (a kernel argument or output) through a strided window."""

    def __init__(self, tensor: ir.HbmTensor, offset: Aff | None = None,
                 dims: list[tuple[int, int]] | None = None) -> None:
        self.tensor = tensor
        self.offset = offset or Aff(0)
        if dims is None:
            strides, acc = [], 1
            for d in reversed(tensor.shape):
                strides.append(acc)
                acc *= d
            dims = list(zip(reversed(strides), tensor.shape))
        self.dims = dims

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for _, n in self.dims)

    @property
    def dtype(self) -> torch.dtype:
        return self.tensor.dtype

    @property
    def buffer(self) -> str:
        """NKI's buffer of the tensor: "shared_hbm" for the outputs a kernel makes, "hbm" for
        its arguments."""
        return "shared_hbm" if self.tensor.is_output else "hbm"

    def __getitem__(self, key: Any) -> HbmView:
        from .tracer import _current

        if _current and _current[-1].dialect is not None:  # neuronsim.nki: NKI's indices
            from ..nki._index import index_hbm

            return index_hbm(self, key)
        keys = key if isinstance(key, tuple) else (key,)
        if Ellipsis in keys:
            i = keys.index(Ellipsis)
            keys = keys[:i] + (slice(None),) * (len(self.dims) - len(keys) + 1) + keys[i + 1:]
        if len(keys) > len(self.dims):
            raise error(f"{len(keys)} indices into an HBM tensor of rank {len(self.dims)}")
        offset, dims = self.offset, []
        for i, (stride, size) in enumerate(self.dims):
            if i >= len(keys):
                dims.append((stride, size))
                continue
            start, count, step, keep = _index(keys[i], size, "HBM tensor")
            lo, hi = start.bounds()
            if count < 1 or lo < 0 or hi + (count - 1) * step >= size:
                raise error(f"index {keys[i]!r} of dim {i} is outside its size {size} "
                            f"(start in [{lo}, {hi}], {count} elements)")
            offset = offset + start * stride
            if keep:
                dims.append((stride * step, count))
        return HbmView(self.tensor, offset, dims)

    def broadcast_to(self, shape: tuple[int, ...]) -> HbmView:
        """The view repeated along new leading dims or dims of size 1 (stride 0)."""
        shape = tuple(int(d) for d in shape)
        if len(shape) < len(self.dims):
            raise error(f"cannot broadcast {list(self.shape)} to {list(shape)}")
        dims = [(0, 1)] * (len(shape) - len(self.dims)) + list(self.dims)
        out = []
        for (stride, size), want in zip(dims, shape):
            if size == want:
                out.append((stride, size))
            elif size == 1:
                out.append((0, want))
            else:
                raise error(f"cannot broadcast {list(self.shape)} to {list(shape)}")
        return HbmView(self.tensor, self.offset, out)

    def reshape(self, shape: tuple[int, ...]) -> HbmView:
        """A contiguous view in another shape."""
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != math.prod(self.shape):
            raise error(f"cannot reshape {list(self.shape)} to {list(shape)}")
        expected = 1
        for stride, size in reversed(self.dims):
            if size > 1 and stride != expected:
                raise error("only a contiguous HBM view can be reshaped")
            expected *= size
        return self._with(self.tensor, shape)

    def _with(self, tensor: ir.HbmTensor, shape: tuple[int, ...]) -> HbmView:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= d
        return HbmView(tensor, self.offset, list(zip(reversed(strides), shape)))

    def access(self) -> HbmAccess:
        return HbmAccess(self.tensor, self.offset, list(self.dims))

    def ap(self, pattern: Any, offset: Any = 0, **kw: Any) -> HbmView:
        """NKI's physical access pattern: [[stride, size], ...] in elements, from `offset`
        (relative to this view's start)."""
        if any(kw.get(k) is not None for k in ("scalar_offset", "vector_offset",
                                               "indirect_dim")):
            raise error("dynamic access patterns (scalar_offset, vector_offset) are not "
                        "supported by NeuronSim's NKI yet")
        dims = [(int(s), int(n)) for s, n in pattern]
        return HbmView(self.tensor, self.offset + Aff.of(offset), dims)

    def __repr__(self) -> str:
        return f"HbmView({list(self.shape)}, {self.dtype})"


def as_hbm(value: Any, what: str) -> HbmView:
    if isinstance(value, ir.HbmTensor):
        return HbmView(value)
    if isinstance(value, HbmView):
        return value
    raise error(f"{what} must be an HBM tensor (a kernel argument or output), got "
                f"{type(value).__name__}")


class TileView:
    """Partitions and columns of an SBUF or PSUM tile."""

    def __init__(self, region: TileRegion) -> None:
        self.region = region

    @staticmethod
    def whole(tile: ir.Tile) -> TileView:
        return TileView(TileRegion(tile, 0, tile.partitions, Aff(0), tile.free))

    @property
    def shape(self) -> tuple[int, int]:
        return (self.region.np, self.region.width)

    @property
    def dtype(self) -> torch.dtype:
        return self.region.tile.dtype

    @property
    def buffer(self) -> str:
        return self.region.tile.space

    def __getitem__(self, key: Any) -> TileView:
        keys = key if isinstance(key, tuple) else (key,)
        if Ellipsis in keys:
            i = keys.index(Ellipsis)
            keys = keys[:i] + (slice(None),) * (2 - len(keys) + 1) + keys[i + 1:]
        keys = keys + (slice(None),) * (2 - len(keys))
        if len(keys) != 2:
            raise error("a tile takes two indices: [partitions, columns]")
        r = self.region
        p_start, p_count, p_step, _ = _index(keys[0], r.np, "tile partition")
        c_start, c_count, c_step, _ = _index(keys[1], r.width, "tile column")
        if p_step != 1 or c_step != 1:
            raise error("tile slices are contiguous (step 1)")
        if not p_start.is_const():
            raise error("the partitions of a tile slice must not depend on a loop variable")
        lo, hi = c_start.bounds()
        if (p_start.const < 0 or p_start.const + p_count > r.np or lo < 0
                or hi + c_count > r.width):
            raise error(f"[{keys[0]!r}, {keys[1]!r}] is outside a tile of shape "
                        f"{list(self.shape)}")
        return TileView(TileRegion(r.tile, r.p0 + p_start.const, p_count, r.c0 + c_start,
                                   c_count))

    def __setitem__(self, key: Any, value: Any) -> None:
        from .ops import assign

        assign(self[key], value, caller_source())

    def __iadd__(self, other: Any) -> TileView:
        from .ops import accumulate

        accumulate(self, other, caller_source())
        return self

    def _binary(self, other: Any, op: str, reverse: bool = False) -> TileView:
        from .ops import elementwise

        return elementwise(op, self, other, reverse=reverse, source=caller_source())

    def __add__(self, o: Any) -> TileView:
        return self._binary(o, "add")

    def __radd__(self, o: Any) -> TileView:
        return self._binary(o, "add")

    def __sub__(self, o: Any) -> TileView:
        return self._binary(o, "sub")

    def __rsub__(self, o: Any) -> TileView:
        return self._binary(o, "sub", reverse=True)

    def __mul__(self, o: Any) -> TileView:
        return self._binary(o, "mul")

    def __rmul__(self, o: Any) -> TileView:
        return self._binary(o, "mul")

    def __truediv__(self, o: Any) -> TileView:
        return self._binary(o, "div")

    def __rtruediv__(self, o: Any) -> TileView:
        return self._binary(o, "div", reverse=True)

    def __neg__(self) -> TileView:
        return self._binary(-1.0, "mul")

    def __repr__(self) -> str:
        return f"TileView({list(self.shape)}, {self.dtype}, {self.buffer})"


def as_tile(value: Any, what: str) -> TileView:
    if isinstance(value, TileView):
        return value
    if isinstance(value, (ir.HbmTensor, HbmView)):
        raise error(f"{what} is an HBM tensor; engines read SBUF/PSUM tiles: nl.load it first")
    raise error(f"{what} must be a tile, got {type(value).__name__}")

