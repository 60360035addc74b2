"""Tracing a kernel: running its Python function once on symbolic HBM tensors and tiles,
recording loops and tile ops (ir.py), and checking what a kernel author gets wrong."""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import ir
from .ir import Aff, KernelError, Source, Tile, TileRegion, caller_source

class _TracerStack(threading.local):
    """The kernels being traced, per thread: kernels traced from several threads at once each
    record into their own tracer (one module-global stack mixed their ops)."""

    def __init__(self) -> None:
        self.items: list[Tracer] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def __getitem__(self, index: int) -> Tracer:
        return self.items[index]

    def append(self, tracer: Tracer) -> None:
        self.items.append(tracer)

    def pop(self) -> Tracer:
        return self.items.pop()


_current = _TracerStack()


def tracer() -> Tracer:
    if not _current:
        raise KernelError(
            f"{caller_source()}: neuronsim.kernels.language / isa functions are called "
            "inside a kernel being traced (a function decorated with @neuronsim.kernels.jit)"
        )
    return _current[-1]


def error(message: str, source: Source | None = None) -> KernelError:
    source = source or caller_source()
    t = _current[-1] if _current else None
    where = f"kernel '{t.name}'" if t else "kernel"
    code = f": `{source.code}`" if source.code else ""
    return KernelError(f"{source} in {where}{code}: {message}")


@dataclass
class Traced:
    """A traced kernel: its ntile IR and the shapes and dtypes of its outputs."""

    name: str
    ir: str
    outputs: list[tuple[tuple[int, ...], torch.dtype]]
    source: Source
    scratch: int = 0  # the last `scratch` outputs are dropped by the caller (HBM scratch and
    # the arguments the kernel writes but does not return)
    # (argument tensor index, output index): an argument the kernel writes, its final value
    inplace: list[tuple[int, int]] = field(default_factory=list)

    @property
    def returned(self) -> list[tuple[tuple[int, ...], torch.dtype]]:
        """The outputs the kernel returns (without its scratch)."""
        return self.outputs[:len(self.outputs) - self.scratch]


