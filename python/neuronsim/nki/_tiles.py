"""NKI tiles: N-d views of one SBUF/PSUM allocation ([partitions, free] underneath), with block
dimensions (legacy nl.par_dim), NKI indexing, DMA to/from HBM, and operators."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..kernels import ir
from ..kernels import ops as _ops
from ..kernels.ir import Aff, Source, TileRegion, caller_source
from ..kernels.tracer import error, tracer
from ..kernels.values import HbmView, TileView
from ._index import Mask, PendingTile, expand_keys, key_parts, par_dim


class NTile:
    """Partitions [p0, p0 + np) of `tile`, at column offset c0 with block dims before the
    partition dim and free dims after it, each (stride in columns, size)."""

    def __init__(self, tile: ir.Tile, p0: int, np_: int, c0: Aff,
                 blocks: list[tuple[int, int]], free: list[tuple[int, int]]) -> None:
        self.tile, self.p0, self.np, self.c0 = tile, p0, np_, c0
        self.blocks, self.free = blocks, free

    # -- construction ------------------------------------------------------------------

    @staticmethod
    def wrap(view: TileView, shape: tuple[int, ...] | None) -> NTile:
        """An NTile over a 2-D region, viewed as `shape` (partitions first) if given."""
        r = view.region
        if shape is None or len(shape) < 2 or math.prod(shape[1:]) != r.width or (
                shape[0] != r.np):
            return NTile(r.tile, r.p0, r.np, r.c0, [], [(1, r.width)])
        free, stride = [], 1
        for d in reversed(shape[1:]):
            free.append((stride, int(d)))
            stride *= int(d)
        return NTile(r.tile, r.p0, r.np, r.c0, [], free[::-1])

    # -- properties --------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple([n for _, n in self.blocks] + [self.np] + [n for _, n in self.free])

    @property
    def dtype(self) -> torch.dtype:
        return self.tile.dtype

    @property
    def buffer(self) -> str:
        return self.tile.space

    def free_size(self) -> int:
        return math.prod(n for _, n in self.free)

    def region(self, source: Source | None = None) -> TileRegion:
        """The 2-D region an engine reads or writes: block dims indexed away, free dims
        contiguous."""
        source = source or caller_source()
        if any(n != 1 for _, n in self.blocks):
            raise error(f"a tile of shape {list(self.shape)} with block dimensions is used as "
                        "one tile: index its block dims first", source)
        expected = 1
        for stride, n in reversed(self.free):
            if n != 1 and stride != expected:
                raise error(f"engines read tiles whose free dims are contiguous; this view of "
                            f"shape {list(self.shape)} is strided", source)
            expected *= n
        return TileRegion(self.tile, self.p0, self.np, self.c0, self.free_size())

    def contiguous(self) -> bool:
        if any(n != 1 for _, n in self.blocks):
            return False
        expected = 1
        for stride, n in reversed(self.free):
            if n != 1 and stride != expected:
                return False
            expected *= n
        return True

    def flat(self, source: Source | None = None) -> TileView:
        """The 2-D region engines read; a strided view (or one with block dims) is first
        gathered into a new tile by an SBUF-to-SBUF DMA (engines read contiguous rows)."""
        source = source or caller_source()
        if self.contiguous():
            return TileView(self.region(source))
        tmp = new_tile((self.np, self.free_size()), self.dtype, self.tile.space
                       if self.tile.space == "sbuf" else "sbuf", source)
        t = tracer()
        t.read(self.region_for_check(), source)
        t.write(tmp.region(source), source)
        t.record(ir.DmaOp(source, self.access(), None, tmp.access()))
        return TileView(tmp.region(source))

    def access(self) -> ir.TileAccess:
        """The DMA pattern of this view (partitions first)."""
        dims = [(self.tile.free, self.np)] + list(self.free)
        if self.blocks:
            dims = list(self.blocks) + dims
        return ir.TileAccess(self.tile, self.c0 + self.p0 * self.tile.free, dims)

    def __repr__(self) -> str:
        return f"NTile({list(self.shape)}, {self.dtype}, {self.buffer})"

    # -- indexing ----------------------------------------------------------------------

    def _index(self, key: Any, mask: Mask | None = None) -> NTile:
        from ._index import Arange

        source = caller_source()
        if isinstance(key, NTile) or (isinstance(key, tuple) and any(
                isinstance(k, NTile) for k in key)):
            raise error("indexing a tile with a tile (dynamic indices) is not supported by "
                        "NeuronSim's NKI", source)
        shape = self.shape
        keys = expand_keys(key, len(shape))
        nb = len(self.blocks)
        c0 = self.c0
        blocks: list[tuple[int, int]] = []
        free: list[tuple[int, int, int, int]] = []  # stride, count, grid axis, position
        p0, np_ = self.p0, self.np
        grids = False
        for i, k in enumerate(keys):
            size = shape[i]
            stride = self.blocks[i][0] if i < nb else (
                0 if i == nb else self.free[i - nb - 1][0])
            if isinstance(k, Arange):
                grids = True
                start, parts = k.parts(mask)
                lo, hi = start.bounds()
                top = hi + sum(c * (n - 1) for _, c, n, _ in parts)
                if lo < 0 or top >= size or any(n < 1 for _, _, n, _ in parts):
                    message = (f"index grid of dim {i} is outside the tile's size {size} (up "
                               f"to {top})")
                    if mask is None and lo >= 0:
                        # a mask given to the instruction may bring it inside (as HBM views)
                        from ._index import PendingTile

                        return PendingTile(self, key, message + " and no mask= keeps it "
                                           "inside", source)  # type: ignore[return-value]
                    raise error(message + (" after its mask" if mask is not None else ""),
                                source)
                if i == nb:
                    if len(parts) != 1 or parts[0][1] != 1 or not start.is_const():
                        raise error("a tile's partitions are indexed by one nl.arange grid "
                                    "(step 1) plus an int", source)
                    p0, np_ = self.p0 + start.const, parts[0][2]
                    continue
                c0 = c0 + start * stride
                for axis, c, n, _ in parts:
                    if i < nb:
                        if n > 1:
                            blocks.append((stride * c, n))
                    else:
                        free.append((stride * c, n, axis if axis is not None else 1 << 20, i))
                continue
            start, count, step, keep, _ = key_parts(k, size, mask, "tile")
            lo, hi = start.bounds()
            if count < 1 or lo < 0 or hi + (count - 1) * step >= size:
                raise error(f"index {k!r} of dim {i} is outside the tile's size {size}", source)
            if i < nb:
                c0 = c0 + start * stride
                if keep and count > 1:
                    blocks.append((stride * step, count))
            elif i == nb:
                if not start.is_const():
                    raise error("the partitions of a tile view must not depend on a loop "
                                "variable", source)
                if step != 1:
                    raise error("tile partition slices have step 1", source)
                p0, np_ = self.p0 + start.const, count
            else:
                c0 = c0 + start * stride
                if keep:
                    free.append((stride * step, count, 1 << 20, i))
        if grids:
            free.sort(key=lambda d: (d[2], d[3]))
        fdims = [(st, n) for st, n, _, _ in free] or [(1, 1)]
        result = NTile(self.tile, p0, np_, c0, blocks, fdims)
        if grids and mask is None:
            result.nki_src = (self, key)  # type: ignore[attr-defined]  (a mask re-indexes it)
        return result

    def __getitem__(self, key: Any) -> NTile:
        return self._index(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        source = caller_source()
        target = self._index(key)
        if isinstance(value, NTile) and value.tile is target.tile and value.p0 == target.p0 \
                and value.c0.const == target.c0.const and value.c0.terms == target.c0.terms:
            return  # `t[...] += x` assigns the updated view to itself
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            target.fill(float(value), source)
            return
        if isinstance(value, TileView):
            value = NTile.wrap(value, None)
        if not isinstance(value, NTile):
            raise error(f"assigns a {type(value).__name__} to a tile", source)
        if value.buffer == "psum" and (target.buffer != "psum" or target.dtype != torch.float32):
            # a Tensor-engine result (PSUM) assigned to SBUF or another dtype: a copy
            value = NTile.wrap(_ops.copy(value.flat(source), target.dtype, source), value.shape)
        if not target.contiguous():  # a strided target: written by an SBUF-to-SBUF DMA
            v = value
            if v.dtype != target.dtype:
                v = NTile.wrap(_ops.copy(v.flat(source), target.dtype, source), None)
            target.dma_from(v, source)
            return
        _ops.assign(target.flat(source), value.flat(source), source)

    def __iadd__(self, other: Any) -> NTile:
        source = caller_source()
        if isinstance(other, NTile):
            other = other.flat(source)
        _ops.accumulate(self.flat(source), other, source)
        return self

    # -- data movement -----------------------------------------------------------------

    def fill(self, value: float, source: Source) -> None:
        if self.blocks and self.dense():
            region = self.region_for_check()
        else:
            region = self.region(source)
        tracer().fill(region, value, source)
        tracer().fresh = None

    def dense(self) -> bool:
        """Whether blocks and free dims together are one contiguous run of columns."""
        expected = 1
        for stride, n in reversed(self.blocks + self.free):
            if n != 1 and stride != expected:
                return False
            expected *= n
        return True

    def dma_from(self, view: HbmView | NTile, source: Source) -> None:
        t = tracer()
        n_src = math.prod(view.shape)
        if n_src != math.prod(self.shape):
            raise error(f"a DMA of {list(view.shape)} into a tile of shape {list(self.shape)}: "
                        "the element counts differ", source)
        if view.dtype != self.dtype:
            # NKI's dma_copy casts between dtypes; here the DMA moves the source's dtype into
            # a staging tile and the Vector engine converts it (as a store of another dtype
            # does, dma_to): the numbers are the cast's, the time one tensor_copy more.
            if self.tile.space != "sbuf":
                raise error(f"DMA does not convert: {_name(view.dtype)} into a "
                            f"{_name(self.dtype)} {self.tile.space} tile", source)
            staged = new_tile((self.np, self.free_size()), view.dtype, "sbuf", source)
            staged.dma_from(view, source)
            converted = NTile.wrap(_ops.copy(staged.flat(source), self.dtype, source), None)
            if self.contiguous():
                _ops.assign(TileView(self.region(source)), converted.flat(source), source)
            else:
                self.dma_from(converted, source)
            return
        if isinstance(view, NTile):
            t.read(view.region_for_check(), source)
            src: Any = view.access()
        else:
            src = ir.HbmAccess(view.tensor, view.offset, list(view.dims) or [(1, 1)])
        t.write(self.region_for_check(), source)
        dst = self.access()
        if not self.blocks and len(self.free) == 1 and self.free[0][0] == 1:
            dst = TileRegion(self.tile, self.p0, self.np, self.c0, self.free[0][1])
        op = ir.DmaOp(source, src, None, dst)
        t.record(op)
        if isinstance(dst, TileRegion) and dst.is_whole():
            t.fresh = (op, self.tile)

    def dma_to(self, view: HbmView, source: Source) -> None:
        t = tracer()
        t.writable(view.tensor, source)
        if math.prod(view.shape) != math.prod(self.shape):
            raise error(f"a DMA of a tile of shape {list(self.shape)} into an HBM view of "
                        f"shape {list(view.shape)}: the element counts differ", source)
        tile = self
        if view.dtype != self.dtype:  # DMA does not convert: the Vector engine does first
            tile = NTile.wrap(_ops.copy(self.flat(source), view.dtype, source), None)
        t.read(tile.region_for_check(), source)
        t.record(ir.DmaOp(source, tile.access(), None,
                          ir.HbmAccess(view.tensor, view.offset, list(view.dims) or [(1, 1)])))
        t.fresh = None
        view.tensor.written = True

    def region_for_check(self) -> TileRegion:
        """A region covering this view's columns, for the visibility and written checks."""
        lo = self.c0
        span = 1 + sum((n - 1) * s for s, n in self.blocks + self.free)
        return TileRegion(self.tile, self.p0, self.np, lo, span)

    # -- math --------------------------------------------------------------------------

    def ap(self, pattern: Any, offset: Any = 0, **kw: Any) -> NTile:
        """NKI's access pattern over this tile: [[partition stride, partitions], [stride,
        size], ...] (strides in elements; the partition stride is the tile's row length)."""
        if any(kw.get(k) is not None for k in ("scalar_offset", "vector_offset",
                                               "indirect_dim")):
            raise error("dynamic access patterns (scalar_offset, vector_offset) are not "
                        "supported by NeuronSim's NKI yet")
        pat = [(int(s), int(n)) for s, n in pattern]
        if not pat:
            raise error("an access pattern has at least the partition entry")
        off = Aff.of(offset)
        p0 = self.p0
        if off.is_const() and self.c0.is_const():
            # an offset of whole rows selects partitions (the partition stride is the row)
            rows, col = divmod(self.c0.const + off.const, self.tile.free)
            p0, c0 = p0 + rows, Aff(col)
        else:
            c0 = self.c0 + off
        if p0 + pat[0][1] > self.tile.partitions:
            raise error(f"an access pattern of partitions [{p0}, {p0 + pat[0][1]}) of a tile of "
                        f"{self.tile.partitions}")
        return NTile(self.tile, p0, pat[0][1], c0, [], pat[1:] or [(1, 1)])

    def masked(self, mask: Mask) -> NTile:
        """The partitions a mask keeps, when it restricts one grid of this tile's partition
        count (a tile already of the masked size is kept as is)."""
        if len(mask.ranges) != 1 or self.blocks:
            return self
        (lo, hi), = mask.ranges.values()
        from ._index import _Base  # noqa: F401

        if hi - lo == self.np or lo < 0 or hi > self.np:
            return self
        return NTile(self.tile, self.p0 + lo, hi - lo, self.c0, [], list(self.free))

    def broadcast_to(self, shape: Any) -> NTile:
        shape = tuple(int(d) for d in shape)
        if len(shape) != len(self.shape):
            raise error(f"cannot broadcast a tile of shape {list(self.shape)} to {list(shape)}")
        if shape == self.shape:
            return self
        source = caller_source()
        if self.np == 1 and shape[0] > 1 and not self.blocks:
            # one partition onto many: an SBUF-to-SBUF DMA reading partition p0 shape[0]
            # times (engines cannot move data across partitions): a source partition stride
            # of 0, one descriptor per destination partition
            row = self.broadcast_to((1,) + shape[1:]) if shape[1:] != self.shape[1:] else self
            tmp = new_tile(shape, self.dtype, "sbuf", source)
            t = tracer()
            t.read(row.region_for_check(), source)
            src = row.access()
            src = ir.TileAccess(src.tile, src.offset, [(0, shape[0])] + src.dims[1:])
            t.record(ir.DmaOp(source, src, None, tmp.access()))
            t.write(TileRegion(tmp.tile, 0, shape[0], Aff(0), tmp.tile.free), source)
            t.fresh = None
            return tmp
        if shape[0] != self.np or self.blocks:
            raise error(f"tile broadcast_to along the partitions ({list(self.shape)} -> "
                        f"{list(shape)}) is not supported by NeuronSim's NKI (load the row "
                        "on every partition with a stride-0 DMA)")
        free = []
        for (stride, n), want in zip(self.free, shape[1:]):
            if n == want:
                free.append((stride, n))
            elif n == 1:
                free.append((0, want))
            else:
                raise error(f"cannot broadcast a tile of shape {list(self.shape)} to "
                            f"{list(shape)}")
        return NTile(self.tile, self.p0, self.np, self.c0, [], free)

    def is_column_broadcast(self) -> bool:
        """One value per partition read along the row: every free dim of more than one
        element has stride 0 (a view broadcasting only some dims is gathered by flat())."""
        big = [s for s, n in self.free if n > 1]
        return bool(big) and all(s == 0 for s in big) and not self.blocks

    def column(self) -> NTile:
        """The [P, 1] column behind a broadcast view."""
        return NTile(self.tile, self.p0, self.np, self.c0, [], [(1, 1)])

    def _bin(self, o: Any, op: str, reverse: bool = False) -> NTile:
        return binary(op, o, self, None, caller_source()) if reverse else binary(
            op, self, o, None, caller_source())

    def __add__(self, o: Any) -> NTile:
        return self._bin(o, "add")

    def __radd__(self, o: Any) -> NTile:
        return self._bin(o, "add", True)

    def __sub__(self, o: Any) -> NTile:
        return self._bin(o, "sub")

    def __rsub__(self, o: Any) -> NTile:
        return self._bin(o, "sub", True)

    def __mul__(self, o: Any) -> NTile:
        return self._bin(o, "mul")

    def __rmul__(self, o: Any) -> NTile:
        return self._bin(o, "mul", True)

    def __truediv__(self, o: Any) -> NTile:
        return self._bin(o, "div")

    def __rtruediv__(self, o: Any) -> NTile:
        return self._bin(o, "div", True)

    def __neg__(self) -> NTile:
        return self._bin(-1.0, "mul")

    def __pow__(self, o: Any) -> NTile:
        return self._bin(o, "pow")

    def reshape(self, shape: Any) -> NTile:
        shape = tuple(int(d) for d in shape)
        r = self.region()
        if shape[0] != r.np or math.prod(shape[1:]) != r.width:
            raise error(f"cannot reshape a tile of shape {list(self.shape)} to {list(shape)} "
                        "(the partition dim stays)")
        return NTile.wrap(TileView(r), shape)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def is_tile(x: Any) -> bool:
    """An SBUF/PSUM tile operand: a tile, a view of one, or a grid-indexed tile pending its
    mask."""
    return isinstance(x, (NTile, TileView, PendingTile))


