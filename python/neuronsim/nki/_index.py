"""NKI indexing: nl.ds, legacy index grids (nl.arange, nl.mgrid) with masks, nl.par_dim block
dimensions, and HBM views indexed by them (a grid's axes decide which tensor dim goes on the
partitions, as NKI's)."""

from __future__ import annotations

from typing import Any

from ..kernels.ir import Aff, Loop
from ..kernels.tracer import error
from ..kernels.values import DynSlice, HbmView


class Unroll(Exception):
    """A symbolic legacy loop whose variable the kernel needs as an int (a mask bound, a list
    index): the kernel is traced again with that loop unrolled."""

    def __init__(self, loops: list[Loop]) -> None:
        super().__init__("unroll")
        self.loops = loops


def concrete(value: Any, what: str) -> int:
    """An int from an int or a loop expression; a symbolic legacy loop is unrolled."""
    if isinstance(value, Aff):
        if value.is_const():
            return value.const
        raise Unroll(list(value.terms))
    return int(value)


def ds(start: Any, size: int) -> DynSlice:
    """`size` elements from `start` (an int or an expression of loop variables)."""
    return DynSlice(start, size)


class par_dim:  # noqa: N801 (NKI's name)
    """nl.par_dim(n): marks the partition dimension of a tile shape; dims before it are block
    dimensions (separate [n, free] tiles, here side by side in one allocation)."""

    def __init__(self, size: int) -> None:
        self.size = int(size)

    def __index__(self) -> int:
        return self.size

    def __int__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"par_dim({self.size})"


class _Base:
    """One nl.arange(n): the values 0..n-1 along one grid axis."""

    _counter = 0

    def __init__(self, n: int) -> None:
        _Base._counter += 1
        self.id = _Base._counter
        self.n = n


class Arange:
    """const + sum(coef * base): an index grid expression; each base is one nl.arange placed
    on one grid axis ([:, None]: partitions; None: not yet placed)."""

    def __init__(self, terms: list[tuple[_Base, int, int | None]], const: Any = 0) -> None:
        self.terms, self.const = terms, Aff.of(const)

    @property
    def n(self) -> int:
        return self.terms[0][0].n if self.terms else 1

    @property
    def axis(self) -> int | None:
        return self.terms[0][2] if len(self.terms) == 1 else None

    @property
    def base(self) -> _Base:
        return self.terms[0][0]

    @property
    def coef(self) -> int:
        return self.terms[0][1]

    def __getitem__(self, key: Any) -> Arange:
        keys = key if isinstance(key, tuple) else (key,)
        axes = [i for i, k in enumerate(keys) if isinstance(k, slice)]
        if len(axes) != 1 or len(self.terms) != 1 or any(
                k is not None and not isinstance(k, slice) for k in keys):
            raise error("an nl.arange grid is placed with [:, None] (partitions) or "
                        "[None, :] (free)")
        b, c, _ = self.terms[0]
        return Arange([(b, c, axes[0])], self.const)

    def __add__(self, o: Any) -> Arange:
        if isinstance(o, Arange):
            return Arange(self.terms + o.terms, self.const + o.const)
        return Arange(self.terms, self.const + Aff.of(o))

    __radd__ = __add__

    def __sub__(self, o: Any) -> Arange:
        if isinstance(o, Arange):
            return self + (-o)
        return self + (-Aff.of(o))

    def __rsub__(self, o: Any) -> Arange:
        return (-self) + o

    def __mul__(self, o: Any) -> Arange:
        k = concrete(o, "a grid factor")
        return Arange([(b, c * k, a) for b, c, a in self.terms], self.const * k)

    __rmul__ = __mul__

    def __neg__(self) -> Arange:
        return self * -1

    def _cmp(self, o: Any, op: str) -> Mask:
        if isinstance(o, Arange) or len(self.terms) != 1:
            raise error("masks compare one index grid with an int")
        bound = concrete(Aff.of(o) - self.const, "a mask bound")
        base, c, _ = self.terms[0]
        import math

        lo, hi = 0, base.n
        if op in ("lt", "le"):
            lim = bound - (1 if op == "lt" else 0)  # c * b <= lim
            if c > 0:
                hi = min(hi, math.floor(lim / c) + 1)
            else:
                lo = max(lo, math.ceil(lim / c))
        elif op in ("gt", "ge"):
            lim = bound + (1 if op == "gt" else 0)  # c * b >= lim
            if c > 0:
                lo = max(lo, math.ceil(lim / c))
            else:
                hi = min(hi, math.floor(lim / c) + 1)
        else:
            raise error(f"masks take <, <=, >, >= comparisons of index grids, got {op}")
        return Mask({base.id: (lo, hi)})

    def __lt__(self, o: Any) -> Mask:
        return self._cmp(o, "lt")

    def __le__(self, o: Any) -> Mask:
        return self._cmp(o, "le")

    def __gt__(self, o: Any) -> Mask:
        return self._cmp(o, "gt")

    def __ge__(self, o: Any) -> Mask:
        return self._cmp(o, "ge")

    def parts(self, mask: Mask | None) -> tuple[Aff, list[tuple[int | None, int, int, int]]]:
        """(start, [(axis, coef, count, base id)]) after a mask."""
        start = self.const
        dims = []
        for base, c, axis in self.terms:
            lo, hi = 0, base.n
            if mask is not None and base.id in mask.ranges:
                lo, hi = mask.ranges[base.id]
            if c < 0:
                raise error("index grids with a negative factor are not supported by "
                            "NeuronSim's NKI")
            start = start + c * lo
            dims.append((axis, c, max(0, hi - lo), base.id))
        return start, dims