class Tracer:
    def __init__(self, name: str, capacity_sbuf: int, capacity_psum: int) -> None:
        self.name = name
        self.root = ir.Scope(None, None)
        self.scope = self.root
        self.inputs: list[ir.HbmTensor] = []
        self.outputs: list[ir.HbmTensor] = []
        self.constants: list[ir.ConstantTensor] = []
        self.constant_tiles: dict[Any, Tile] = {}
        self.prologue: list[ir.Op] = []
        # the arguments the kernel writes: (argument index, the tensor they are now)
        self.inplace: list[tuple[int, ir.HbmTensor]] = []
        self.capacity = {"sbuf": capacity_sbuf, "psum": capacity_psum}
        # The newest op and the fresh tile it made, while nothing else has happened since:
        # `dst[...] = op(...)` and `acc += nc_matmul(...)` redirect it.
        self.fresh: tuple[ir.Op, Tile] | None = None
        # neuronsim.nki: "nki" (NKI 0.2+: dst-first ISA calls, Python-semantics loops, 1-D HBM
        # views on the partitions), "legacy" (neuronxcc.nki: return-value ISA calls, symbolic
        # affine_range loops, index grids) or None (neuronsim.kernels).
        self.dialect: str | None = None
        # SPMD launch grids (kernel[gx, gy]): the program ids of the instance being traced;
        # instances after the first get the HBM outputs the first one made, in order.
        self.program_ids: tuple[int, ...] = ()
        self.grid: tuple[int, ...] = ()
        self.output_cursor: int | None = None

    # -- scopes and loops ------------------------------------------------------------------

    def record(self, op: ir.Op) -> ir.Op:
        self.scope.ops.append(op)
        self.fresh = None
        return op

    def new_tile(self, partitions: int, free: int, dtype: torch.dtype, space: str,
                 source: Source, at_root: bool = False) -> Tile:
        if partitions > ir.MAX_PARTITIONS:
            raise error(f"a tile of {partitions} partitions: at most {ir.MAX_PARTITIONS} exist "
                        "(the first dimension of an SBUF/PSUM tile is the partition dimension)",
                        source)
        if partitions < 1 or free < 1:
            raise error(f"a tile needs positive sizes, got [{partitions}, {free}]", source)
        ir.mlir_type(dtype)
        scope = self.root if at_root else self.scope
        tile = Tile(partitions, free, dtype, space, scope, source)
        # (a PSUM tile may span banks, as NKI's: each matmul's result stays in one bank, which
        # ops.matmul checks where a result goes)
        # (a single tile larger than the memory; what is live together is checked by the
        # compiler's tile allocation, with liveness, whose error names this line too)
        if tile.bytes_per_partition() > self.capacity[space]:
            raise error(f"{space.upper()} over capacity: a tile of "
                        f"{tile.bytes_per_partition()} bytes per partition, more than the "
                        f"{self.capacity[space]} of one partition", source)
        scope.tiles[tile.id] = tile
        alloc = ir.AllocOp(source, tile)
        if at_root:
            self.prologue.append(alloc)
        else:
            self.record(alloc)
        return tile

    # -- checks ----------------------------------------------------------------------------

    def check_visible(self, region: TileRegion, source: Source) -> None:
        if not region.tile.scope.encloses(self.scope):
            raise error(f"the tile allocated at line {region.tile.source.line} lives in a loop "
                        "body that has ended; allocate it before the loop to keep it", source)
        lo, hi = region.c0.bounds()
        if lo < 0 or hi + region.width > region.tile.free:
            raise error(f"columns [{lo}, {hi + region.width}) are outside the tile's "
                        f"{region.tile.free}", source)

    def read(self, region: TileRegion, source: Source) -> None:
        self.check_visible(region, source)
        if not region.tile.written:
            raise error(f"reads the {region.tile.space.upper()} tile allocated at line "
                        f"{region.tile.source.line} before anything writes it", source)

    def write(self, region: TileRegion, source: Source) -> None:
        self.check_visible(region, source)
        region.tile.written = True

    # -- constants -------------------------------------------------------------------------

    def constant_tile(self, key: Any, value: torch.Tensor, source: Source) -> Tile:
        """A tile holding `value` [P, F], loaded once at the kernel's start."""
        cached = self.constant_tiles.get(key)
        if cached is not None:
            return cached
        value = value.contiguous()
        const = ir.ConstantTensor(f"c{len(self.constants)}", value)
        self.constants.append(const)
        p, f = value.shape
        tile = self.new_tile(p, f, value.dtype, "sbuf", source, at_root=True)
        # In up to four transfers of consecutive partitions: they run on as many DMA queues
        # at once (one queue moves 32 KiB in about 1.4 us; constants are needed first).
        step = max(32, -(-p // 4))
        for p0 in range(0, p, step):
            n = min(step, p - p0)
            self.prologue.append(ir.DmaOp(source, const, [(f, n), (1, f)],
                                          TileRegion(tile, p0, n, Aff(0), f), p0 * f))
        tile.written = True
        self.constant_tiles[key] = tile
        return tile

    def fill(self, region: TileRegion, value: float, source: Source) -> None:
        """Writes `value` into a region: a broadcast DMA from a one-element constant."""
        key = ("fill", region.tile.dtype, float(value))
        const = next((c for c in self.constants if getattr(c, "key", None) == key), None)
        if const is None:
            const = ir.ConstantTensor(f"c{len(self.constants)}",
                                      # rounded as a store to the tile's dtype (a value
                                      # just past float32's range, such as -3.4028235e38,
                                      # rounds to its largest finite value)
                                      torch.tensor([float(value)], dtype=torch.float64).to(
                                          region.tile.dtype))
            const.key = key  # type: ignore[attr-defined]
            self.constants.append(const)
        self.write(region, source)
        step = max(32, -(-region.np // 4))  # in up to four transfers, as constant tiles
        for p0 in range(0, region.np, step):
            n = min(step, region.np - p0)
            part = TileRegion(region.tile, region.p0 + p0, n, region.c0, region.width)
            self.record(ir.DmaOp(source, const, [(0, n), (0, region.width)], part))

    # -- HBM writes --------------------------------------------------------------------------

    def writable(self, tensor: ir.HbmTensor, source: Source) -> None:
        """Checks that the kernel may write `tensor`: an output it made, or an argument (NKI
        kernels write results into tensors they are given, as rope_hf's q_out). An argument
        written becomes an output whose first value is the argument's, copied by a DMA at the
        kernel's start (the hardware writes the caller's buffer in place: that copy is time
        the device does not spend); the caller gets the final value back in the argument."""
        if tensor.is_output:
            return
        index = next((i for i, t in enumerate(self.inputs) if t is tensor), None)
        if index is None:
            raise error("kernels write only their arguments and the HBM tensors they make with "
                        "nl.ndarray(..., buffer=nl.shared_hbm) (constants are read-only)",
                        source)
        from .values import HbmView

        original = ir.HbmTensor(tensor.name, tensor.shape, tensor.dtype, is_output=False)
        original.written = True
        self.inputs[index] = original
        tensor.name, tensor.is_output, tensor.source = f"inout{index}", True, source
        whole_src, whole_dst = HbmView(original), HbmView(tensor)
        self.prologue.append(ir.DmaOp(
            source, ir.HbmAccess(original, whole_src.offset, list(whole_src.dims)), None,
            ir.HbmAccess(tensor, whole_dst.offset, list(whole_dst.dims))))
        self.inplace.append((index, tensor))

    # -- the whole kernel ------------------------------------------------------------------

    def finish(self, returned: Any, source: Source) -> Traced:
        if self.scope is not self.root:
            raise error("the kernel returned from inside a loop (or a loop was left with "
                        "break); kernel loops run to their end", source)
        results = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        results = [_returned_tensor(r) for r in results]
        for r in results:
            if not isinstance(r, ir.HbmTensor) or not r.is_output:
                raise error("a kernel returns the HBM tensors it made with nl.ndarray(..., "
                            f"buffer=nl.shared_hbm), got {type(r).__name__}", source)
        made = [t for t in self.outputs]
        scratch = [t for t in made if getattr(t, "scratch", False) and t not in results]
        for t in made:
            if t in scratch:
                continue
            if t not in results:
                raise error(f"the HBM tensor made at line {t.source.line} is not returned",
                            t.source)
            if not t.written:
                raise error(f"the returned HBM tensor made at line {t.source.line} is never "
                            "written (nl.store into it)", t.source)
        if len(set(map(id, results))) != len(results):
            raise error("the kernel returns the same tensor twice", source)
        self.root.ops[:0] = self.prologue
        symbol = re.sub(r"[^A-Za-z0-9_]", "_", self.name)
        # dropped by the caller: the written arguments not returned, scratch HBM
        hidden = [t for _, t in self.inplace if t not in results] + scratch
        outputs = results + hidden
        inplace = [(i, next(k for k, o in enumerate(outputs) if o is t)) for i, t in self.inplace]
        text = ir.Emitter(symbol).emit(self.root, self.inputs, outputs, self.constants, source)
        return Traced(symbol, text, [(r.shape, r.dtype) for r in outputs], source, len(hidden),
                      inplace)


def _whole_view(value: Any) -> bool:
    from .values import HbmView

    return isinstance(value, HbmView) and value.offset.is_const() and value.offset.const == 0 \
        and value.shape == value.tensor.shape


def _returned_tensor(value: Any) -> Any:
    """The output tensor a returned value is: the tensor itself, a view of all of it, or a
    reshape of all of it (`out.reshape(shape)`: the output is returned in that shape, its
    elements in the same order)."""
    from .values import HbmView

    if _whole_view(value):
        return value.tensor
    if isinstance(value, HbmView) and value.offset.is_const() and value.offset.const == 0 \
            and value.tensor.is_output and math.prod(value.shape) == math.prod(value.tensor.shape):
        expected = 1
        for stride, size in reversed(value.dims):
            if size > 1 and stride != expected:
                return value
            expected *= size
        value.tensor.shape = tuple(value.shape)  # same buffer, the returned shape
        return value.tensor
    return value


def trace(fn: Callable[..., Any], name: str, args: list[Any], kwargs: dict[str, Any],
          target: str = "trn2", dialect: str | None = None,
          grid: tuple[int, ...] = (), setup: Callable[[Tracer], None] | None = None
          ) -> Traced:
    """Runs `fn` on symbolic HBM tensors in place of the tensors of `args`."""
    from .. import native

    from .values import HbmView

    sbuf, psum = _capacities(native, target)
    t = Tracer(name, sbuf, psum)
    t.dialect = dialect
    t.grid = tuple(grid)
    t.target = target  # type: ignore[attr-defined]
    if setup is not None:
        setup(t)
    symbolic = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            h = ir.HbmTensor(f"in{i}", tuple(a.shape), a.dtype, is_output=False)
            h.written = True
            t.inputs.append(h)
            symbolic.append(HbmView(h))
        else:
            symbolic.append(a)
    import inspect

    try:
        lines, first = inspect.getsourcelines(fn)
        source = Source(inspect.getsourcefile(fn) or "<kernel>", first)
    except (OSError, TypeError):
        source = Source("<kernel>", 0)
    _current.append(t)
    try:
        if not t.grid:
            returned = fn(*symbolic, **kwargs)
        else:
            import itertools

            returned = None
            for n, ids in enumerate(itertools.product(*(range(g) for g in t.grid))):
                t.program_ids = ids
                t.output_cursor = None if n == 0 else 0
                r = fn(*symbolic, **kwargs)
                if n == 0:
                    returned = r
        return t.finish(returned, source)
    finally:
        _current.pop()


def _capacities(native: Any, target: str) -> tuple[int, int]:
    """SBUF and PSUM bytes per partition of the target (runtime/program/Target.cpp)."""
    facts = native.lib().target_facts(target)
    return int(facts["sbuf_bytes_per_partition"]), int(facts["psum_bytes_per_partition"])