def new_tile(shape: Any, dtype: torch.dtype, space: str, source: Source) -> NTile:
    """An allocation of `shape`: dims before an nl.par_dim are block dims (each a tile of the
    rest, side by side in the free dimension); otherwise the first dim is the partitions."""
    dims = list(shape) if isinstance(shape, (tuple, list)) else [shape]
    pos = next((i for i, d in enumerate(dims) if isinstance(d, par_dim)), 0)
    dims = [int(d) for d in dims]
    if len(dims) == 1:
        dims.append(1)
    blocks, p, free = dims[:pos], dims[pos], dims[pos + 1:] or [1]
    width = math.prod(free)
    total = width * math.prod(blocks) if blocks else width
    t = tracer()
    tile = t.new_tile(p, total, dtype, space, source)
    t.fresh = None
    fdims, stride = [], 1
    for d in reversed(free):
        fdims.append((stride, d))
        stride *= d
    bdims, stride = [], width
    for d in reversed(blocks):
        bdims.append((stride, d))
        stride *= d
    return NTile(tile, 0, p, Aff(0), bdims[::-1], fdims[::-1])


def _operand(x: Any, what: str, source: Source) -> Any:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    if isinstance(x, TileView):
        x = NTile.wrap(x, None)
    if not isinstance(x, NTile):
        raise error(f"{what} must be a tile or a number, got {type(x).__name__}", source)
    return x