class Mask:
    """A conjunction of ranges of nl.arange bases (from comparisons, combined with &)."""

    def __init__(self, ranges: dict[int, tuple[int, int]]) -> None:
        self.ranges = ranges

    def __and__(self, o: Mask) -> Mask:
        r = dict(self.ranges)
        for k, (lo, hi) in o.ranges.items():
            a, b = r.get(k, (lo, hi))
            r[k] = (max(a, lo), min(b, hi))
        return Mask(r)

    __rand__ = __and__


def arange(*args: int) -> Arange:
    if len(args) == 1:
        start, stop = 0, args[0]
    elif len(args) == 2:
        start, stop = args
    else:
        raise error("nl.arange takes (stop) or (start, stop)")
    start, stop = int(start), int(stop)
    return Arange([(_Base(stop - start), 1, None)], start)


class Grid:
    """The indices of nl.mgrid[0:P, 0:F]: `.p` / `.x` (and unpacking as i_p, i_f)."""

    def __init__(self, axes: list[Arange]) -> None:
        self.axes = axes

    @property
    def p(self) -> Arange:
        return self.axes[0]

    @property
    def x(self) -> Arange:
        return self.axes[1]

    @property
    def y(self) -> Arange:
        return self.axes[2]

    @property
    def z(self) -> Arange:
        return self.axes[3]

    def __iter__(self) -> Any:
        return iter(self.axes)

    def __len__(self) -> int:
        return len(self.axes)

    def __getitem__(self, i: int) -> Arange:
        return self.axes[i]


class _MGrid:
    def __getitem__(self, key: Any) -> Grid:
        keys = key if isinstance(key, tuple) else (key,)
        axes = []
        for i, k in enumerate(keys):
            if not isinstance(k, slice) or k.step not in (None, 1):
                raise error("nl.mgrid takes ranges with step 1: nl.mgrid[0:P, 0:F]")
            start = 0 if k.start is None else int(k.start)
            axes.append(Arange([(_Base(int(k.stop) - start), 1, i)], start))
        return Grid(axes)


mgrid = _MGrid()