def binary(op: str, x: Any, y: Any, dtype: torch.dtype | None, source: Source,
           mask: Any = None, engine: str | None = None) -> NTile:
    """x <op> y on the Vector engine: tiles of one shape, a [P, 1] column (or its
    broadcast_to) with a tile, or a tile with a number."""
    a = _operand(x, f"the first operand of {op}", source)
    b = _operand(y, f"the second operand of {op}", source)
    if isinstance(a, float) and isinstance(b, float):
        raise error(f"{op} of two numbers: one operand is a tile", source)
    if isinstance(a, float):
        r = _ops.elementwise(op, b.flat(source), a, reverse=True, dtype=dtype, source=source,
                             engine=engine)
        return NTile.wrap(r, b.shape)
    shape = a.shape
    if isinstance(b, float):
        return NTile.wrap(_ops.elementwise(op, a.flat(source), b, dtype=dtype, source=source,
                                           engine=engine), shape)
    if a.is_column_broadcast():
        shape = a.shape
        a = a.column()
    if b.is_column_broadcast():
        shape = b.shape
        b = b.column()
    if a.free_size() == 1 and b.free_size() > 1:
        shape = b.shape
    r = _ops.elementwise(op, a.flat(source), b.flat(source), dtype=dtype, source=source,
                         engine=engine)
    return NTile.wrap(r, shape if math.prod(shape[1:]) == r.shape[1] else None)


def reduce_free(op: str, x: Any, axis: Any, dtype: torch.dtype | None, keepdims: bool,
                source: Source, mask: Any = None, engine: str | None = None,
                negate: bool = False) -> NTile:
    """A reduction over free dims (all of them, or the innermost ones given by `axis`) into a
    [P, 1] tile."""
    t = _operand(x, f"the data of a {op} reduction", source)
    rank = len(t.shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis) if axis is not None else tuple(
        range(1, rank))
    axes = tuple(sorted(a % rank for a in axes))
    if 0 not in axes and not t.blocks and axes != tuple(range(rank - len(axes), rank)):
        # a view: the reduced dims move last (strides stay), the kept ones keep their order
        keep = [d for i, d in enumerate(t.free, 1) if i not in axes]
        red = [d for i, d in enumerate(t.free, 1) if i in axes]
        t = NTile(t.tile, t.p0, t.np, t.c0, [], keep + red)
        axes = tuple(range(rank - len(axes), rank))
    if 0 in axes or axes != tuple(range(rank - len(axes), rank)):
        raise error(f"reductions run along the innermost free dims (axis=1, or (1, 2), ...) "
                    f"of a tile of shape {list(t.shape)}, got axis={axis!r}", source)
    if len(axes) != rank - 1:
        # the innermost dims of each outer index: one reduction instruction each, into a
        # column of the result
        if t.blocks:
            raise error("a reduction of a tile with block dims", source)
        k = len(axes)
        outer, inner = t.free[:len(t.free) - k], t.free[len(t.free) - k:]
        import itertools

        osizes = [n for _, n in outer]
        out_dtype = dtype or (torch.float32 if t.buffer == "psum" else t.dtype)
        res = new_tile((t.np, math.prod(osizes)), out_dtype, "sbuf", source)
        for j, idx in enumerate(itertools.product(*(range(n) for n in osizes))):
            off = sum(i * s for i, (s, _) in zip(idx, outer))
            part = NTile(t.tile, t.p0, t.np, t.c0 + off, [], list(inner))
            r = _ops.reduce(op, part.flat(source), 1, out_dtype, source, engine=engine)
            if negate:
                r = _ops.elementwise("mul", r, -1.0, source=source, engine=engine)
            _ops.assign(res[:, j:j + 1].flat(source), r, source)
        shape = (t.np, *osizes) + ((1,) * k if keepdims else ())
        return NTile.wrap(res.flat(source), shape)
    r = _ops.reduce(op, t.flat(source), 1, dtype, source, engine=engine)
    if negate:
        r = _ops.elementwise("mul", r, -1.0, source=source, engine=engine)
    return NTile.wrap(r, (t.np, 1) if not keepdims else (t.np,) + (1,) * (rank - 1))


_ = (Any,)