def key_parts(key: Any, size: int, mask: Mask | None, what: str
              ) -> tuple[Aff, int, int, bool, int | None]:
    """(start, count, step, keeps the dim, grid axis) of one index over a dim of `size`."""
    if isinstance(key, DynSlice):
        return key.start, key.size, 1, True, None
    if isinstance(key, slice):
        step = 1 if key.step is None else concrete(key.step, "a slice step")
        if step < 1:
            raise error(f"{what} slices take a positive step, got {key.step!r}")
        start = Aff.of(0 if key.start is None else key.start)
        stop = Aff.of(size if key.stop is None else key.stop)
        if stop.is_const() and stop.const > size and start.is_const():
            stop = Aff(size)
        length = stop - start
        if not length.is_const():
            raise error(f"the size of a {what} slice must not depend on a loop variable "
                        f"({key.start!r}:{key.stop!r}); use nl.ds(start, size)")
        return start, max(0, -(-length.const // step)), step, True, None
    if isinstance(key, (int, Aff)) and not isinstance(key, bool):
        return Aff.of(key), 1, 1, False, None
    if hasattr(key, "__index__") and not isinstance(key, bool):
        return Aff(int(key)), 1, 1, False, None
    raise error(f"cannot index a {what} with {key!r}")


def expand_keys(key: Any, rank: int) -> tuple[Any, ...]:
    keys = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in keys):
        i = next(j for j, k in enumerate(keys) if k is Ellipsis)
        keys = keys[:i] + (slice(None),) * (rank - len(keys) + 1) + keys[i + 1:]
    if len(keys) > rank:
        raise error(f"{len(keys)} indices into a tensor of rank {rank}")
    return keys + (slice(None),) * (rank - len(keys))


def index_hbm(view: HbmView, key: Any, mask: Mask | None = None) -> HbmView | None:
    """view[key] with NKI's indices; None when a mask leaves nothing."""
    keys = expand_keys(key, len(view.dims))
    offset = view.offset
    dims: list[tuple[int, int, int | None, int]] = []  # stride, count, grid axis, position
    for i, ((stride, size), k) in enumerate(zip(view.dims, keys)):
        if isinstance(k, Arange):
            start, parts = k.parts(mask)
            if any(cnt == 0 for _, _, cnt, _ in parts):
                return None
            lo, hi = start.bounds()
            top = hi + sum(c * (cnt - 1) for _, c, cnt, _ in parts)
            if lo < 0 or top >= size:
                if mask is None:  # a mask given to the load/store may bring it inside
                    return Pending(view, key, f"index grid of dim {i} is outside its size "
                                   f"{size} (up to {top}) and no mask= keeps it inside")
                raise error(f"index grid of dim {i} is outside its size {size} (up to {top}) "
                            "after its mask")
            offset = offset + start * stride
            for axis, c, cnt, _ in parts:
                dims.append((stride * c, cnt, axis, i))
            continue
        start, count, step, keep, axis = key_parts(k, size, mask, "HBM tensor")
        if count == 0:
            return None
        lo, hi = start.bounds()
        if lo < 0 or hi + (count - 1) * step >= size:
            raise error(f"index {k!r} of dim {i} is outside its size {size} "
                        f"(start in [{lo}, {hi}], {count} elements)")
        offset = offset + start * stride
        if keep:
            dims.append((stride * step, count, axis, i))
    if any(d[2] is not None for d in dims):
        # grid indices: the result's dims follow the grids' axes (partitions first)
        dims.sort(key=lambda d: (d[2] if d[2] is not None else 1 << 20, d[3]))
    result = HbmView(view.tensor, offset, [(s, n) for s, n, _, _ in dims])
    result.nki_src = (view, key)  # type: ignore[attr-defined]  (a mask re-indexes it)
    return result


def as_hbm(value: Any, what: str, mask: Mask | None = None) -> HbmView:
    from ..kernels import ir

    if isinstance(value, ir.HbmTensor):
        return HbmView(value)
    if isinstance(value, MaskedHbm):
        return value.view
    if isinstance(value, Pending):
        if mask is None:
            raise error(value.message)
        parent, key = value.nki_src
        return index_hbm(parent, key, mask)  # type: ignore[return-value]
    if isinstance(value, HbmView):
        if mask is not None and hasattr(value, "nki_src"):
            parent, key = value.nki_src
            return index_hbm(parent, key, mask)  # type: ignore[return-value]
        return value
    raise error(f"{what} must be an HBM tensor (a kernel argument or output), got "
                f"{type(value).__name__}")


class Pending:
    """An HBM view whose grid indices reach outside the tensor: valid only under a mask
    (given to nl.load / nl.store); anything else reports the error."""

    def __init__(self, view: HbmView, key: Any, message: str) -> None:
        self.nki_src = (view, key)
        self.message = message

    def __getattr__(self, name: str) -> Any:
        raise error(self.message)


class MaskedHbm:
    """Placeholder for an HBM view a mask left empty (its load/store is skipped)."""

    def __init__(self, view: HbmView) -> None:
        self.view = view


def as_tile(value: Any, what: str, mask: Mask | None = None) -> Any:
    from ..kernels import ir
    from ._tiles import NTile

    if isinstance(value, PendingTile):
        if mask is None:
            raise error(value.message, value.source)
        parent, key = value.nki_src
        return parent._index(key, mask)
    if isinstance(value, NTile):
        if mask is not None and hasattr(value, "nki_src"):  # a grid view: the mask narrows it
            parent, key = value.nki_src
            return parent._index(key, mask)
        return value.masked(mask) if mask is not None else value
    if isinstance(value, (ir.HbmTensor, HbmView)):
        raise error(f"{what} is an HBM tensor; engines read SBUF/PSUM tiles: load it first")
    from ..kernels.values import TileView

    if isinstance(value, TileView):
        return NTile.wrap(value, None)
    raise error(f"{what} must be a tile, got {type(value).__name__}")


class PendingTile:
    """A tile view whose grid indices reach outside the tile: valid only under a mask given to
    the instruction that reads it; anything else reports the error."""

    def __init__(self, tile: Any, key: Any, message: str, source: Any) -> None:
        self.nki_src = (tile, key)
        self.message = message
        self.source = source

    def __getattr__(self, name: str) -> Any:
        raise error(self.message, self.source)
